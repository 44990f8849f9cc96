"""evaluation/: metrics equal pytrec_eval to 1e-9; the funnel matches hand-computed values."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from inspire_build.evaluation import funnel, metrics
from inspire_build.evaluation.score import score

DOCS = [f"d{i}" for i in range(30)]


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 6))):
        judged = draw(
            st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=15)
        )
        qrels[f"q{q}"] = judged
        run[f"q{q}"] = draw(st.lists(st.sampled_from(DOCS), max_size=25, unique=True))
    return qrels, run


def pytrec(
    qrels: dict[str, dict[str, int]], run: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    scored = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in run.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recip_rank"})
    result: dict[str, dict[str, float]] = evaluator.evaluate(scored)
    return result


@settings(max_examples=300, deadline=None)
@given(collections())
def test_metrics_equal_pytrec_eval(
    data: tuple[dict[str, dict[str, int]], dict[str, list[str]]],
) -> None:
    qrels, run = data
    reference = pytrec(qrels, run)
    for q, judged in qrels.items():
        gains = metrics.linear_gains(judged)
        ranking = run[q]
        expected = reference.get(q, {"ndcg_cut_10": 0.0, "recall_10": 0.0, "recip_rank": 0.0})
        assert abs(metrics.ndcg_at_k(ranking, gains) - expected["ndcg_cut_10"]) < 1e-9
        assert abs(metrics.recall_at_k(ranking, gains) - expected["recall_10"]) < 1e-9
        assert abs(metrics.reciprocal_rank(ranking, gains) - expected["recip_rank"]) < 1e-9


def test_hand_computed_metrics() -> None:
    gains = {"a": 3.0, "b": 2.0, "c": 1.0}
    ranking = ["x", "b", "a"]
    dcg = 2 / math.log2(3) + 3 / math.log2(4)
    ideal = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert metrics.ndcg_at_k(ranking, gains) == pytest.approx(dcg / ideal, abs=1e-12)
    assert metrics.recall_at_k(ranking, gains) == pytest.approx(2 / 3)
    assert metrics.reciprocal_rank(ranking, gains) == 0.5
    assert metrics.any_hit_at_k(ranking, gains) == 1.0
    assert metrics.at_least_hits(ranking, gains, 3) == 0.0
    assert metrics.at_least_hits(ranking, gains, 5) is None  # only 3 antecedents: not counted
    assert metrics.exponential_gains({"a": 3, "b": 1, "z": 0}) == {"a": 7.0, "b": 1.0}
    assert metrics.dedupe(["a", "b", "a"]) == ["a", "b"]
    assert metrics.ndcg_at_k([], gains) == 0.0 and metrics.ndcg_at_k(["a"], {}) == 0.0


def test_hand_computed_funnel() -> None:
    # Two instances. i1: G = {a:3, b:1}; exposed a, b; submitted [b] -> selected gain from b only.
    # i2: G = {c:2}; nothing relevant exposed; submitted [] (missing submission).
    qrels = {"i1": {"a": 3, "b": 1}, "i2": {"c": 2}}
    run = {"i1": ["b"]}
    paths = {"i1": funnel.Trajectory((("x", "a"), ("b",))), "i2": funnel.Trajectory((("y",),))}
    result = score(qrels, run, paths, samples=50)
    idcg1 = 3 + 1 / math.log2(3)
    exposed1, selected1 = 1.0, 1 / idcg1  # b alone, put first in ideal order: gain 1 at rank 1
    final1 = (1 / math.log2(2)) / idcg1
    agg = result.aggregate
    assert agg["exposed_gain"] == pytest.approx((exposed1 + 0) / 2)
    assert agg["selected_gain"] == pytest.approx((selected1 + 0) / 2)
    assert agg["ndcg@10"] == pytest.approx((final1 + 0) / 2)
    assert agg["no_relevant_exposed"] == 0.5
    assert agg["gain_kept"] == pytest.approx(1 / 4)  # raw: kept b (1) of exposed a+b (4)
    assert agg["rank_quality"] == pytest.approx(agg["ndcg@10"] / agg["selected_gain"])
    assert agg["total_calls"] == 1.5 and agg["unexposed_submissions"] == 0
    assert (
        result.curve is not None
        and result.curve[0.0] == 0.0
        and result.curve[1.0] == agg["exposed_gain"]
    )
    assert result.curve[0.5] == pytest.approx((oracle := (3 / idcg1)) / 2)  # first step: a only
    assert oracle < 1


def test_rank_quality_reproduces_the_papers_table_3() -> None:
    # Table 3, Claude Opus 5: final nDCG@10 0.284, selected gain 0.386 -> rank quality 0.735.
    # The table's means are rounded to 3 places, so the ratio of the rounded means (0.7358)
    # agrees with the paper's 0.735 to within that rounding.
    rows = [funnel.FunnelRow(0.5, 0.386, 0.284, 0.0, 1.0, 1.0, 3, 0)]
    assert abs(funnel.aggregate(rows)["rank_quality"] - 0.735) < 0.001


def test_cli_with_trec_files_and_a_malformed_line(tmp_path: Path) -> None:
    (tmp_path / "q.trec").write_text("i1 0 arXiv:2301.00001v2 3\ni1 0 W12 1\ni2 0 W99 2\n")
    (tmp_path / "r.jsonl").write_text(
        json.dumps(
            {
                "instance_id": "i1",
                "ranking": [
                    "https://arxiv.org/abs/2301.00001",
                    "openalex:W12",
                    "W12",
                    "unknown-thing",
                ],
            }
        )
        + "\n"
    )
    command = [
        sys.executable,
        "-m",
        "inspire_build",
        "eval",
        "--qrels",
        str(tmp_path / "q.trec"),
        "--run",
        str(tmp_path / "r.jsonl"),
        "--json",
        "--bootstrap",
        "50",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["per_instance"]["i1"]["ndcg@10"] == pytest.approx(
        1.0
    )  # IDs normalised, dupe dropped
    assert data["per_instance"]["i2"]["ndcg@10"] == 0.0  # no submission scores 0
    assert data["aggregate"]["mrr"] == pytest.approx(0.5)
    (tmp_path / "bad.jsonl").write_text('{"instance_id": "i1", "ranking": []}\n{"oops": 1}\n')
    bad = subprocess.run(
        [*command[:7], str(tmp_path / "bad.jsonl")], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "bad.jsonl:2: malformed run line" in bad.stderr


def test_cli_against_a_split_writes_eval_runs_and_scores(tmp_path: Path) -> None:
    from inspire_build import warehouse

    path = tmp_path / "w.duckdb"
    con = warehouse.connect(path)
    warehouse.migrate(con)
    con.execute(
        "INSERT INTO split_versions (version_id, split, label, config_hash, code_version, "
        "prompt_hashes, models, counts, created_at, status, cutoff_jitter_days) "
        "VALUES ('eval-x', 'eval', NULL, 'h', '0', '{}', '{}', "
        "'{}', now(), 'complete', 30)"
    )
    con.execute(
        "INSERT INTO qrels VALUES ('eval-x', 'i1', 'arxiv:2301.00001', 3, 'problem'), "
        "('eval-x', 'i1', 'openalex:W7', 1, 'background')"
    )
    con.execute("INSERT INTO paper_ids VALUES ('doi', '10.1000/seven', 'openalex:W7', 'openalex')")
    con.close()
    (tmp_path / "r.jsonl").write_text(
        json.dumps({"instance_id": "i1", "ranking": ["doi:10.1000/SEVEN"]}) + "\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspire_build",
            "eval",
            "--split",
            "eval",
            "--run",
            str(tmp_path / "r.jsonl"),
            "--warehouse",
            str(path),
            "--bootstrap",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "recall@10" in result.stdout and "0.500" in result.stdout  # the DOI found W7
    con = warehouse.connect(path, read_only=True)
    recall = con.execute(
        "SELECT value, ci_low IS NOT NULL FROM eval_scores "
        "WHERE instance_id = '*' AND metric = 'recall@10'"
    ).fetchone()
    runs = con.execute("SELECT version_id, n_instances FROM eval_runs").fetchall()
    con.close()
    assert recall == (0.5, True) and runs == [("eval-x", 1)]


def test_plots_render_as_png_and_svg(tmp_path: Path) -> None:
    qrels = {f"i{n}": {f"d{n}": 3, f"e{n}": 2, f"f{n}": 1} for n in range(20)}
    run = {f"i{n}": [f"d{n}", "x", f"e{n}"][: n % 4] for n in range(20)}
    paths = {i: funnel.Trajectory(((f"f{i[1:]}",), tuple(r))) for i, r in run.items()}
    (tmp_path / "q.trec").write_text(
        "".join(f"{i} 0 {d} {t}\n" for i, ds in qrels.items() for d, t in ds.items())
    )
    (tmp_path / "r.jsonl").write_text(
        "".join(json.dumps({"instance_id": i, "ranking": r}) + "\n" for i, r in run.items())
    )
    (tmp_path / "t.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": i,
                    "steps": [{"tool": "search", "exposed": list(step)} for step in p.steps],
                }
            )
            + "\n"
            for i, p in paths.items()
        )
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspire_build",
            "eval",
            "--qrels",
            str(tmp_path / "q.trec"),
            "--run",
            str(tmp_path / "r.jsonl"),
            "--trajectories",
            str(tmp_path / "t.jsonl"),
            "--plots",
            str(tmp_path / "plots"),
            "--bootstrap",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "rank_quality" in result.stdout and "oracle exposed gain" in result.stdout
    for name in ("recovered_top10", "funnel", "oracle_curve"):
        png, svg = tmp_path / "plots" / f"{name}.png", tmp_path / "plots" / f"{name}.svg"
        assert png.stat().st_size > 5000 and svg.stat().st_size > 5000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = (
            int.from_bytes(png.read_bytes()[16:20]),
            int.from_bytes(png.read_bytes()[20:24]),
        )
        assert (width, height) == (640, 400)  # 6.4 x 4.0 inches at 100 dpi


def test_compare_gives_paired_differences(tmp_path: Path) -> None:
    (tmp_path / "q.trec").write_text("i1 0 a 3\ni1 0 b 1\ni2 0 c 2\n")
    (tmp_path / "a.jsonl").write_text(
        '{"instance_id":"i1","ranking":["a"]}\n{"instance_id":"i2","ranking":["c"]}\n'
    )
    (tmp_path / "b.jsonl").write_text('{"instance_id":"i1","ranking":["x","b"]}\n')
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspire_build",
            "eval",
            "--qrels",
            str(tmp_path / "q.trec"),
            "--bootstrap",
            "200",
            "compare",
            str(tmp_path / "a.jsonl"),
            str(tmp_path / "b.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    mrr = next(line for line in result.stdout.splitlines() if line.startswith("mrr"))
    assert mrr.split()[1] == "+0.750"  # i1: 1 - 1/2, i2: 1 - 0; mean 0.75
    assert "exposed_gain" not in result.stdout  # no trajectories, no funnel

    (tmp_path / "ta.jsonl").write_text(
        '{"instance_id":"i1","steps":[{"tool":"search","exposed":["a","b"]}]}\n'
        '{"instance_id":"i2","steps":[{"tool":"search","exposed":["c"]}]}\n'
    )
    (tmp_path / "tb.jsonl").write_text(
        '{"instance_id":"i1","steps":[{"tool":"search","exposed":["x"]}]}\n'
    )
    funnel = subprocess.run(
        [
            *result.args,
            "--trajectories-a",
            str(tmp_path / "ta.jsonl"),
            "--trajectories-b",
            str(tmp_path / "tb.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert funnel.returncode == 0, funnel.stderr
    exposed = next(line for line in funnel.stdout.splitlines() if line.startswith("exposed_gain"))
    # i1: A exposes a(3), b(1) -> 1; B exposes x and submits b -> 1 / (3 + 1/log2 3) = 0.2754.
    # i2: A exposes c -> 1; B has no trajectory and no submission -> 0. Mean of 0.7246 and 1.
    assert exposed.split()[1] == "+0.862"
    one_sided = subprocess.run(
        [*result.args, "--trajectories-a", str(tmp_path / "ta.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert one_sided.returncode == 2 and "both runs' trajectories" in one_sided.stderr
