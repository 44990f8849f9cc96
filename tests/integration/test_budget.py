"""The LLM budget and the cost ledger end to end: `inspire build` with the openai backend against
the sandbox's emulated model. A budget below the build's cost stops it before the call that
would pass it, exit 1 in one line naming the spend, the build recorded failed; the rerun
without the budget completes and asks no call twice (every chat request the sandbox counted is
a call of its own in the log); `inspire cost` then prices both builds' calls, each once, and
names the model the rerun had no price for. A budget for a model with no price is refused before
any call."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import duckdb
import httpx
import pytest

from inspire_build.sandbox import server, world
from inspire_build.sandbox.llm_truth import TruthRates
from inspire_build.sandbox.openai_api import OpenAIConfig
from tests.conftest import run_inspire

# USD per million tokens, in and out: a call's estimate (its prompt and a 1,000-token answer)
# is about $0.2, so a $1 budget stops the build after a few calls.
PRICES = {"sandbox-gpt": [100.0, 100.0]}
BUDGET = 1.0
# No refusal, invalid answer or dropped grade: each would be asked again by design (a failed
# call is never served from the log), and a repair is a second request for one call.
RATES = TruthRates(refusal=0.0, invalid_json=0.0, drop_grade=0.0)


class Builds(NamedTuple):
    base: str  # the sandbox, running while the module's tests run
    env: dict[str, str]
    stopped: subprocess.CompletedProcess[str]
    asked_stopped: int  # chat requests the sandbox answered during the stopped build
    kept: int  # answered calls in the log after it
    resumed: subprocess.CompletedProcess[str]
    asked_resumed: int
    path: Path


def _chat_requests(base: str) -> int:
    counts = httpx.get(base + "/_sandbox/stats", timeout=30).json()["counts"]
    return int(counts.get("openai chat 200", 0)) + int(counts.get("openai chat 500", 0))


def _answered(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM llm_calls WHERE status = 'answered'").fetchone()
    finally:
        con.close()
    return int(row[0]) if row else 0


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory, prefect_api: str) -> Iterator[Builds]:
    folder = tmp_path_factory.mktemp("budget")
    generated = world.generate(world.WorldConfig(seed=5, papers=300))
    config = server.SandboxConfig(time_scale=1000, openai=OpenAIConfig(seed=1, truth=RATES))
    with server.running(generated, config) as base:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
        env |= dict(line.split("=", 1) for line in server.env_lines(base, 1000))
        env |= {
            "INSPIRE_WAREHOUSE": str(folder / "w.duckdb"),
            "INSPIRE_LLM_BACKEND": "openai",
            "INSPIRE_INSTANCE_KEY": bytes(range(32)).hex(),
            "PREFECT_HOME": str(folder / "prefect"),
            "PREFECT_API_URL": prefect_api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        priced = {**env, "INSPIRE_LLM_PRICES": json.dumps(PRICES)}
        capped = {**priced, "INSPIRE_LLM_BUDGET_USD": str(BUDGET)}
        stopped = run_inspire("build", "--split", "eval", "--limit", "6", env=capped, timeout=600)
        asked_stopped = _chat_requests(base)
        kept = _answered(folder / "w.duckdb")
        # The rerun has no budget, and no price either: its calls' cost is unknown.
        resumed = run_inspire("build", "--split", "eval", "--limit", "6", env=env, timeout=600)
        asked_resumed = _chat_requests(base) - asked_stopped
        yield Builds(
            base, env, stopped, asked_stopped, kept, resumed, asked_resumed, folder / "w.duckdb"
        )


def test_a_budget_below_the_builds_cost_stops_it_in_one_line_keeping_every_answer(
    builds: Builds,
) -> None:
    done = builds.stopped
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, output[-3000:]
    said = re.fullmatch(
        r"error: LLM budget of \$1\.00 reached: \$(0\.\d+) spent in this build; (\d+) call\(s\) "
        r"kept in the call log; rerun with a larger budget \(--llm-budget-usd, a deployment run's "
        r"llm_budget_usd, or INSPIRE_LLM_BUDGET_USD\), or none, to resume",
        errors[0],
    )
    assert said is not None, errors[0]
    print(f"{errors[0]}\nasked {builds.asked_stopped}, kept {builds.kept}")
    assert "Traceback" not in output, output[-3000:]
    # Every call the model was asked is in the log: none is lost with the targets not stored
    # (those in flight when the budget was hit included), and the message counts them.
    assert 0 < builds.asked_stopped == builds.kept == int(said.group(2))
    con = duckdb.connect(str(builds.path), read_only=True)
    runs = con.execute("SELECT status, reason FROM build_runs ORDER BY started_at").fetchall()
    spent = con.execute("SELECT sum(cost_usd) FROM llm_calls").fetchone()
    con.close()
    assert runs[0] == ("failed", f"BudgetExceeded: {errors[0].removeprefix('error: ')}")
    assert spent is not None and float(said.group(1)) == pytest.approx(spent[0], rel=1e-3)
    assert spent[0] <= BUDGET  # the calls' answers were shorter than their allowance


def test_the_rerun_without_the_budget_completes_and_asks_no_call_twice(builds: Builds) -> None:
    done = builds.resumed
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("eval-")
    # Each request of either build is a call of its own: none was asked in both.
    print(f"the rerun asked {builds.asked_resumed} call(s) after {builds.asked_stopped}")
    assert builds.asked_resumed > 0
    assert _answered(builds.path) == builds.asked_stopped + builds.asked_resumed
    con = duckdb.connect(str(builds.path), read_only=True)
    runs = con.execute("SELECT status FROM build_runs ORDER BY started_at").fetchall()
    con.close()
    assert runs == [("failed",), ("completed",)]


def test_inspire_cost_prices_each_call_once_and_names_the_unpriced_model(builds: Builds) -> None:
    version = builds.resumed.stdout.split(":", 1)[0]
    shown = run_inspire("cost", "--version", version, "--json", env=builds.env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    *steps, total = [json.loads(line) for line in shown.stdout.splitlines()]
    assert {s["step"] for s in steps} >= {"brief", "audit_identity", "grade"}
    con = duckdb.connect(str(builds.path), read_only=True)
    logged = con.execute(
        "SELECT count(*), sum(cost_usd), count(*) FILTER (WHERE cost_usd IS NULL) FROM llm_calls"
    ).fetchone()
    con.close()
    assert logged is not None
    calls, cost, unpriced = logged
    # The version's targets used every call of both builds; the rerun asked only its own.
    assert total["calls"] == calls == sum(s["calls"] for s in steps)
    assert total["asked"] == builds.asked_resumed
    assert total["cost_usd"] == pytest.approx(cost, abs=1e-5)  # the stopped build's, priced
    assert total["unpriced_calls"] == unpriced == builds.asked_resumed
    assert total["unpriced_models"] == {"sandbox-gpt": builds.asked_resumed}
    every = run_inspire("cost", "--split", "eval", env=builds.env, timeout=120)
    assert every.returncode == 0, every.stderr
    assert f"cost ${cost:.4g}" in every.stdout or f"cost ${cost:,.2f}" in every.stdout
    assert "sandbox-gpt" in every.stdout and "INSPIRE_LLM_PRICES" in every.stdout


def test_a_budget_for_a_model_with_no_price_is_refused_before_any_call(
    builds: Builds, tmp_path: Path
) -> None:
    before = _chat_requests(builds.base)
    env = {
        **builds.env,
        "INSPIRE_WAREHOUSE": str(tmp_path / "other.duckdb"),
        "INSPIRE_LLM_BUDGET_USD": "1",
    }
    done = run_inspire("build", "--split", "eval", "--limit", "6", env=env, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]  # a configuration that cannot be kept
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "'sandbox-gpt' has no price" in errors[0], output[-3000:]
    assert "INSPIRE_LLM_PRICES" in errors[0] and "Traceback" not in output
    assert _chat_requests(builds.base) == before
