"""Tool-calling chat turns with one model, for an agent on the search environment.

Each turn takes the pipeline's path to the endpoint: the OpenAI backend (``backend.py``, the one
module that imports openai), the scheduler's turn under the provider's limits and in a slot
among the calls in flight (``llm_concurrency``), the build budget's reservation and price
(``llm_budget.Spending``), and the settings' secrets redacted from every error.

Each answer is logged in ``llm_calls`` (``CallLog``) under ``prompt_name`` ``agent``, with its
tokens, latency and cost, and the ``status`` the caller judged it (``answered``, ``refused``,
``invalid``, ``late``): ``inspire stats llm`` counts them. A call's key hashes the run's name
and the instance's place with the conversation, so every turn of a run keeps its own row (two
instances with one brief included); an agent's turn is never answered from the log.
Agent runs are no builds, so the cost ledger (``llm_call_uses``, ``inspire cost``) holds none.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from inspire_build.config import Settings
from inspire_build.llm.backend import OpenAIBackend
from inspire_build.llm.calls import Asked, CallLog, call_key
from inspire_build.llm.scheduler import Scheduler
from inspire_build.llm.shaping import sampling, usage_of
from inspire_build.llm_budget import Spending, estimated_usage
from inspire_build.redaction import Redactor

if TYPE_CHECKING:
    from inspire_build.llm.backend import OpenAIClient

BACKEND = "openai"  # an agent's model is always an endpoint's: the rules backend plays no agent
STEP = "agent"  # the calls' prompt_name in llm_calls


@dataclasses.dataclass(frozen=True)
class Turn:
    """One answer: the assistant's message as the endpoint sent it, why it stopped, the tokens
    it used (input, output), how long it took, and what it cost (None: the model has no
    price)."""

    message: dict[str, Any]
    finish_reason: str | None
    tokens: tuple[int, int]
    latency_ms: float
    cost_usd: float | None


@dataclasses.dataclass
class Totals:
    """What a chat's turns used, over every thread."""

    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0  # turns of a model with no price: left out of cost_usd


class ToolChat:
    """Turns of a tool-calling chat with ``settings.llm_model`` at ``settings.llm_base_url``
    (the client ``client``, else one made from the settings), logged through a connection of
    its own to ``con``'s warehouse under ``format_hash`` (the chat format's); ``scope`` (the
    run's name) keys its calls apart. Shared by the threads of a run."""

    def __init__(
        self,
        settings: Settings,
        con: duckdb.DuckDBPyConnection,
        format_hash: str,
        *,
        scope: str,
        client: OpenAIClient | None = None,
    ) -> None:
        self.settings, self.model, self.scope = settings, settings.llm_model, scope
        self.prompt_hash = format_hash  # the chat format's, as a prompt template's hash
        self.redactor = Redactor.for_settings(settings)
        self.backend = OpenAIBackend(settings, self.model, self.redactor, client)
        self.scheduler = Scheduler(settings)
        self.spending = Spending(settings, BACKEND, self.model)
        self._cursor = con.cursor()  # a connection of its own: turns are logged from threads
        self.calls = CallLog(self._cursor, BACKEND, self.model)
        self.totals = Totals()
        self._lock = threading.Lock()

    def turn(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        timeout_s: float | None = None,
        rank: int = 0,
    ) -> Turn:
        """The model's next message in the conversation ``messages``, which may call ``tools``;
        ``rank`` (the instance's place) orders calls waiting for a slot. Raises ChatTimeout,
        LLMError, LLMConfigError or BudgetExceeded, each with its message redacted."""
        sent, offered = list(messages), list(tools)
        stated = json.dumps(sent) + " " + json.dumps(offered)
        estimate = estimated_usage([{"content": stated}])
        send = functools.partial(self.backend.send_tools, sent, offered, timeout_s)
        sent_in_turn = functools.partial(self.scheduler.sent, send, sum(estimate), (0, rank))
        started = time.perf_counter()
        answer: list[Any] = []

        def ask() -> Any:
            raw = self.spending.paid(estimate, self.totals.turns, sent_in_turn, usage_of)
            answer.append(raw)
            return raw

        message, finish = self.backend.tool_turn(ask)
        tokens = usage_of(answer[0])
        cost = self.spending.cost(tokens if any(tokens) else estimate)
        turn = Turn(message, finish, tokens, (time.perf_counter() - started) * 1000, cost)
        self._count(turn)
        return turn

    def log(
        self,
        messages: Sequence[dict[str, Any]],
        turn: Turn,
        status: str = "answered",
        error: str | None = None,
        rank: int = 0,
    ) -> None:
        """Log ``turn``, the answer to ``messages`` on the instance of place ``rank``, with the
        ``status`` it was judged (and the ``error`` that judged it, if any)."""
        asked = {"scope": self.scope, "rank": rank, "messages": list(messages)}
        asked_for = json.dumps(asked, sort_keys=True)
        options = json.dumps(sampling(self.backend.settings), sort_keys=True)
        input_hash = hashlib.sha256(f"{asked_for}\0{options}".encode()).hexdigest()
        key = call_key(BACKEND, self.model, self.prompt_hash, input_hash)
        keyed = Asked(key, STEP, self.prompt_hash, input_hash, STEP)
        output: dict[str, Any] = {"message": turn.message, "finish_reason": turn.finish_reason}
        if error is not None:
            output["error"] = self.redactor.text(error)
        record = self.calls.record(keyed, output, turn.tokens, turn.latency_ms, turn.cost_usd)
        self.calls.log(record, status)

    def close(self) -> None:
        self._cursor.close()

    def _count(self, turn: Turn) -> None:
        with self._lock:
            totals = self.totals
            totals.turns += 1
            totals.tokens_in += turn.tokens[0]
            totals.tokens_out += turn.tokens[1]
            if turn.cost_usd is None:
                totals.unpriced += 1
            else:
                totals.cost_usd += turn.cost_usd
