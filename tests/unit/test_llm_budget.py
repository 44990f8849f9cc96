"""llm_budget.py: prices (an unpriced model costs NULL, never 0), and a build's budget, which
refuses the call that would pass it, before it is asked, keeping what was answered for a rerun.

The endpoint below reports 10 tokens in and 3 out for every call. At 500 USD per million output
tokens (input free), a call's estimate is its answer's allowance, 1,000 tokens: $0.50; what it
costs is 3 tokens: $0.0015."""

from __future__ import annotations

from typing import Any

import duckdb
import httpx
import openai
import pytest

from inspire_build.config import Settings
from inspire_build.errors import BudgetExceeded, InputError
from inspire_build.llm import LLM
from inspire_build.llm_budget import (
    ANSWER_TOKENS,
    Budget,
    check,
    cost_usd,
    estimated_usage,
    prices_of,
    usd,
)
from inspire_build.models import BriefDraft
from inspire_build.tables import llm_log
from tests.unit.llm.test_client import answering  # an endpoint: 10 tokens in, 3 out

PRICES = {"m": (0.0, 500.0)}
ESTIMATE = ANSWER_TOKENS * 500.0 / 1_000_000  # $0.50: input is free
COST = 3 * 500.0 / 1_000_000  # $0.0015


def test_a_call_costs_its_tokens_at_the_models_price_and_an_unpriced_one_is_unknown() -> None:
    # 1,500 in at $2/M and 250 out at $8/M: 0.003 + 0.002
    assert cost_usd((2.0, 8.0), (1500, 250)) == pytest.approx(0.005)
    assert cost_usd((2.0, 8.0), (1500, 250), 0.5) == pytest.approx(0.0025)  # a batch answer
    assert cost_usd(None, (1500, 250)) is None  # never 0
    settings = Settings(llm_prices={"m": (2.0, 8.0)})  # type: ignore[call-arg]
    assert prices_of(settings, "openai", "m") == (2.0, 8.0)
    assert prices_of(settings, "openai", "other") is None
    assert prices_of(settings, "rules", "rules-v1") == (0.0, 0.0)  # calls nothing: free


def test_a_budget_for_a_model_with_no_price_is_refused_before_any_call(
    con: duckdb.DuckDBPyConnection,
) -> None:
    unpriced = Settings(llm_backend="openai", llm_model="x", llm_budget_usd=1.0)  # type: ignore[call-arg]
    with pytest.raises(InputError, match="'x' has no price.*INSPIRE_LLM_PRICES"):
        check(unpriced)
    with pytest.raises(InputError, match="INSPIRE_LLM_PRICES"):
        LLM(unpriced, con)  # the LLM is never made, so nothing can be asked
    check(unpriced.model_copy(update={"llm_budget_usd": None}))  # no budget: nothing to keep
    check(unpriced.model_copy(update={"llm_prices": {"x": (1.0, 1.0)}}))
    check(unpriced.model_copy(update={"llm_backend": "rules"}))  # the rules backend is free


def test_the_budget_holds_calls_in_flight_and_refuses_the_one_that_would_pass_it() -> None:
    budget = Budget(0.01)
    budget.reserve(0.006, kept=3)
    with pytest.raises(BudgetExceeded) as refused:
        budget.reserve(0.005, kept=3)  # 0 spent + 0.006 in flight + 0.005 > 0.01
    assert str(refused.value) == (
        "LLM budget of $0.01 reached: $0 spent in this build and $0.006 held by the calls in "
        "flight; 3 call(s) kept in the call log; rerun with a larger budget (--llm-budget-usd, "
        "a deployment run's llm_budget_usd, or INSPIRE_LLM_BUDGET_USD), or none, to resume"
    )
    budget.settle(0.006, 0.004)  # the call came back costing less than its estimate
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(0.004), 0.0)
    budget.reserve(0.006, kept=4)  # 0.004 + 0.006 = 0.01: not past it
    with pytest.raises(BudgetExceeded, match=r"\$0\.004 spent"):
        budget.reserve(0.0001, kept=4)
    Budget(None).reserve(1e9, kept=0)  # no budget: no limit


def test_a_refusal_is_restated_with_the_spend_of_the_calls_in_flight_when_it_came() -> None:
    budget = Budget(0.01)
    budget.reserve(0.008, kept=0)  # in flight when the next call is refused
    with pytest.raises(BudgetExceeded) as refused:
        budget.reserve(0.008, kept=0)
    said = "$0 spent in this build and $0.008 held by the calls in flight; 0 call(s) kept"
    assert said in str(refused.value)
    budget.settle(0.008, 0.007)  # it ends, and its answer is kept
    budget.restate(kept=1)
    assert "$0.007 spent in this build; 1 call(s) kept" in str(refused.value)
    assert usd(12.345) == "$12.35" and usd(0.0015) == "$0.0015"


def endpoint_llm(con: duckdb.DuckDBPyConnection, sent: list[dict[str, Any]], **options: Any) -> LLM:
    settings = Settings(llm_backend="openai", llm_model="m", **options)  # type: ignore[call-arg]
    client = openai.OpenAI(
        api_key="k",
        base_url="http://llm.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(answering(sent))),
    )
    return LLM(settings, con, client=client)


def context(n: int) -> dict[str, Any]:
    return {"title": f"Title {n}", "abstract": "Long documents.", "redactions": [], "feedback": []}


def test_a_call_that_would_pass_the_budget_is_not_asked_and_a_rerun_asks_only_the_rest(
    con: duckdb.DuckDBPyConnection,
) -> None:
    sent: list[dict[str, Any]] = []
    # Call 1: 0 + 0.50 <= 0.502; call 2: 0.0015 + 0.50 <= 0.502; call 3: 0.003 + 0.50 > 0.502.
    llm = endpoint_llm(con, sent, llm_prices=PRICES, llm_budget_usd=0.502)
    llm.complete("brief", context(1), BriefDraft)
    llm.complete("brief", context(2), BriefDraft)
    with pytest.raises(BudgetExceeded) as refused:
        llm.complete("brief", context(3), BriefDraft)
    assert str(refused.value).startswith(
        "LLM budget of $0.502 reached: $0.003 spent in this build; 2 call(s) kept in the call log"
    )
    assert len(sent) == 2 and llm.budget.spent_usd == pytest.approx(2 * COST)
    assert llm.budget.reserved_usd == 0.0  # the refused call holds nothing
    logged = con.execute("SELECT cost_usd FROM llm_calls ORDER BY created_at").fetchall()
    assert logged == [(pytest.approx(COST),), (pytest.approx(COST),)]
    again = endpoint_llm(con, sent, llm_prices=PRICES)  # the rerun, with no budget
    for n in (1, 2, 3):
        again.complete("brief", context(n), BriefDraft)
    assert len(sent) == 3 and again.calls_made == 1  # only the refused call was asked


def test_the_estimate_is_the_prompts_words_and_an_answers_allowance() -> None:
    messages = [{"role": "user", "content": "one two three four five six"}]
    assert estimated_usage(messages) == (6 * 4 // 3, ANSWER_TOKENS)  # (8, 1000)
    budget = Budget(ESTIMATE - 1e-9)  # less than one call's allowance: nothing can be asked
    with pytest.raises(BudgetExceeded):
        budget.reserve(ESTIMATE, kept=0)


def test_an_unpriced_models_calls_cost_null_never_zero(con: duckdb.DuckDBPyConnection) -> None:
    sent: list[dict[str, Any]] = []
    endpoint_llm(con, sent, llm_prices={}).complete("brief", context(1), BriefDraft)
    assert con.execute("SELECT tokens_out, cost_usd FROM llm_calls").fetchall() == [(3, None)]


def test_a_batch_answer_is_held_at_the_batch_price_and_counted_when_recorded(
    con: duckdb.DuckDBPyConnection,
) -> None:
    sent: list[dict[str, Any]] = []
    llm = endpoint_llm(con, sent, llm_prices=PRICES, llm_budget_usd=0.26)
    llm.collecting = True
    with pytest.raises(Exception, match="waits for the next batch"):
        llm.complete("brief", context(1), BriefDraft)  # held: 0.50 x 0.5 = 0.25 <= 0.26
    assert llm.budget.reserved_usd == pytest.approx(ESTIMATE * 0.5)
    with pytest.raises(BudgetExceeded):
        llm.complete("brief", context(2), BriefDraft)  # 0.25 + 0.25 > 0.26
    (key,) = llm.pending
    body, model, prompt_name, input_hash = llm.pending[key]
    llm.record(key, BriefDraft(brief="B."), prompt_name, input_hash, (10, 3), 1.0, batch=True)
    assert llm.budget.reserved_usd == 0.0
    assert llm.budget.spent_usd == pytest.approx(COST * 0.5) and sent == []
    assert con.execute("SELECT cost_usd FROM llm_calls").fetchall() == [(pytest.approx(COST / 2),)]


def test_answers_of_targets_never_stored_are_kept_for_the_rerun(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """A budget's stop leaves targets unstored: their answered calls, in their journals only,
    are written to the log when the build's steps close (gold.Steps.close)."""
    sent: list[dict[str, Any]] = []
    llm = endpoint_llm(con, sent, llm_prices=PRICES)
    reader = con.cursor()
    with llm.journal(reader) as rows:
        llm.complete("brief", context(1), BriefDraft)
    assert len(rows) == 1 and con.execute("SELECT count(*) FROM llm_calls").fetchone() == (0,)
    assert llm.keep_unwritten(con) == 1 and llm.keep_unwritten(con) == 0
    reader.close()
    assert llm_log.logged_output(con, rows[0]["call_key"]) is not None
    endpoint_llm(con, sent).complete("brief", context(1), BriefDraft)
    assert len(sent) == 1  # the rerun asked nothing
