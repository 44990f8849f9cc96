"""`inspire eval` as a user runs it: a bad input is one `error:` line and exit 2, never a
traceback and never a score; unknown instance IDs are refused or reported; --json is complete;
scores from TREC files and from a split, and `inspire eval compare`'s paired differences."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspire_build import warehouse
from tests.conftest import new_warehouse, run_inspire

QRELS = "i1 0 a 3\ni1 0 b 1\ni2 0 c 2\n"
RUN = '{"instance_id": "i1", "ranking": ["a"]}\n{"instance_id": "i2", "ranking": ["x", "c"]}\n'
TRAJECTORIES = '{"instance_id": "i1", "steps": [{"tool": "search", "exposed": ["a"]}]}\n'


def inspire(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args, env={**os.environ, **(env or {})}, timeout=120)


def one_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exit 2 and exactly one `error:` line holding each fragment."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: "), line
    for fragment in fragments:
        assert fragment in line, line
    return line


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def with_qrels(tmp_path: Path, run: Path, *extra: str | Path) -> subprocess.CompletedProcess[str]:
    qrels = write(tmp_path / "q.trec", QRELS)
    return inspire("eval", "--qrels", qrels, "--run", run, "--bootstrap", "20", *extra)


@pytest.fixture
def split_warehouse(tmp_path: Path) -> Path:
    """A warehouse holding version eval-x of split eval, with instances i1 and i2."""
    path = tmp_path / "w.duckdb"
    con = new_warehouse(path)
    con.execute(
        "INSERT INTO split_versions (version_id, split, config_hash, code_version, prompt_hashes,"
        " models, counts, created_at, status) "
        "VALUES ('eval-x', 'eval', 'h', '0', '{}', '{}', '{}', now(), 'complete')"
    )
    con.execute(
        "INSERT INTO qrels VALUES ('eval-x', 'i1', 'a', 3, 'problem'), "
        "('eval-x', 'i1', 'b', 1, 'background'), ('eval-x', 'i2', 'c', 2, 'method')"
    )
    con.close()
    return path


def against_split(warehouse_path: Path, run: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return inspire(
        "eval", "--split", "eval", "--version", "eval-x", "--run", run,
        "--warehouse", warehouse_path, "--bootstrap", "20", *extra,
    )  # fmt: skip


def eval_runs(path: Path) -> int:
    con = warehouse.connect(path, read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM eval_runs").fetchone()
    finally:
        con.close()
    return int(row[0]) if row else 0


# --- unknown instance IDs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    ['{"instance_id": "made-up", "ranking": ["a"]}\n', ""],
    ids=["another-version", "empty"],
)
def test_a_run_with_no_instance_of_the_version_is_refused(
    split_warehouse: Path, tmp_path: Path, content: str
) -> None:
    result = against_split(split_warehouse, write(tmp_path / "r.jsonl", content))
    if content:
        one_error(result, "none of the 1 instance ID(s) in run", "2 instance(s) of version eval-x")
    else:
        one_error(result, "r.jsonl holds no instance", "version eval-x")
    assert eval_runs(split_warehouse) == 0  # nothing written


def test_some_unknown_instances_are_reported_and_the_version_is_printed(
    split_warehouse: Path, tmp_path: Path
) -> None:
    run = write(tmp_path / "r.jsonl", RUN + '{"instance_id": "zz", "ranking": ["a"]}\n')
    text = against_split(split_warehouse, run)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("scored against version eval-x: 2 instance(s)")
    assert text.stderr.strip() == (
        "warning: 1 instance ID(s) in the run not in version eval-x, not scored: zz"
    )
    shown = json.loads(against_split(split_warehouse, run, "--json").stdout)
    assert shown["version"] == "eval-x" and shown["unknown_instance_ids"] == 1
    assert shown["instances"] == 2 and shown["unknown_paper_ids"] == 1  # "x"


def test_json_has_intervals_and_unknown_counts(tmp_path: Path) -> None:
    run = write(tmp_path / "r.jsonl", RUN + '{"instance_id": "zz", "ranking": []}\n')
    trajectories = write(tmp_path / "t.jsonl", TRAJECTORIES + TRAJECTORIES.replace("i1", "yy"))
    result = with_qrels(tmp_path, run, "--json", "--trajectories", trajectories)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["version"] is None and shown["qrels_file"].endswith("q.trec")
    assert shown["unknown_instance_ids"] == 1 and shown["unknown_trajectory_instance_ids"] == 1
    low, high = shown["intervals"]["ndcg@10"]
    assert low <= shown["aggregate"]["ndcg@10"] <= high
    assert {"exposed_gain", "gain_kept", "rank_quality"} <= set(shown["intervals"])
    assert len(result.stderr.strip().splitlines()) == 2  # one warning per file


@pytest.mark.parametrize("name", ["", "  ", "two\nlines", "ansi\x1b[31m"])
def test_a_run_name_that_is_no_visible_line_is_refused(tmp_path: Path, name: str) -> None:
    run = write(tmp_path / "r.jsonl", RUN)
    one_error(with_qrels(tmp_path, run, "--name", name), "a run's name is visible text")
    report = inspire("eval", "--qrels", write(tmp_path / "q.trec", QRELS), "report", "--run", run)
    assert report.returncode == 0, report.stderr  # the file's stem names it
    named = ["--run", run, "--name", name]
    one_error(inspire("eval", "--qrels", tmp_path / "q.trec", "report", *named), "visible text")


def test_an_instance_with_no_line_is_scored_0_and_said(tmp_path: Path) -> None:
    run = write(tmp_path / "r.jsonl", RUN.splitlines()[0] + "\n")  # i1 only
    result = with_qrels(tmp_path, run, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["missing_instance_ids"] == 1
    assert "warning: 1 of the 2 instance(s) of qrels file" in result.stderr
    assert "have no line in the run: each scores 0: i2" in result.stderr
    # hits>=5: no instance has five antecedents; null, not a mean of nothing shown as 0
    assert json.loads(result.stdout)["aggregate"]["hits>=5"] is None


# --- duplicates, bad values, encodings and odd files: one line, exit 2 -------------------------


BAD_RUNS: dict[str, tuple[str | bytes, tuple[str, ...]]] = {
    "duplicate-instance": (RUN + RUN.splitlines()[0], (":3: instance 'i1' again", "line 1")),
    "nan-score": (
        "i1 Q0 a 1 1.0 t\ni1 Q0 b 2 nan t\n",
        (":2: the score 'nan' is not a finite number",),
    ),
    "q0-column": ("i1 XX a 1 1.0 t\n", (":1: the second column is 'XX', not 'Q0'",)),
    "missing-tag": ("i1 Q0 a 1 1.0\n", (":1: no run tag",)),
    "two-tags": (
        "i1 Q0 a 1 2.0 t\ni1 Q0 b 2 1.0 other\n",
        (":2: run tag 'other', but line 1 is 't'",),
    ),
    "underscore": ("i1 Q0 a 1 1_000 t\n", (":1: the score '1_000' is not a number",)),
    "trec-in-jsonl": (RUN + "i1 Q0 a 1 1.0 t\n", (":3: not a JSON object, but line 1 is",)),
    "ranking-string": ('{"instance_id": "i1", "ranking": "a"}\n', ('"ranking" is not a list',)),
    "latin-1": ('{"instance_id": "i1", "ranking": ["café"]}\n'.encode("latin-1"), ("not UTF-8",)),
    "utf-16": (RUN.encode("utf-16"), ("UTF-16 or UTF-32 text",)),
    "binary": (bytes(range(256)) * 4, (":1: a NUL byte",)),
}


@pytest.mark.parametrize("case", BAD_RUNS, ids=list(BAD_RUNS))
def test_a_bad_run_is_one_error_line(tmp_path: Path, case: str) -> None:
    content, fragments = BAD_RUNS[case]
    one_error(with_qrels(tmp_path, write(tmp_path / "r.run", content)), "r.run", *fragments)


def test_bad_qrels_and_trajectories_are_one_error_line(tmp_path: Path) -> None:
    run = write(tmp_path / "r.jsonl", RUN)
    for qrels, fragment in (
        (QRELS + "i1 0 a 1\n", "q.trec:4: query 'i1', document 'a' graded 1, but 3 on line 1"),
        ("i1 0 a ²\n", "q.trec:1: expected 'query 0 doc relevance'"),
        (QRELS + "i3 0 d 0\ni3 0 e 0\n", "q.trec:4: query 'i3' grades no document above 0"),
    ):
        write(tmp_path / "q.trec", qrels)
        result = inspire("eval", "--qrels", tmp_path / "q.trec", "--run", run)
        one_error(result, fragment)
    for trajectories, fragment in (
        (TRAJECTORIES * 2, "t.jsonl:2: instance 'i1' again (first on line 1)"),
        (TRAJECTORIES.replace('["a"]', '"a"'), "t.jsonl:1: malformed trajectory line (step 1"),
    ):
        path = write(tmp_path / "t.jsonl", trajectories)
        one_error(with_qrels(tmp_path, run, "--trajectories", path), fragment)


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    run = write(tmp_path / "r.jsonl", b"\xef\xbb\xbf" + RUN.encode())
    result = with_qrels(tmp_path, run, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["aggregate"]["mrr"] == pytest.approx(0.75)


def test_a_directory_or_a_missing_file_is_one_error_line(tmp_path: Path) -> None:
    one_error(with_qrels(tmp_path, tmp_path), "is a directory, not a file")
    one_error(with_qrels(tmp_path, tmp_path / "nope.jsonl"), "nope.jsonl: no such file")


def test_compare_on_a_binary_file_is_one_error_line(tmp_path: Path) -> None:
    write(tmp_path / "q.trec", QRELS)
    binary = write(tmp_path / "b.run", bytes(range(256)))
    result = inspire(
        "eval", "--qrels", tmp_path / "q.trec", "compare", write(tmp_path / "a.jsonl", RUN), binary
    )
    one_error(result, "b.run:1: a NUL byte")


# --- size --------------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_before_it_is_read(tmp_path: Path) -> None:
    started = time.monotonic()
    one_error(with_qrels(tmp_path, Path("/dev/zero")), "a character device, not a regular file")
    assert time.monotonic() - started < 30


def test_the_size_cap_is_a_setting(tmp_path: Path) -> None:
    run = write(tmp_path / "r.jsonl", RUN + " " * (1 << 20))
    assert with_qrels(tmp_path, run).returncode == 0
    capped = inspire(
        "eval", "--qrels", tmp_path / "q.trec", "--run", run, env={"INSPIRE_EVAL_MAX_INPUT_MB": "1"}
    )
    one_error(capped, "r.jsonl: larger than the 1 MiB cap", "INSPIRE_EVAL_MAX_INPUT_MB")


# --- scores end to end: TREC files, a split, compare -------------------------------------------


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
                    "arxiv:1901.00009",  # a paper, no antecedent: a miss
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
    (tmp_path / "odd.jsonl").write_text('{"instance_id": "i1", "ranking": ["unknown-thing"]}\n')
    odd = subprocess.run(
        [*command[:7], str(tmp_path / "odd.jsonl")], capture_output=True, text=True, timeout=120
    )
    assert odd.returncode == 2
    assert "odd.jsonl:1: 'unknown-thing' is no paper ID of any scheme" in odd.stderr


def test_cli_against_a_split_writes_eval_runs_and_scores(tmp_path: Path) -> None:
    from inspire_build import warehouse

    path = tmp_path / "w.duckdb"
    con = new_warehouse(path)
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


def test_compare_scores_with_the_gains_given_writes_nothing_and_prints_json(
    tmp_path: Path, split_warehouse: Path
) -> None:
    """`compare` pairs the runs under `inspire eval --gains` (not always linear), writes no
    eval_runs row (it would replace a run's stored scores with fewer metrics), and --json
    prints its differences; --plots, which it cannot draw, is refused."""
    a = write(tmp_path / "a.jsonl", '{"instance_id":"i1","ranking":["x","a"]}\n')
    b = write(tmp_path / "b.jsonl", '{"instance_id":"i1","ranking":["a"]}\n')
    group = ("eval", "--split", "eval", "--warehouse", split_warehouse, "--bootstrap", "20")
    means = {}
    for gains in ("linear", "exp"):
        for run in (a, b):
            scored = inspire(*group, "--gains", gains, "--json", "--run", run)
            assert scored.returncode == 0, scored.stderr
            means[gains, run.stem] = json.loads(scored.stdout)["aggregate"]["ndcg@10"]
    linear = means["linear", "a"] - means["linear", "b"]
    exp = means["exp", "a"] - means["exp", "b"]
    assert round(linear, 3) != round(exp, 3)  # else this test could not tell them apart
    con = warehouse.connect(split_warehouse, read_only=True)
    before = con.execute("SELECT * FROM eval_scores ORDER BY ALL").fetchall()
    con.close()
    compared = inspire(*group, "--gains", "exp", "--json", "compare", a, b)
    assert compared.returncode == 0, compared.stderr
    shown = json.loads(compared.stdout)
    assert shown["gains"] == "exp" and shown["version"] == "eval-x" and shown["instances"] == 2
    assert shown["differences"]["ndcg@10"]["mean"] == pytest.approx(exp)
    con = warehouse.connect(split_warehouse, read_only=True)
    assert con.execute("SELECT * FROM eval_scores ORDER BY ALL").fetchall() == before
    con.close()
    drawn = inspire(*group, "--plots", tmp_path / "figures", "compare", a, b)
    one_error(drawn, "--plots draws a run's or a report's figures; compare draws none")
    reported = inspire(*group, "--json", "report", "--run", a)  # --json given before `report`
    assert reported.returncode == 0, reported.stderr
    assert [run["name"] for run in json.loads(reported.stdout)["runs"]] == ["a"]


def test_a_version_of_another_split_is_refused(split_warehouse: Path, tmp_path: Path) -> None:
    run = write(tmp_path / "r.jsonl", '{"instance_id":"i1","ranking":["a"]}\n')
    refused = inspire("eval", "--split", "train", "--version", "eval-x", "--warehouse",
                      split_warehouse, "--run", run)  # fmt: skip
    one_error(refused, "version 'eval-x' is of split 'eval', not 'train'")
