"""`inspire eval report` on a Sandbox build: three runs (the two baselines and a reversed copy
of one) scored against the eval split in one command, their rows printed with intervals, each
run written to eval_runs, and every figure a PNG holding the three runs."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import matplotlib.image
from typer.testing import CliRunner

from inspire_build.cli import app
from inspire_build.evaluation.evaluate import evaluate
from tests.conftest import run_inspire
from tests.integration.test_env_sandbox import built

__all__ = ["built"]  # this module's copy of the Sandbox build of tests/integration/conftest.py

NAMES = ("bm25-brief", "multi-query", "multi-query-reversed")


def _runs(path: Path, root: Path) -> list[tuple[Path, Path]]:
    """(run, trajectories) of each of NAMES: the baselines, run in the environment, and the
    multi-query run with each ranking reversed (same exposure, same selection, worse order)."""
    made = []
    for agent in NAMES[:2]:
        run_file, traj_file = root / f"report-{agent}.jsonl", root / f"report-traj-{agent}.jsonl"
        result = CliRunner().invoke(
            app,
            [
                "agent", "run", "--agent", agent, "--split", "eval", "--out", str(run_file),
                "--trajectories", str(traj_file), "--warehouse", str(path),
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        made.append((run_file, traj_file))
    reversed_file = root / "report-multi-query-reversed.jsonl"
    lines = made[1][0].read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    reversed_file.write_text(
        "".join(json.dumps({**r, "ranking": r["ranking"][::-1]}) + "\n" for r in rows),
        encoding="utf-8",
    )
    return [*made, (reversed_file, made[1][1])]


def _instances(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM eval_latest").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def test_a_report_of_three_runs_prints_their_rows_and_draws_them_together(
    built: tuple[Path, Path, str],
) -> None:
    path, root, _ = built
    runs = _runs(path, root)
    args: list[str | Path] = ["eval", "report", "--split", "eval", "--warehouse", path]
    for name, (run, trajectories) in zip(NAMES, runs, strict=True):
        args += ["--run", run, "--trajectories", trajectories, "--name", name]
    result = run_inspire(*args, "--plots", root / "report-plots", "--bootstrap", "200")
    assert result.returncode == 0, result.stderr
    print(result.stdout)  # the report, in the test log
    n = _instances(path)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("scored against version eval-")
    assert lines[0].endswith(f": {n} instance(s), 3 run(s)")
    version = lines[0].split()[3].rstrip(":")
    for heading, metrics in (("Table 2", 6), ("Table 3", 7)):
        start = next(i for i, line in enumerate(lines) if line.startswith(heading))
        header, *rows = lines[start + 1 : start + 5]
        assert header.split()[:2] == ["run", "n"]
        assert [row.split()[0] for row in rows] == list(NAMES)
        for row in rows:
            assert row.split()[1] == str(n) and row.count("[") == metrics
    for name, (run, trajectories) in zip(NAMES, runs, strict=True):
        row = next(line for line in lines if line.startswith(f"{name} "))
        alone = evaluate(
            run, split="eval", trajectories=trajectories, name=name, samples=200,
            warehouse_path=path,
        )  # fmt: skip
        assert row.split()[2] == f"{alone.aggregate['ndcg@10']:.3f}"
    _check_the_figures(root / "report-plots", version, n)
    _check_eval_runs(path, version)


def _check_the_figures(folder: Path, version: str, n: int) -> None:
    for name in ("recovered_top10", "funnel", "oracle_curve"):
        png = folder / f"{name}.png"
        image = matplotlib.image.imread(png)
        assert image.shape[:2] == (400, 640), name
        assert image[..., :3].std() > 0.05, name  # drawn on, not blank
        svg = (folder / f"{name}.svg").read_text(encoding="utf-8")
        # matplotlib writes text as paths, with the text itself in a comment
        assert f"{version}, n = {n} instances" in svg, name
        for label in NAMES:
            assert f"<!-- {label} -->" in svg, (name, label)


def _check_eval_runs(path: Path, version: str) -> None:
    con = duckdb.connect(str(path), read_only=True)
    try:
        found = con.execute(
            "SELECT name FROM eval_runs WHERE version_id = ? AND name IN (?, ?, ?) ORDER BY name",
            [version, *NAMES],
        ).fetchall()
    finally:
        con.close()
    assert [row[0] for row in found] == sorted(NAMES)
