"""`inspire eval report`: the Table 2 and Table 3 rows of several runs, each as `inspire eval`
scores it; trajectories and names paired with runs by order, and refused when they do not pair."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inspire_build import warehouse
from inspire_build.cli import app
from inspire_build.evaluation.evaluate import evaluate
from tests.conftest import new_warehouse, run_inspire

QRELS = "i1 0 a 3\ni1 0 b 1\ni1 0 d 2\ni2 0 c 2\ni3 0 e 1\n"
RUNS = {
    "a": '{"instance_id":"i1","ranking":["a","b"]}\n{"instance_id":"i2","ranking":["c"]}\n'
    '{"instance_id":"i3","ranking":["x"]}\n',
    "b": '{"instance_id":"i1","ranking":["x","b"]}\n',
    "c": '{"instance_id":"i1","ranking":["d"]}\n{"instance_id":"i3","ranking":["e"]}\n',
}
TRAJECTORIES = {
    "a": '{"instance_id":"i1","steps":[{"tool":"search","exposed":["a","b"]}]}\n'
    '{"instance_id":"i2","steps":[{"tool":"search","exposed":["c"]}]}\n',
    "b": '{"instance_id":"i1","steps":[{"tool":"search","exposed":["x","b"]}]}\n',
    "c": '{"instance_id":"i1","steps":[{"tool":"search","exposed":["x"]},'
    '{"tool":"search","exposed":["d","e"]}]}\n'
    '{"instance_id":"i3","steps":[{"tool":"search","exposed":["e"]}]}\n',
}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "q.trec").write_text(QRELS, encoding="utf-8")
    for name in RUNS:
        (tmp_path / f"{name}.jsonl").write_text(RUNS[name], encoding="utf-8")
        (tmp_path / f"t{name}.jsonl").write_text(TRAJECTORIES[name], encoding="utf-8")
    return tmp_path


def _every_run(folder: Path, trajectories: bool = True) -> list[str]:
    args = [arg for name in RUNS for arg in ("--run", str(folder / f"{name}.jsonl"))]
    if trajectories:
        args += [arg for name in RUNS for arg in ("--trajectories", str(folder / f"t{name}.jsonl"))]
    return args


def inspire(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args, env=dict(os.environ), timeout=120)


def one_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and all(f in line for f in fragments), line


def test_help_of_the_subcommand() -> None:
    result = CliRunner().invoke(app, ["eval", "report", "--help"])
    assert result.exit_code == 0, result.output
    assert "--run" in result.output and "--trajectories" in result.output
    assert "Table 2" in result.output


def test_three_runs_print_their_rows_with_intervals(files: Path) -> None:
    argv = ["eval", "--qrels", str(files / "q.trec"), "report", *_every_run(files)]
    result = CliRunner().invoke(app, [*argv, "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"scored against qrels file {files / 'q.trec'}: 3 instance(s), 3 run(s)"
    table2 = lines[lines.index("Table 2: mean and 95% bootstrap interval") + 1 :][:4]
    table3 = lines[lines.index("Table 3: the funnel, mean and 95% bootstrap interval") + 1 :][:4]
    assert table2[0].split()[:3] == ["run", "n", "ndcg@10"]
    assert table3[0].split()[:3] == ["run", "n", "exposed_gain"]
    # hits>=5 has no instance with five antecedents here: a dash, not a mean of nothing as 0
    for rows, metrics in ((table2, 5), (table3, 7)):
        assert [row.split()[0] for row in rows[1:]] == list(RUNS)
        for row in rows[1:]:
            assert row.split()[1] == "3"  # n
            assert row.count("[") == metrics  # each metric with its interval
    assert all(row.endswith("  -") for row in table2[1:])
    for name, row in zip(RUNS, table2[1:], strict=True):
        # the same value `inspire eval` scores, not a second implementation
        alone = evaluate(files / f"{name}.jsonl", qrels=files / "q.trec", samples=100)
        assert row.split()[2] == f"{alone.aggregate['ndcg@10']:.3f}"
        low, high = alone.intervals["ndcg@10"]
        assert f"[{low:.3f}, {high:.3f}]" in row


def test_json_holds_every_run_in_order(files: Path) -> None:
    argv = ["eval", "--qrels", str(files / "q.trec"), "report", *_every_run(files)]
    result = CliRunner().invoke(app, [*argv, "--name", "x", "--name", "y", "--name", "z", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["instances"] == 3 and [r["name"] for r in found["runs"]] == ["x", "y", "z"]
    assert found["runs"][2]["trajectories"] == str(files / "tc.jsonl")
    alone = evaluate(files / "c.jsonl", qrels=files / "q.trec", trajectories=files / "tc.jsonl")
    assert found["runs"][2]["aggregate"] == pytest.approx(alone.aggregate)
    assert "per_instance" not in found["runs"][0] and len(found["runs"][0]["curve"]) == 11


def test_without_trajectories_there_is_no_funnel(files: Path) -> None:
    argv = ["eval", "--qrels", str(files / "q.trec"), "report", *_every_run(files, False)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "Table 2" in result.stdout and "Table 3" not in result.stdout


def test_trajectories_of_another_run_are_warned_of(files: Path) -> None:
    swapped = ["--run", str(files / "a.jsonl"), "--trajectories", str(files / "tb.jsonl")]
    result = CliRunner().invoke(app, ["eval", "--qrels", str(files / "q.trec"), "report", *swapped])
    assert result.exit_code == 0, result.output
    assert "warning: a: 1 submitted ID(s) that no step of tb.jsonl exposed" in result.stderr


def test_inputs_that_do_not_pair_are_one_error_naming_the_option(files: Path) -> None:
    base: list[str | Path] = ["eval", "--qrels", files / "q.trec", "report"]
    runs = _every_run(files, False)
    one_error(
        inspire(*base, *runs, "--trajectories", files / "ta.jsonl"),
        "--trajectories: give one per --run",
        "(3 --run, 1 --trajectories)",
    )
    one_error(inspire(*base, *runs, "--name", "x"), "--name: give one per --run")
    one_error(
        inspire(*base, "--run", files / "a.jsonl", "--run", files / "a.jsonl"),
        "--name: each run needs its own name; a is given twice",
    )
    one_error(inspire(*base), "--run: give at least one run file")
    one_error(
        inspire(*base, *runs, "--trajectories", files / "ta.jsonl", "--trajectories", files,
                "--trajectories", files / "none.jsonl"),
        f"--trajectories: not a regular file: {files}, {files / 'none.jsonl'}",
    )  # fmt: skip
    one_error(inspire("eval", "report", *runs), "give either --split S or")
    one_error(
        inspire(*base, "--split", "eval", *runs, "--warehouse", files / "none.duckdb"),
        "give either --split S or",
    )


@pytest.fixture
def split_warehouse(tmp_path: Path) -> Path:
    """A warehouse holding version eval-x of split eval, with QRELS' judgements."""
    path = tmp_path / "w.duckdb"
    con = new_warehouse(path)
    con.execute(
        "INSERT INTO split_versions (version_id, split, config_hash, code_version, prompt_hashes,"
        " models, counts, created_at, status) "
        "VALUES ('eval-x', 'eval', 'h', '0', '{}', '{}', '{}', now(), 'complete')"
    )
    for line in QRELS.splitlines():
        iid, _, paper, tier = line.split()
        con.execute("INSERT INTO qrels VALUES ('eval-x', ?, ?, ?, 'problem')", [iid, paper, tier])
    con.close()
    return path


def test_against_a_split_each_run_goes_to_eval_runs(files: Path, split_warehouse: Path) -> None:
    argv = ["eval", "report", "--split", "eval", *_every_run(files), "--bootstrap", "20"]
    result = CliRunner().invoke(app, [*argv, "--warehouse", str(split_warehouse)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("scored against version eval-x: 3 instance(s), 3 run(s)")
    con = warehouse.connect(split_warehouse, read_only=True)
    try:
        rows = con.execute(
            "SELECT name, version_id, has_trajectories FROM eval_runs ORDER BY name"
        ).fetchall()
    finally:
        con.close()
    assert rows == [("a", "eval-x", True), ("b", "eval-x", True), ("c", "eval-x", True)]
