"""The LLM agent on a Sandbox build, against the sandbox's emulated model playing an agent: every
instance run within its budget, nothing exposed on or after a cutoff, the run scored with its
trajectories; and with a timeout, a malformed call and a refusal planted on three briefs, each
failure an empty submission, counted, and the same run file at one and eight instances at once.

The split is built once per test process (tests/integration/conftest.py: its world, warehouse
and corpus); ``test_env_sandbox``'s module fixture gives this module a copy."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from inspire_build import warehouse
from inspire_build.cli import app
from inspire_build.config import get_settings
from inspire_build.env import llm_run, run
from inspire_build.env.llm_agent import Failure
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import world
from inspire_build.sandbox.openai_api import OpenAIConfig
from tests.integration.test_env_sandbox import built

__all__ = ["built"]  # this module's copy of the one build
BUDGET = 20


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _instances(path: Path) -> dict[str, tuple[str, object]]:
    """instance -> (its target, its cutoff), of the latest eval version."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute("SELECT instance_id, target_id, cutoff_date FROM eval_latest").fetchall()
    finally:
        con.close()
    return {str(i): (str(t), c) for i, t, c in rows}


def _public_by(path: Path, ids: set[str]) -> dict[str, object]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT paper_id, public_by FROM corpus WHERE list_contains(?, paper_id)", [sorted(ids)]
        ).fetchall()
    finally:
        con.close()
    return {str(p): d for p, d in rows}


def test_agent_run_llm_on_the_sandbox_keeps_the_rules_and_scores(
    built: tuple[Path, Path, str],
) -> None:
    path, root, base = built
    run_file, traj_file = root / "run-llm.jsonl", root / "traj-llm.jsonl"
    shell = dict(line.split("=", 1) for line in sandbox.shell_lines(base))  # `inspire sandbox env`
    get_settings.cache_clear()
    result = CliRunner(env=shell).invoke(
        app,
        [
            "agent", "run", "--agent", "llm", "--split", "eval", "--budget", str(BUDGET),
            "--out", str(run_file), "--trajectories", str(traj_file), "--warehouse", str(path),
        ],
    )  # fmt: skip
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "llm (sandbox-gpt)" in result.output and "model turns" in result.output
    instances = _instances(path)
    runs, trajectories = _lines(run_file), _lines(traj_file)
    assert [line["instance_id"] for line in runs] == [t["instance_id"] for t in trajectories]
    assert {str(line["instance_id"]) for line in runs} == set(instances)
    exposed: set[str] = set()
    for line in trajectories:
        steps = line["steps"]
        assert isinstance(steps, list) and 0 < len(steps) <= BUDGET
        exposed |= {str(d) for step in steps for d in step["exposed"]}
    dates = _public_by(path, exposed)
    for line in trajectories:
        target, cutoff = instances[str(line["instance_id"])]
        for step in line["steps"]:  # type: ignore[attr-defined]
            for paper in step["exposed"]:
                assert paper != target and dates[paper] is not None
                assert dates[paper] < cutoff  # type: ignore[operator]
    submitted = [line for line in runs if line["ranking"]]
    assert len(submitted) == sum(1 for t in trajectories if t["failure"] is None) >= 1
    scored = CliRunner().invoke(
        app,
        [
            "eval", "--split", "eval", "--run", str(run_file), "--trajectories", str(traj_file),
            "--name", "llm", "--bootstrap", "50", "--json", "--warehouse", str(path),
        ],
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output
    scores = json.loads(scored.output.strip().splitlines()[-1])
    assert scores["instances"] == len(instances) and scores["unknown_trajectory_instance_ids"] == 0
    aggregate = scores["aggregate"]
    assert aggregate["total_calls"] > 1
    assert aggregate["exposed_gain"] >= aggregate["selected_gain"] >= aggregate["ndcg@10"]


def _own_text(brief: str, briefs: list[str], size: int = 60) -> str:
    """A piece of ``brief`` that no other brief holds (briefs share their frame's words)."""
    pieces = (brief[i : i + size] for i in range(0, max(1, len(brief) - size), 10))
    own = next((p for p in pieces if sum(p in other for other in briefs) == 1), None)
    assert own is not None, brief
    return own


@pytest.fixture(scope="module")
def faulty(built: tuple[Path, Path, str]) -> Iterator[str]:
    """A second sandbox on the same world whose emulated agent times out on one brief, makes a
    malformed call (arguments that are not JSON) on another and refuses a third. Planted by
    the briefs' text, not by rates: each warehouse's secret cutoff offsets change the
    conversations, so seeded rates would fail a different share of instances on each clean
    clone (and at times every one)."""
    path, root, _ = built
    con = duckdb.connect(str(path), read_only=True)
    rows = con.execute("SELECT brief FROM eval_latest ORDER BY instance_id").fetchall()
    briefs = [str(b) for (b,) in rows]
    con.close()
    faults = ("timeout", "invalid_json", "refusal")
    planted = tuple(zip([_own_text(b, briefs) for b in briefs[:3]], faults, strict=True))
    # The planted timeout holds its answer well past the client's 4 s, which an unplanted
    # call never reaches on a loaded machine (at 1 s, one did).
    llm = OpenAIConfig(seed=3, triggers=planted, timeout_s=10.0)
    config = sandbox.SandboxConfig(time_scale=1000, openai=llm)
    with sandbox.running(world.load(root / "world"), config) as base:
        yield base


def test_seeded_failures_end_empty_counted_and_concurrency_changes_no_byte(
    built: tuple[Path, Path, str], faulty: str
) -> None:
    path, root, _ = built
    settings = sandbox.settings_for(faulty, warehouse=path, llm_timeout_s=4.0, llm_max_retries=0)
    settings = llm_run.agent_settings(settings, "sandbox-gpt", None, None)
    files = {}
    for workers in (1, 8):
        with warehouse.open_warehouse(path) as con:
            done = llm_run.run_llm(
                con, settings, ("eval", None, "local", BUDGET), workers=workers, deadline_s=60.0
            )
        files[workers] = (root / f"run-llm-{workers}.jsonl", root / f"traj-llm-{workers}.jsonl")
        run.write_run(done.envs, *files[workers], done.notes())
        failures = done.failures()
        planted = {Failure.TIMEOUT.value: 1, Failure.MALFORMED.value: 1, Failure.REFUSAL.value: 1}
        assert failures == planted
        for env, outcome in zip(done.envs, done.outcomes, strict=True):
            assert len(env.steps) <= BUDGET
            if outcome.failure is not None:
                assert env.run_line()["ranking"] == [] and outcome.detail
        assert dataclasses.astuple(done.totals)[0] >= len(done.envs)
        assert any(env.run_line()["ranking"] for env in done.envs)  # and some submitted
    assert files[1][0].read_bytes() == files[8][0].read_bytes()
    notes = [{k: t[k] for k in ("instance_id", "failure")} for t in _lines(files[1][1])]
    assert notes == [{k: t[k] for k in ("instance_id", "failure")} for t in _lines(files[8][1])]
