"""What LLM calls cost, and a build's budget for them.

Prices are ``Settings.llm_prices``: USD per million tokens, input and output. A model with no
price has an unknown cost, ``None`` (NULL in ``llm_calls.cost_usd``), never 0: a SQL ``sum``
over the log is then what the priced calls cost, and the unpriced ones are counted apart
(``inspire cost`` names their models). The rules backend calls nothing and costs 0.

A budget (``Settings.llm_budget_usd``) is kept per build, before each call the backend is asked
(an answer from the call log costs nothing and is never refused). The call's estimated cost, its
prompt's tokens plus an answer's allowance at the model's price (times the batch factor for a
Batch API request), is reserved first; the call is refused with :class:`BudgetExceeded` when
what was spent, what is reserved for the calls in flight, and it would pass the budget. When the
call returns, its reservation gives way to what it cost (its reported tokens; the estimate where
the server reports none). A call whose answer is longer than the allowance may pass the budget
by that difference.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from inspire_build.config import Settings
from inspire_build.errors import BudgetExceeded, InputError

# USD per million tokens: (input, output).
Prices = tuple[float, float]
ANSWER_TOKENS = 1000  # what a structured answer is budgeted, as providers count max_tokens
R = TypeVar("R")


def estimated_usage(messages: list[dict[str, str]]) -> tuple[int, int]:
    """A call's (input, output) tokens before the server counts them: about 4/3 a word of the
    prompt, and an answer's allowance."""
    words = sum(len(m["content"].split()) for m in messages)
    return words * 4 // 3, ANSWER_TOKENS


def prices_of(settings: Settings, backend: str, model: str) -> Prices | None:
    """The model's prices; the rules backend is free; None: the model has no price."""
    if backend == "rules":
        return (0.0, 0.0)
    return settings.llm_prices.get(model)


def cost_usd(prices: Prices | None, tokens: tuple[int, int], factor: float = 1.0) -> float | None:
    """What ``tokens`` (input, output) cost at ``prices`` times ``factor``; None when unpriced."""
    if prices is None:
        return None
    return (tokens[0] * prices[0] + tokens[1] * prices[1]) / 1_000_000 * factor


def check(settings: Settings) -> None:
    """Refuse, before any call, a budget that cannot be kept: one for a model with no price."""
    if settings.llm_budget_usd is None or settings.llm_backend == "rules":
        return
    model = settings.llm_model
    if prices_of(settings, settings.llm_backend, model) is None:
        raise InputError(
            f"INSPIRE_LLM_BUDGET_USD is set, but the model {model!r} has no price, so no call's "
            f"cost can be counted against it; give it one in INSPIRE_LLM_PRICES (USD per million "
            f"input and output tokens), e.g. INSPIRE_LLM_PRICES='{{\"{model}\": [0.15, 0.6]}}'"
        )


def usd(amount: float | None) -> str:
    """An amount as a message shows it: cents from a dollar up, else four significant digits;
    None (calls of a model with no price) is "unknown", never $0."""
    if amount is None:
        return "unknown"
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4g}"


class Budget:
    """What one build may spend on LLM calls (``limit_usd``; None: no limit) and has spent;
    shared by the build's threads."""

    def __init__(self, limit_usd: float | None) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        self.reserved_usd = 0.0  # the estimates of the calls in flight
        self.refusals: list[BudgetExceeded] = []  # the errors raised, restated at the end
        self._lock = threading.Lock()

    def reserve(self, estimate_usd: float, kept: int) -> None:
        """Hold ``estimate_usd`` for a call about to be asked, or refuse it: the build has
        answered ``kept`` calls, which the call log keeps."""
        with self._lock:
            limit = self.limit_usd
            if limit is not None and self.spent_usd + self.reserved_usd + estimate_usd > limit:
                refused = BudgetExceeded(_reached(limit, self.spent_usd, kept, self.reserved_usd))
                self.refusals.append(refused)
                raise refused
            self.reserved_usd += estimate_usd

    def settle(self, estimate_usd: float, cost: float) -> None:
        """A call held with ``estimate_usd`` has ended, costing ``cost`` (0: it failed unpaid)."""
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - estimate_usd)
            self.spent_usd += cost

    def restate(self, kept: int) -> None:
        """Once the calls in flight at a refusal have ended (and their answers are kept), give
        each refusal's message the build's final spend and its ``kept`` calls: the message the
        build ends with then says what it did, not what it had done when the budget was hit."""
        with self._lock:
            for refused in self.refusals:
                if self.limit_usd is not None:
                    refused.args = (_reached(self.limit_usd, self.spent_usd, kept),)


class Spending:
    """What an LLM client's calls cost at its model's ``prices``, kept against the build's
    :class:`Budget` (refused before any call when it cannot be kept: :func:`check`)."""

    def __init__(self, settings: Settings, backend: str, model: str) -> None:
        check(settings)  # a budget for a model with no price: refused before any call
        self.prices = prices_of(settings, backend, model)
        self.budget = Budget(settings.llm_budget_usd)
        self.batch_factor = settings.llm_batch_price_factor
        self._batch_held: dict[str, float] = {}  # batch requests' estimates, until answered

    def cost(self, tokens: tuple[int, int], batch: bool = False) -> float | None:
        """What ``tokens`` cost (at the Batch API's price for a ``batch`` answer); None for a
        model with no price."""
        return cost_usd(self.prices, tokens, self.batch_factor if batch else 1.0)

    def paid(
        self,
        estimate: tuple[int, int],
        kept: int,
        ask: Callable[[], R],
        reported: Callable[[R], tuple[int, int]],
    ) -> R:
        """``ask()``, one call estimated at ``estimate`` tokens, held against the budget while it
        is asked (refused with BudgetExceeded if it would pass it; ``kept``: the calls answered
        so far), then counted at the tokens its answer ``reported`` (else the estimate)."""
        held = self.cost(estimate) or 0.0  # unpriced: only without a budget (check)
        spent = 0.0
        self.budget.reserve(held, kept)
        try:
            answer = ask()
            tokens = reported(answer)
            spent = self.cost(tokens if any(tokens) else estimate) or 0.0
        finally:
            self.budget.settle(held, spent)
        return answer

    def hold_batch(self, key: str, estimate: tuple[int, int], kept: int) -> None:
        """Hold a batch request's estimated cost (at the batch price) until its answer is
        recorded, once however many rounds it waits (refused if it would pass the budget)."""
        if key in self._batch_held:
            return
        held = self.cost(estimate, batch=True) or 0.0
        self.budget.reserve(held, kept)
        self._batch_held[key] = held

    def leave_batch(self, key: str, cost: float = 0.0) -> None:
        """A request held for a batch (if it was) is answered, costing ``cost``, or is asked
        directly (0: that call is counted as it returns)."""
        self.budget.settle(self._batch_held.pop(key, 0.0), cost)


def _reached(limit: float, spent: float, kept: int, held: float = 0.0) -> str:
    """``held``: what the calls in flight when a call was refused may cost (they are paid, and
    the message restated, once they end)."""
    flight = f" and {usd(held)} held by the calls in flight" if held else ""
    return (
        f"LLM budget of {usd(limit)} reached: {usd(spent)} spent in this build{flight}; {kept} "
        "call(s) kept in the call log; rerun with a larger budget (--llm-budget-usd, a "
        "deployment run's llm_budget_usd, or INSPIRE_LLM_BUDGET_USD), or none, to resume"
    )
