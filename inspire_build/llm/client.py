"""The LLM client: ``LLM.complete(prompt_name, context, output_model)`` renders a versioned
prompt from ``prompts/`` (HTML-autoescaped, so an abstract cannot close the ``<data>`` block it
sits in), answers from the call log when it can, else asks the backend in the call's turn,
within the budget, and logs the answer."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import pydantic

from inspire_build.config import Settings
from inspire_build.errors import LLMError
from inspire_build.llm import calls as call_log
from inspire_build.llm import shaping
from inspire_build.llm.backend import OpenAIBackend
from inspire_build.llm.calls import Asked, CallLog, Journal, Use
from inspire_build.llm.errors import Deferred, InvalidOutput, Refusal
from inspire_build.llm.scheduler import InFlight, Later, Scheduler, each
from inspire_build.llm_budget import Spending, estimated_usage
from inspire_build.llm_rules import RulesBackend, RulesFunction
from inspire_build.pacing import Pacer
from inspire_build.redaction import Redactor
from inspire_build.templates import Prompt, load_prompts

if TYPE_CHECKING:
    import contextlib

    from inspire_build.llm.backend import OpenAIClient


Output = TypeVar("Output", bound=pydantic.BaseModel)
T = TypeVar("T")


class LLM:
    """Structured LLM calls through one backend (``openai``, or the ``rules`` given), logged and
    cached in ``llm_calls``; ``urgency``, ``slots`` and ``limiter``: see :class:`Scheduler`."""

    def __init__(
        self,
        settings: Settings,
        con: duckdb.DuckDBPyConnection,
        *,
        rules: Mapping[str, RulesFunction] | None = None,
        client: OpenAIClient | None = None,
        urgency: Mapping[str, int] | None = None,
        slots: InFlight | None = None,
        limiter: Pacer | None = None,
    ) -> None:
        self.settings = settings
        self.backend = settings.llm_backend
        self.model = settings.model_name
        # What this build may spend and has spent, over every thread (a Dask worker: its own).
        self.spending = Spending(settings, self.backend, self.model)
        self.budget = self.spending.budget
        self.prompts = load_prompts()
        self.redactor = Redactor.for_settings(settings)
        self.openai = OpenAIBackend(settings, self.model, self.redactor, client)
        self.rules = RulesBackend(rules or {})
        self.calls = CallLog(con, self.backend, self.model)
        self.scheduler = Scheduler(settings, urgency, slots, limiter)
        self.calls_made = 0  # calls that reached the backend (not served from the log)
        self._lock = threading.Lock()
        # Batch mode: a miss records its request here and raises Deferred (see batch.py).
        self.collecting = False
        self.pending: dict[str, tuple[dict[str, Any], type[pydantic.BaseModel], str, str]] = {}
        self.direct: set[str] = set()  # requests a batch failed to answer: asked one by one

    def prompt_hash(self, name: str) -> str:
        return self._prompt(name).hash

    def _prompt(self, name: str) -> Prompt:
        try:
            return self.prompts[name]
        except KeyError:
            known = ", ".join(sorted(self.prompts))
            raise LLMError(f"no prompt {name!r}; known: {known}") from None

    def warm_up(self) -> None:
        """Make the OpenAI client now, in a thread of its own (the rules backend has none)."""
        if self.backend == "openai":
            self.openai.warm_up()

    def client(self) -> OpenAIClient:
        """The OpenAI client: one for every thread (it is thread-safe)."""
        return self.openai.client()

    def request_body(self, text: str, model: type[pydantic.BaseModel]) -> dict[str, Any]:
        """The chat completion request ``complete`` sends, as a Batch API line's body."""
        return self.openai.request_body(text, model)

    def complete(
        self,
        prompt_name: str,
        context: Mapping[str, Any],
        output_model: type[Output],
        *,
        validate: Callable[[Output], None] | None = None,
        step: str | None = None,
    ) -> Output:
        """One structured answer. ``validate`` may raise ValueError to ask for one repair.
        ``step`` names what the call is for when the prompt's name does not say it (a grading's
        deciding reading): its urgency for a slot."""
        prompt = self._prompt(prompt_name)
        text = prompt.render(context)
        options = shaping.options(self.settings) if self.backend != "rules" else {}
        input_hash = call_log.input_hash(text, output_model, context, options)
        key = call_log.call_key(self.backend, self.model, prompt.hash, input_hash)
        with self.calls.single_flight(key):
            asked = Asked(key, prompt_name, prompt.hash, input_hash, step or prompt_name)
            return self._answer(asked, text, context, output_model, validate)

    def _answer(
        self,
        asked: Asked,
        text: str,
        context: Mapping[str, Any],
        output_model: type[Output],
        validate: Callable[[Output], None] | None,
    ) -> Output:
        """The answer from the log (or a twin call's), else from the backend, logged."""
        key, prompt_name, _, input_hash, step = asked
        logged = self.calls.logged(key)
        if logged is not None:
            answer = output_model.model_validate_json(logged)
            try:
                if validate is not None:
                    validate(answer)
                self.calls.used(Use(key, step, cached=True))
                return answer
            except ValueError:
                # A logged answer that fails today's check (a batch's answer is checked only
                # against the schema) is asked again, directly: a batch would answer the same
                # request the same way, and only a direct call has the repair retry.
                self.direct.add(key)
        if self.collecting and self.backend == "openai" and key not in self.direct:
            body = self.request_body(text, output_model)
            self.spending.hold_batch(key, estimated_usage(body["messages"]), self.calls_made)
            self.pending[key] = (body, output_model, prompt_name, input_hash)
            raise Deferred(f"{prompt_name} waits for the next batch")
        self.spending.leave_batch(key)  # a batch left it: asked here
        started = time.perf_counter()
        if self.backend == "rules":
            try:  # the rules have no repair retry: an answer that does not fit is final
                answer = self.rules.answer(prompt_name, context, output_model, validate)
            except ValueError as error:  # pydantic's ValidationError included
                first = str(error).splitlines()[:3]
                raise InvalidOutput(f"the rules answer is invalid: {' '.join(first)}") from error
            tokens = (0, 0)
        else:
            urgency = self.scheduler.urgency_of(step, self.calls.rank())
            try:
                ask = functools.partial(self._paid, urgency=urgency)
                answer, tokens = self.openai.answer(text, output_model, validate, ask)
            except (Refusal, InvalidOutput) as error:
                # Paid for but not an answer: logged with its tokens, never served from the log.
                status = "refused" if isinstance(error, Refusal) else "invalid"
                spent = (time.perf_counter() - started) * 1000
                cost, failed = self.spending.cost(error.tokens), {"error": str(error)}
                with self._lock:  # made, as the call log and `inspire cost` count it
                    self.calls_made += 1
                self.calls.log(self.calls.record(asked, failed, error.tokens, spent, cost), status)
                self.calls.used(Use(key, step, cached=False))
                raise
        latency = (time.perf_counter() - started) * 1000
        self.record(key, answer, prompt_name, input_hash, tokens, latency)
        self.calls.used(Use(key, step, cached=False))
        return answer

    def _paid(
        self, messages: list[dict[str, str]], model: type[Output], urgency: tuple[int, ...]
    ) -> Any:
        """One chat call's raw answer, in its turn (Scheduler.sent), paid for (Spending.paid)."""
        estimate = estimated_usage(messages)
        send = functools.partial(self._send, messages, model)
        sent = functools.partial(self.scheduler.sent, send, sum(estimate), urgency)
        return self.spending.paid(estimate, self.calls_made, sent, shaping.usage_of)

    def _send(self, messages: list[dict[str, str]], model: type[pydantic.BaseModel]) -> Any:
        """The raw chat call: where every call to the endpoint leaves (tests watch it here)."""
        return self.openai.send(messages, model)

    def record(
        self,
        key: str,
        answer: pydantic.BaseModel,
        prompt_name: str,
        input_hash: str,
        tokens: tuple[int, int],
        latency_ms: float,
        *,
        batch: bool = False,
    ) -> None:
        """Log an answer (one obtained outside ``complete`` too: a ``batch`` answer, costed at
        the Batch API's price), so ``complete`` finds it."""
        asked = Asked(key, prompt_name, self.prompt_hash(prompt_name), input_hash, prompt_name)
        output, cost = answer.model_dump(mode="json"), self.spending.cost(tokens, batch)
        record = self.calls.record(asked, output, tokens, latency_ms, cost)
        if record.call_key != key:
            raise LLMError(f"batch answer {key[:12]} does not match its request")
        if batch:  # a direct call was counted as it returned (_paid)
            self.spending.leave_batch(key, record.cost_usd or 0.0)
        with self._lock:
            self.calls_made += 1
        self.calls.log(record)

    def journal(
        self, reader: duckdb.DuckDBPyConnection, rows: Journal | None = None, rank: int = 0
    ) -> contextlib.AbstractContextManager[Journal]:
        """This thread's journal (:meth:`CallLog.journal`), for the caller to write with the
        results its rows led to; ``rank``, the target's place, breaks urgency's ties."""
        return self.calls.journal(reader, rows, rank)

    def each(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Independent ``calls`` (a target's grading parts, a brief's audits) at once, up to
        ``llm_concurrency``, their rows in this thread's journal (scheduler.each)."""
        return each(calls, self._handing(), self.settings.llm_concurrency)

    def later(self, call: Callable[[], T]) -> Later[T]:
        """``call`` (a target's grading), to run beside the rest of its steps where :meth:`each`
        runs calls at once (:class:`Later`)."""
        return Later(call, self._handing())

    def _handing(self) -> Callable[[Callable[[], T]], Callable[[], T]] | None:
        """How a call goes to a thread beside this one (CallLog.handed), where calls may run at
        once: in a journal, with an endpoint to wait for, outside batch mode (else None)."""
        beside = self.calls.inside() and self.backend != "rules" and not self.collecting
        return self.calls.handed if beside else None

    def written(self, keys: Iterable[str]) -> None:
        """These calls are in the log now: the log answers them from here on."""
        self.calls.written(keys)

    def keep_unwritten(self, con: duckdb.DuckDBPyConnection) -> int:
        """Log the paid answers of targets whose records were never written (a build stopped by
        its budget or an error), once their threads are done, for a rerun; returns how many. A
        budget's refusal then states the build's final spend and the calls kept."""
        kept = self.calls.keep_unwritten(con)
        self.budget.restate(self.calls_made)
        return kept
