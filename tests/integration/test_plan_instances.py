"""A first real build, planned and counted in instances, against a sandbox with the openai
backend: `inspire plan --json` prints one object; `inspire build --instances 25` writes exactly
25 instances; the HTTP and LLM requests the sandbox counted fall within 35% of the plan's; the
same config rebuilt at another LLM concurrency gives the same version, asking the model again
only what it refused or answered invalidly; `inspire audit` in a shell with no LLM settings
judges with the build's model and writes no call of another backend."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import duckdb
import httpx

from inspire_build.sandbox import server, world
from tests.conftest import read_rows, run_inspire

WANTED = 25
PLAN_KEYS = {
    "candidates",
    "http_calls",
    "llm_calls",
    "llm_tokens_in",
    "llm_tokens_out",
    "llm_cost_usd",
    "wall_s",
}


def counted(base: str) -> tuple[int, int]:
    """(HTTP requests to the three sources, LLM chat requests) the sandbox has answered."""
    counts: dict[str, int] = httpx.get(base + "/_sandbox/stats").json()["counts"]
    sources = sum(n for k, n in counts.items() if k.split()[0] in {"openalex", "s2", "arxiv"})
    return sources, sum(n for k, n in counts.items() if k.startswith("openai chat"))


def _asked_in_last_run(warehouse: Path) -> set[str]:
    """The calls the last build asked of the model, not answered from the call log."""
    rows = read_rows(
        warehouse,
        "SELECT call_key FROM llm_call_uses WHERE NOT cached AND run_id = (SELECT run_id "
        "FROM llm_call_uses GROUP BY run_id ORDER BY min(used_at) DESC LIMIT 1)",
    )
    return {str(key) for (key,) in rows}


def _differences(warehouse: Path, version: str, again: str) -> str:
    """Why a rebuild gave another version: the targets in one version's instances only, and the
    calls the log holds unanswered (a rebuild at load average 7-8 once differed; the LLM's
    timeout is 120 s, where calls took 13 s at most at load 9, so that cause is unproven)."""
    other = again.split(":")[0]
    con = duckdb.connect(str(warehouse), read_only=True)
    targets = {
        name: {t for (t,) in con.execute(
            "SELECT target_id FROM instances WHERE version_id = ?", [name]
        ).fetchall()}
        for name in (version, other)
    }  # fmt: skip
    unanswered = con.execute(
        "SELECT prompt_name, status, count(*) FROM llm_calls WHERE status <> 'answered' "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    con.close()
    return (
        f"{version} only: {sorted(targets[version] - targets[other])}; {other} only: "
        f"{sorted(targets[other] - targets[version])}; calls not answered: {unanswered}"
    )


def test_a_build_planned_and_counted_in_instances(tmp_path: Path, prefect_api: str) -> None:
    generated = world.generate(world.WorldConfig(seed=13, papers=1000))
    warehouse = tmp_path / "w.duckdb"
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        env = {
            **os.environ,
            **dict(line.split("=", 1) for line in server.env_lines(base, time_scale=1000)),
            "INSPIRE_WAREHOUSE": str(warehouse),
            "PREFECT_HOME": str(tmp_path / "prefect"),
            "PREFECT_API_URL": prefect_api,
            "INSPIRE_LLM_BACKEND": "openai",
            "INSPIRE_LLM_API_KEY": "sk-sandbox-plan-test",
            "INSPIRE_LLM_PRICES": json.dumps({"sandbox-gpt": [0.15, 0.6]}),
            "INSPIRE_INSTANCE_KEY": bytes(range(32)).hex(),
        }

        def inspire(*args: str, **more: str) -> str:
            done = run_inspire(*args, env={**env, **more}, timeout=900)
            assert done.returncode == 0, done.stderr[-3000:]
            return done.stdout

        planned_out = inspire("plan", "--split", "eval", "--instances", str(WANTED), "--json")
        assert len(planned_out.splitlines()) == 1
        planned = json.loads(planned_out)
        assert planned.keys() >= PLAN_KEYS and planned["candidates"] > WANTED
        assert planned["llm_cost_usd"] > 0 and planned["wall_s"] > 0
        before = counted(base)
        first = inspire("build", "--split", "eval", "--instances", str(WANTED))
        http, llm = (after - was for after, was in zip(counted(base), before, strict=True))
        print(f"plan {planned['http_calls']} HTTP, {planned['llm_calls']} LLM; made {http}, {llm}")
        assert abs(http - planned["http_calls"]) <= 0.35 * planned["http_calls"]
        assert abs(llm - planned["llm_calls"]) <= 0.35 * planned["llm_calls"]
        version = first.split(":")[0]
        unanswered = {
            str(key)
            for (key,) in read_rows(
                warehouse, "SELECT call_key FROM llm_calls WHERE status <> 'answered'"
            )
        }
        again = inspire(
            "build", "--split", "eval", "--instances", str(WANTED), INSPIRE_LLM_CONCURRENCY="1"
        )
        assert again.split(":")[0] == version, _differences(warehouse, version, again)
        # The rerun asked the model again only what it refused or answered invalidly; each such
        # call may take one repair request more, as the sandbox draws its faults by the order
        # requests arrive, not by their prompt.
        asked = _asked_in_last_run(warehouse)
        assert unanswered, "the sandbox refused nothing: the rerun re-asks nothing to check"
        assert asked <= unanswered, f"asked again though answered: {asked - unanswered}"
        assert counted(base)[1] - before[1] - llm <= 2 * len(unanswered)
        # The audit, in a shell with no LLM settings, judges with the build's model: it names
        # it, and writes no call of another backend (its checks are in the build's call log).
        bare = {k: v for k, v in env.items() if not k.startswith("INSPIRE_LLM_")}
        audited = run_inspire("audit", "eval", env=bare, timeout=900)
        report = audited.stdout + audited.stderr
        assert audited.returncode in (0, 1) and "Traceback" not in report, report[-3000:]
        assert "judged by openai sandbox-gpt (the build's)" in report
    con = duckdb.connect(str(warehouse), read_only=True)
    instances = con.execute(
        "SELECT count(*) FROM instances WHERE version_id = ?", [version]
    ).fetchone()
    over = con.execute(
        "SELECT count(*) FILTER (WHERE reason LIKE 'accepted, but over%'), "
        "count(*) FILTER (WHERE reason LIKE 'not reached: over%'), count(*) "
        "FROM targets WHERE split = 'eval'"
    ).fetchone()
    backends = con.execute("SELECT DISTINCT backend FROM llm_calls").fetchall()
    con.close()
    assert backends == [("openai",)]
    assert instances == (WANTED,)
    assert over is not None and over[1] > 0  # the walk stopped well before the last candidate
    assert re.match(r"eval-\w+$", version)
