"""tables/llm_ledger.py: the calls each build's targets used, and their cost per version, step
and target, each call counted once, hand-computed over a tiny ledger.

The ledger: four calls. k1 (brief, $0.10) and k2 (grade, $0.20) were asked in run r1, which
failed with target T1 stored. Run r2 wrote version V2: T1 again, from the log (k1, k2 cached);
T2 reused k2 (cached), and asked k3 (grade, a model with no price) and k4 (brief, $0.40)."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from inspire_build import build_runs, gold
from inspire_build.config import Settings
from inspire_build.errors import BudgetExceeded
from inspire_build.llm import LLM, Journal, Use
from inspire_build.llm_budget import usd
from inspire_build.models import BriefDraft, TargetOutcome, TargetStatus
from inspire_build.tables import llm_ledger, llm_log

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CALLS = {  # key: (step, model, tokens in, tokens out, cost)
    "k1": ("brief", "m", 100, 10, 0.10),
    "k2": ("grade", "m", 200, 20, 0.20),
    "k3": ("grade", "free-x", 300, 30, None),
    "k4": ("brief", "m", 400, 40, 0.40),
}


def _log(con: duckdb.DuckDBPyConnection) -> None:
    llm_log.write(
        con,
        [
            {
                "call_key": key,
                "backend": "openai",
                "model": model,
                "prompt_name": step,
                "prompt_hash": "p",
                "input_hash": key,
                "output": {},
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "latency_ms": 1.0,
                "cost_usd": cost,
                "created_at": NOW,
                "status": "answered",
            }
            for key, (step, model, tokens_in, tokens_out, cost) in CALLS.items()
        ],
    )


def _used(con: duckdb.DuckDBPyConnection, target: str, *uses: tuple[str, bool]) -> int:
    return llm_ledger.record_uses(con, target, [(k, CALLS[k][0], cached) for k, cached in uses])


@pytest.fixture
def ledger(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    return write_ledger(con)


def write_ledger(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The ledger of the module's docstring, into ``con``."""
    _log(con)
    assert _used(con, "T1", ("k1", False)) == 0  # no build is running: nothing to tie it to
    build_runs.begin(con, "r1", "eval", NOW)
    assert _used(con, "T1", ("k1", False), ("k2", False)) == 2
    build_runs.finish(con, "r1", error=BudgetExceeded("LLM budget of $0.30 reached"))
    build_runs.begin(con, "r2", "eval", NOW)
    _used(con, "T1", ("k1", True), ("k2", True))
    _used(con, "T2", ("k2", True), ("k3", False), ("k4", False), ("k4", True))
    build_runs.finish(con, "r2", version_id="V2")
    return con


def test_cost_per_step_of_a_version_counts_each_call_once(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    assert llm_ledger.costs(ledger, "step", version="V2") == [
        # k1 and k4: k4 asked here (twice used by T2, once asked); k1 was paid for by r1
        {
            "step": "brief",
            "calls": 2,
            "asked": 1,
            "tokens_in": 500,
            "tokens_out": 50,
            "cost_usd": pytest.approx(0.50),
            "paid_usd": pytest.approx(0.40),
            "unpriced_calls": 0,
        },
        # k2 (used by both targets, counted once, paid by r1) and k3, whose cost is unknown
        {
            "step": "grade",
            "calls": 2,
            "asked": 1,
            "tokens_in": 500,
            "tokens_out": 50,
            "cost_usd": pytest.approx(0.20),
            "paid_usd": 0.0,
            "unpriced_calls": 1,
        },
    ]


def test_the_total_of_a_version_and_of_every_build_and_the_unpriced_models(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    assert llm_ledger.total(ledger, version="V2") == {
        "calls": 4,
        "asked": 2,
        "tokens_in": 1000,
        "tokens_out": 100,
        "cost_usd": pytest.approx(0.70),
        "paid_usd": pytest.approx(0.40),
        "unpriced_calls": 1,
        "unpriced_models": {"free-x": 1},
    }
    every = llm_ledger.total(ledger)  # r1 asked k1 and k2: every call was asked once
    assert (every["calls"], every["asked"]) == (4, 4)
    assert every["cost_usd"] == every["paid_usd"] == pytest.approx(0.70)  # paid once in all
    assert llm_ledger.total(ledger, split="train") == {**llm_ledger.NOTHING, "unpriced_models": {}}


def test_cost_per_target_gives_each_target_the_calls_it_used(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    rows = llm_ledger.costs(ledger, "target", version="V2")
    assert [(r["target"], r["calls"], r["asked"]) for r in rows] == [("T1", 2, 0), ("T2", 3, 2)]
    # k2 serves both, so the targets' costs (0.30 + 0.60) add up to more than the version's 0.70
    assert [r["cost_usd"] for r in rows] == [pytest.approx(0.30), pytest.approx(0.60)]
    assert [r["paid_usd"] for r in rows] == [0.0, pytest.approx(0.40)]
    with pytest.raises(ValueError, match="step, target"):
        llm_ledger.costs(ledger, "model")


def test_the_ledger_view_joins_each_use_to_its_build_and_version(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    rows = ledger.execute(
        "SELECT run_id, run_status, version_id, target_id, call_key, cached, paid_usd "
        "FROM llm_ledger WHERE call_key = 'k2' ORDER BY used_at, target_id"
    ).fetchall()
    assert rows == [
        ("r1", "failed", None, "T1", "k2", False, pytest.approx(0.20)),  # its first use pays
        ("r2", "completed", "V2", "T1", "k2", True, 0.0),
        ("r2", "completed", "V2", "T2", "k2", True, 0.0),
    ]


def test_a_stored_targets_journal_becomes_its_uses_in_the_running_build(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Through the LLM and gold.write: a call asked, then asked again (from the journal), is one
    use, not cached; the next build's use of it is cached and pays nothing."""
    context = {"title": "T", "abstract": "Long documents.", "redactions": [], "feedback": []}
    verdict = gold.Verdict("T1", TargetStatus.EXCLUDED, TargetOutcome.NO_ELIGIBLE, "none")
    for run in ("r1", "r2"):
        build_runs.begin(con, run, "eval", NOW)
        llm = gold.make_llm(Settings(), con)
        reader = con.cursor()
        with llm.journal(reader) as calls:
            llm.complete("brief", context, BriefDraft)
            llm.complete("brief", context, BriefDraft)
        reader.close()
        assert isinstance(calls, Journal) and len(calls.uses) == 2
        gold.write(con, gold.Records(verdict, calls))
        build_runs.finish(con, run, version_id=f"V-{run}")
    used = con.execute(
        "SELECT run_id, target_id, step, cached FROM llm_call_uses ORDER BY run_id"
    ).fetchall()
    assert used == [("r1", "T1", "brief", False), ("r2", "T1", "brief", True)]
    assert llm_ledger.total(con, version="V-r2")["asked"] == 0


def test_a_journal_notes_the_step_a_call_served(con: duckdb.DuckDBPyConnection) -> None:
    llm = LLM(Settings(), con, rules={"brief": lambda _: BriefDraft(brief="B.")})
    reader = con.cursor()
    context = {"title": "T", "abstract": "A.", "redactions": [], "feedback": []}
    with llm.journal(reader) as calls:
        llm.complete("brief", context, BriefDraft, step="redraft")
    reader.close()
    assert calls.uses == [Use(calls[0]["call_key"], "redraft", cached=False)]


def test_a_group_of_unpriced_calls_alone_costs_an_unknown_amount_not_zero(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    build_runs.begin(ledger, "r3", "eval", NOW)
    _used(ledger, "T3", ("k3", True))  # free-x's call alone
    build_runs.finish(ledger, "r3", version_id="V3")
    [row] = llm_ledger.costs(ledger, "target", version="V3")
    assert (row["target"], row["calls"], row["unpriced_calls"]) == ("T3", 1, 1)
    assert row["cost_usd"] is None and row["paid_usd"] is None
    assert llm_ledger.total(ledger, version="V3")["cost_usd"] is None
    assert usd(None) == "unknown" and usd(0.0) == "$0"


def test_calls_a_stopped_build_asked_for_no_stored_target_are_counted_apart(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    """A build stopped at its budget keeps its calls in the log, but no target stored them:
    `inspire cost` said nothing was spent until the resume recorded them."""

    def asked(key: str, cost: float) -> None:
        row = {"call_key": key, "backend": "openai", "model": "m", "prompt_name": "brief",
               "prompt_hash": "p", "input_hash": key, "output": {}, "tokens_in": 1,
               "tokens_out": 1, "latency_ms": 1.0, "cost_usd": cost,
               "created_at": dt.datetime.now(dt.UTC), "status": "answered"}  # fmt: skip
        llm_log.write(ledger, [row])

    assert llm_ledger.unattributed(ledger) == (0, None)
    build_runs.begin(ledger, "r5", "eval", NOW)
    asked("k5", 0.25)
    build_runs.finish(ledger, "r5", error=BudgetExceeded("LLM budget of $0.20 reached"))
    build_runs.begin(ledger, "r6", "eval", NOW)
    asked("k6", 0.5)  # a completed build's call no target used: not a stopped build's
    build_runs.finish(ledger, "r6", version_id="V6")
    assert llm_ledger.unattributed(ledger) == (1, 0.25)
