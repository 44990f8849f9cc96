"""The only module that imports openai: prompts, structured calls, the call log and its cache.

``LLM.complete(prompt_name, context, output_model)`` renders a versioned prompt from
``prompts/``, asks the configured backend for an answer that validates against
``output_model``, and logs the call in ``llm_calls``. The log doubles as a cache: a call whose
backend, model, prompt hash and input hash are already logged is answered from the log, so an
identical rerun makes no calls.

Backends:

- ``openai``: any OpenAI-compatible endpoint, through ``chat.completions.parse`` with a strict
  JSON schema. Every call has a timeout; transient failures are retried by the client; an
  answer that does not validate gets one repair retry with the error as feedback; a refusal
  raises :class:`Refusal`.
- ``rules``: offline and deterministic (``llm_rules.py``), with the same interface.

Paper text reaches a prompt only as data: templates are rendered with HTML autoescaping, so an
abstract cannot close the ``<data>`` block it sits in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import duckdb
import pydantic

from inspire_build import llm_budget
from inspire_build.config import Settings
from inspire_build.errors import InspireError, LLMError
from inspire_build.llm_limits import CallLimiter, InFlight, Slots
from inspire_build.redaction import Redactor
from inspire_build.tables import llm_log
from inspire_build.templates import Prompt, load_prompts

if TYPE_CHECKING:  # openai takes 1.5 s to import: only a call to the endpoint pays for it
    import openai

    # The client type, for callers that pass one in (tests, proxies) without importing openai.
    OpenAIClient = openai.OpenAI

RULES_MODEL = "rules-v1"

Output = TypeVar("Output", bound=pydantic.BaseModel)
T = TypeVar("T")


class Refusal(LLMError):
    """The model refused to answer. ``tokens``: what the refused call (and any repair) used."""

    def __init__(self, message: str, tokens: tuple[int, int] = (0, 0)) -> None:
        super().__init__(message)
        self.tokens = tokens


class InvalidOutput(LLMError):
    """The answer did not validate, even after the repair retry. ``tokens``: what both used."""

    def __init__(self, message: str, tokens: tuple[int, int] = (0, 0)) -> None:
        super().__init__(message)
        self.tokens = tokens


class Deferred(LLMError):
    """Batch mode: the answer is not in the log yet; the request waits for the next batch."""


class LLMConfigError(InspireError):
    """The endpoint refused the key, the permission or the model (401, 403, 404): no target can
    succeed, so the build stops at once. Not an LLMError, which is one target's failure."""


def api_error() -> type[openai.APIError]:
    """The class of the endpoint's errors, for callers that catch them without importing openai
    (an endpoint call has imported it already)."""
    import openai

    return openai.APIError


def failure(error: openai.APIError, redactor: Redactor, doing: str) -> InspireError:
    """The error to raise for a failed call, its message redacted (a 401 body may echo the key):
    :class:`LLMConfigError` for a refused configuration, else :class:`LLMError`."""
    import openai

    message = redactor.text(str(error))
    # A configuration the endpoint refuses: every later call would fail the same way.
    fatal = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)
    if isinstance(error, fatal):
        return LLMConfigError(
            f"the LLM endpoint refused {doing} (HTTP {error.status_code}): {message}; check "
            "INSPIRE_LLM_API_KEY, INSPIRE_LLM_MODEL and INSPIRE_LLM_BASE_URL"
        )
    if isinstance(error, openai.APITimeoutError):
        return LLMError(f"{doing} timed out after retries: {message}")
    return LLMError(f"{doing} failed: {message}")


# A rules function answers one prompt from its context, offline.
RulesFunction = Callable[[Mapping[str, Any]], pydantic.BaseModel]


@dataclasses.dataclass(frozen=True)
class CallRecord:
    backend: str
    model: str
    prompt_name: str
    prompt_hash: str
    input_hash: str
    output: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    cost_usd: float | None  # None: the model has no price (llm_budget)

    @property
    def call_key(self) -> str:
        return call_key(self.backend, self.model, self.prompt_hash, self.input_hash)


def call_key(backend: str, model: str, prompt_hash: str, input_hash: str) -> str:
    return hashlib.sha256("\0".join((backend, model, prompt_hash, input_hash)).encode()).hexdigest()


@functools.cache
def schema_text(model: type[pydantic.BaseModel]) -> str:
    """A model's JSON schema as a call's key hashes it and a ``json_object`` prompt states it:
    built once per model (pydantic builds it anew on every ask, for every call)."""
    return json.dumps(model.model_json_schema(), sort_keys=True)


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """A call's tokens for the limiter, before the server counts them: about 4/3 a word, plus
    room for the answer."""
    return sum(estimated_usage(messages))


def estimated_usage(messages: list[dict[str, str]]) -> tuple[int, int]:
    """A call's (input, output) tokens before the server counts them: about 4/3 a word of the
    prompt, and an answer's allowance."""
    words = sum(len(m["content"].split()) for m in messages)
    return words * 4 // 3, ANSWER_TOKENS


ANSWER_TOKENS = 1000  # what a structured answer is budgeted, as providers count max_tokens
# json_object mode: what the prompt adds before the answer's JSON schema.
JSON_OBJECT_ASK = "Answer with one JSON object, and nothing else, that matches this JSON schema:"


class _Unreadable(Exception):
    """An answer that is not the schema's JSON, with the tokens its call used."""

    def __init__(self, problem: str, tokens: tuple[int, int]) -> None:
        super().__init__(problem)
        self.problem, self.tokens = problem, tokens


def _problem(error: ValueError) -> str:
    """What was wrong with an answer, in one line, for the repair prompt."""
    if isinstance(error, pydantic.ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
        )
    return str(error).splitlines()[0]


def _usage(raw: Any) -> tuple[int, int]:
    """The tokens a raw response reports (0, 0 when it reports none)."""
    try:
        usage = raw.http_response.json().get("usage") or {}
    except (AttributeError, ValueError):
        return (0, 0)
    return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))


class _Asked(NamedTuple):
    key: str
    prompt_name: str
    input_hash: str
    text: str
    step: str  # what the call is for, which sets its urgency: the prompt's name unless told


class Use(NamedTuple):
    """One call a target's steps used: asked of the backend, or ``cached`` (answered from the
    call log, or from a twin target's call), for ``step`` (the prompt, or grade_deciding)."""

    call_key: str
    step: str
    cached: bool


class Journal(list[dict[str, Any]]):
    """A target's new call-log rows (:meth:`LLM.journal`), and in ``uses`` every call its steps
    used, the answers from the log included: the cost ledger's rows (``llm_call_uses``)."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: list[Use] = []


def uses_of(calls: Sequence[dict[str, Any]]) -> list[Use]:
    """The calls a target used, where ``calls`` is its journal (else none are known)."""
    return list(calls.uses) if isinstance(calls, Journal) else []


class LLM:
    """Structured LLM calls through one backend, logged and cached in ``llm_calls``."""

    def __init__(
        self,
        settings: Settings,
        con: duckdb.DuckDBPyConnection,
        *,
        rules: Mapping[str, RulesFunction] | None = None,
        client: openai.OpenAI | None = None,
        urgency: Mapping[str, int] | None = None,
        slots: InFlight | None = None,
        limiter: CallLimiter | None = None,
    ) -> None:
        llm_budget.check(settings)  # a budget for a model with no price: refused before any call
        self.settings = settings
        self.backend = settings.llm_backend
        self.model = RULES_MODEL if self.backend == "rules" else settings.llm_model
        self.prices = llm_budget.prices_of(settings, self.backend, self.model)
        # What this build may spend and has spent, over every thread (a Dask worker: its own).
        self.budget = llm_budget.Budget(settings.llm_budget_usd)
        self._batch_held: dict[str, float] = {}  # batch requests' estimates, until answered
        self.prompts = load_prompts()
        self._con = con
        self._lock = threading.Lock()
        self._rules = dict(rules or {})
        self._client = client
        self.redactor = Redactor.for_settings(settings)
        self.calls_made = 0  # calls that reached the backend (not served from the log)
        # shared by every thread (a Dask worker's: its share of the cluster's rpm and tpm)
        self.limiter = limiter or CallLimiter(settings.llm_rpm, settings.llm_tpm)
        # Chat calls in flight, over every thread (targets at once, and each target's parts); a
        # free slot goes to the prompt of lowest ``urgency``, then to the target of lowest rank.
        self.slots = slots or Slots(settings.llm_concurrency)
        self._urgency = dict(urgency or {})
        # Inside journal(): this thread's new call-log rows and the cursor it reads the log with.
        self._local = threading.local()
        # Targets in threads: a call asked by one thread waits for a twin (the same key) another
        # is asking, then takes its answer, so a key is asked once per build at any concurrency,
        # as one at a time would (the second target is answered from the log).
        self._flying: dict[str, threading.Event] = {}
        self._shared: dict[str, dict[str, Any]] = {}  # answered by a thread, maybe not written
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
            raise LLMError(
                f"no prompt {name!r}; known: {', '.join(sorted(self.prompts))}"
            ) from None

    def warm_up(self) -> None:
        """Make the OpenAI client in a thread of its own (importing openai takes about half a
        second), so that a build's first chat call does not wait for it while lineage runs."""
        if self.backend == "openai" and self._client is None:
            threading.Thread(target=self.client, name="llm-warm-up", daemon=True).start()

    def client(self) -> openai.OpenAI:
        """The OpenAI client, made on first use from the settings (or the one passed in); one for
        every thread (it is thread-safe)."""
        with self._lock:
            return self._client or self._made_client()

    def _made_client(self) -> openai.OpenAI:
        import openai

        key = self.settings.llm_api_key
        self._client = openai.OpenAI(
            api_key=key.get_secret_value() if key else "not-needed",
            base_url=self.settings.llm_base_url,
            timeout=self.settings.llm_timeout_s,
            max_retries=self.settings.llm_max_retries,
        )
        return self._client

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
        schema = schema_text(output_model)
        # The whole context, not only the rendered text: the rules backend may read data the
        # template does not show, and a cache hit must mean the same question.
        data = json.dumps(context, sort_keys=True, default=str)
        asked = f"{text}\0{schema}\0{data}"
        if options := self.options():  # set options change the answer; unset keep old keys
            asked += "\0" + json.dumps(options, sort_keys=True)
        input_hash = hashlib.sha256(asked.encode()).hexdigest()
        key = call_key(self.backend, self.model, prompt.hash, input_hash)
        with self._single_flight(key):
            question = _Asked(key, prompt_name, input_hash, text, step or prompt_name)
            return self._answer(question, context, output_model, validate)

    def _answer(
        self,
        asked: _Asked,
        context: Mapping[str, Any],
        output_model: type[Output],
        validate: Callable[[Output], None] | None,
    ) -> Output:
        """The answer from the log (or a twin call's), else from the backend, logged."""
        key, prompt_name, input_hash, text, step = asked
        cached = self._logged(key)
        if cached is not None:
            answer = output_model.model_validate_json(cached)
            try:
                if validate is not None:
                    validate(answer)
                self._used(Use(key, step, cached=True))
                return answer
            except ValueError:
                # A logged answer that fails today's check (a batch's answer is checked only
                # against the schema) is asked again, directly: a batch would answer the same
                # request the same way, and only a direct call has the repair retry.
                self.direct.add(key)
        if self.collecting and self.backend == "openai" and key not in self.direct:
            body = self.request_body(text, output_model)
            self._hold_for_batch(key, body["messages"])
            self.pending[key] = (body, output_model, prompt_name, input_hash)
            raise Deferred(f"{prompt_name} waits for the next batch")
        self.budget.settle(self._batch_held.pop(key, 0.0), 0.0)  # a batch left it: asked here
        started = time.perf_counter()
        if self.backend == "rules":
            try:  # the rules have no repair retry: an answer that does not fit is final
                answer, tokens = self._rules_answer(prompt_name, context, output_model), (0, 0)
                if validate is not None:
                    validate(answer)
            except ValueError as error:  # pydantic's ValidationError included
                first = str(error).splitlines()[:3]
                raise InvalidOutput(f"the rules answer is invalid: {' '.join(first)}") from error
        else:
            try:
                answer, tokens = self._openai_answer(step, text, output_model, validate)
            except (Refusal, InvalidOutput) as error:
                # Paid for but not an answer: logged with its tokens, never served from the log.
                status = "refused" if isinstance(error, Refusal) else "invalid"
                failed = {"error": str(error)}
                spent = (time.perf_counter() - started) * 1000
                self._log(
                    self._record(prompt_name, input_hash, failed, error.tokens, spent), status
                )
                self._used(Use(key, step, cached=False))
                raise
        latency = (time.perf_counter() - started) * 1000
        self.record(key, answer, prompt_name, input_hash, tokens, latency)
        self._used(Use(key, step, cached=False))
        return answer

    def _rules_answer(self, name: str, context: Mapping[str, Any], model: type[Output]) -> Output:
        function = self._rules.get(name)
        if function is None:
            raise LLMError(f"the rules backend has no answer for prompt {name!r}")
        return model.model_validate(function(context).model_dump())

    def _openai_answer(
        self,
        step: str,
        text: str,
        model: type[Output],
        validate: Callable[[Output], None] | None,
    ) -> tuple[Output, tuple[int, int]]:
        import openai

        messages = self.messages(text)
        used = [0, 0]
        urgency = (self._urgency.get(step, len(self._urgency)), self._rank())
        for attempt in range(2):  # the first answer, and one repair
            try:
                completion = self._parse(messages, model, urgency)
            except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as error:
                # OpenAIErrors, not APIErrors: the answer was cut at max_tokens or filtered
                raise InvalidOutput(
                    f"the model stopped early: {error}", (used[0], used[1])
                ) from error
            except openai.APIError as error:
                raise failure(error, self.redactor, "the LLM call") from error
            except _Unreadable as error:
                problem, raw = error.problem, ""
                used = [used[0] + error.tokens[0], used[1] + error.tokens[1]]
            else:
                usage = completion.usage
                if usage is not None:
                    used[0] += usage.prompt_tokens
                    used[1] += usage.completion_tokens
                message = completion.choices[0].message
                if message.refusal:
                    raise Refusal(f"the model refused: {message.refusal}", (used[0], used[1]))
                raw = message.content or ""
                parsed = message.parsed
                if parsed is None:
                    problem = "the answer was empty"
                else:
                    try:
                        if validate is not None:
                            validate(parsed)
                        return parsed, (used[0], used[1])
                    except ValueError as error:
                        problem = str(error)
            if attempt == 0:
                messages += [
                    {"role": "assistant", "content": raw or "(unreadable answer)"},
                    {
                        "role": "user",
                        "content": "Your answer was invalid: "
                        f"{problem}. Answer again, following the schema and every rule.",
                    },
                ]
        raise InvalidOutput(
            f"the answer stayed invalid after a repair retry: {problem}", (used[0], used[1])
        )

    def _parse(
        self, messages: list[dict[str, str]], model: type[Output], urgency: tuple[int, ...] = ()
    ) -> Any:
        """One chat call in its turn under the limits (``CallLimiter``) and the budget, its answer
        parsed. A 429 that outlasts the client's own retries waits as the server asks and asks
        again, without failing the target, until ``llm_rate_wait_max_s`` of waiting is spent."""
        import openai

        raw = self._paid(messages, model, urgency)
        try:
            if self.settings.llm_response_format == "json_schema":
                return raw.parse()
            # json_object: the answer is checked against the model here, as parse() does
            from openai.lib._parsing._completions import parse_chat_completion

            return parse_chat_completion(
                response_format=model, input_tools=openai.omit, chat_completion=raw.parse()
            )
        except ValueError as error:  # pydantic's ValidationError, or not JSON at all
            raise _Unreadable(_problem(error), _usage(raw)) from error

    def _paid(
        self, messages: list[dict[str, str]], model: type[Output], urgency: tuple[int, ...]
    ) -> Any:
        """The raw answer of one chat call, its estimated cost held against the budget while
        it is asked (refused with BudgetExceeded if it would pass it), then its cost counted."""
        estimate = estimated_usage(messages)
        held = self._cost(estimate) or 0.0  # unpriced: only without a budget (llm_budget.check)
        cost = 0.0
        self.budget.reserve(held, self.calls_made)
        try:
            raw = self._sent(messages, model, urgency, sum(estimate))
            reported = _usage(raw)
            cost = self._cost(reported if any(reported) else estimate) or 0.0
        finally:
            self.budget.settle(held, cost)
        return raw

    def _sent(
        self,
        messages: list[dict[str, str]],
        model: type[Output],
        urgency: tuple[int, ...],
        tokens: int,
    ) -> Any:
        """One chat call in its turn under the limits; a 429 waits as the server asks (see
        :meth:`_parse`)."""
        import openai

        waited = 0.0
        while True:
            waited += self.limiter.acquire(tokens)
            try:
                with self.slots.held(urgency):
                    raw = self._send(messages, model)
            except openai.RateLimitError as error:
                # the server's word, else a second: the next acquire() sleeps it
                pause = self.limiter.heard(error.response.headers) or self.limiter.pause(1.0)
                if waited + pause > self.settings.llm_rate_wait_max_s:
                    raise
                continue
            self.limiter.heard(raw.headers)
            return raw

    def _send(self, messages: list[dict[str, str]], model: type[Output]) -> Any:
        """The raw chat call: a strict JSON schema (``json_schema``), or for servers without
        one (``json_object``) a JSON object, with the schema stated at the end of the prompt."""
        completions = self.client().chat.completions.with_raw_response
        options = {"timeout": self.settings.llm_timeout_s, **self.sampling()}
        if self.settings.llm_response_format == "json_schema":
            return completions.parse(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                response_format=model,
                **options,
            )
        *before, last = messages
        schema = schema_text(model)
        stated = {**last, "content": f"{last['content']}\n\n{JSON_OBJECT_ASK}\n{schema}"}
        return completions.create(  # type: ignore[call-overload]
            model=self.model,
            messages=[*before, stated],
            response_format={"type": "json_object"},
            **options,
        )

    def messages(self, text: str) -> list[dict[str, str]]:
        """A call's messages: the settings' system prompt, if any, then the rendered prompt."""
        system = self.settings.llm_system_prompt
        first = [{"role": "system", "content": system}] if system else []
        return [*first, {"role": "user", "content": text}]

    def sampling(self) -> dict[str, Any]:
        """The sampling settings a call sends: temperature and seed, only when set."""
        chosen = {"temperature": self.settings.llm_temperature, "seed": self.settings.llm_seed}
        return {name: value for name, value in chosen.items() if value is not None}

    def options(self) -> dict[str, Any]:
        """What besides the prompt shapes an endpoint's answer (none for the rules backend)."""
        if self.backend == "rules":
            return {}
        system, shape = self.settings.llm_system_prompt, self.settings.llm_response_format
        chosen = {"system": system, "response_format": None if shape == "json_schema" else shape}
        return {**self.sampling(), **{k: v for k, v in chosen.items() if v}}

    def request_body(self, text: str, model: type[pydantic.BaseModel]) -> dict[str, Any]:
        """The chat completion request ``complete`` sends, as a Batch API line's body."""
        # openai's own strict-schema conversion, the one chat.completions.parse applies.
        from openai.lib._pydantic import to_strict_json_schema

        return {
            "model": self.model,
            "messages": self.messages(text),
            **self.sampling(),
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": model.__name__,
                    "schema": to_strict_json_schema(model),
                    "strict": True,
                },
            },
        }

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
        record = self._record(
            prompt_name, input_hash, answer.model_dump(mode="json"), tokens, latency_ms
        )
        if batch:
            factor = self.settings.llm_batch_price_factor
            cost = llm_budget.cost_usd(self.prices, tokens, factor)
            record = dataclasses.replace(record, cost_usd=cost)
        if record.call_key != key:
            raise LLMError(f"batch answer {key[:12]} does not match its request")
        if batch:  # a direct call was counted as it returned (_paid)
            self.budget.settle(self._batch_held.pop(key, 0.0), record.cost_usd or 0.0)
        with self._lock:
            self.calls_made += 1
        self._log(record)

    def _record(
        self,
        prompt_name: str,
        input_hash: str,
        output: Mapping[str, Any],
        tokens: tuple[int, int],
        latency_ms: float,
    ) -> CallRecord:
        prompt = self._prompt(prompt_name)
        return CallRecord(
            self.backend,
            self.model,
            prompt_name,
            prompt.hash,
            input_hash,
            json.dumps(output),
            tokens[0],
            tokens[1],
            latency_ms,
            self._cost(tokens),
        )

    def _cost(self, tokens: tuple[int, int]) -> float | None:
        """What ``tokens`` cost at the model's price; None for a model with no price."""
        return llm_budget.cost_usd(self.prices, tokens)

    def _hold_for_batch(self, key: str, messages: list[dict[str, str]]) -> None:
        """Hold a batch request's estimated cost (at the batch price) against the budget until
        its answer is recorded, once however many rounds it waits (refused if it would pass)."""
        if key in self._batch_held:
            return
        factor = self.settings.llm_batch_price_factor
        held = llm_budget.cost_usd(self.prices, estimated_usage(messages), factor) or 0.0
        self.budget.reserve(held, self.calls_made)
        self._batch_held[key] = held

    def _used(self, use: Use) -> None:
        """Inside journal(): note a call the target's steps used, for the cost ledger."""
        journal = getattr(self._local, "rows", None)
        if isinstance(journal, Journal):
            journal.uses.append(use)

    @contextlib.contextmanager
    def journal(
        self,
        reader: duckdb.DuckDBPyConnection,
        rows: Journal | None = None,
        rank: int = 0,
    ) -> Iterator[Journal]:
        """Keep this thread's new call-log rows in the yielded :class:`Journal` (``rows``, else a
        new one) instead of writing them, with every call used, and read the log through
        ``reader`` (a cursor of this thread's own): the caller writes the rows with the results
        they led to, in one transaction (``llm_log.write``). ``rank`` is the target's place in
        the build: of two calls of equal urgency waiting for a slot, the earlier target's goes
        first."""
        local = self._local
        local.rows, local.reader, local.rank = (Journal() if rows is None else rows), reader, rank
        try:
            yield local.rows
        finally:
            del local.rows, local.reader, local.rank

    def _rank(self) -> int:
        return int(getattr(self._local, "rank", 0))

    def each(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Run independent ``calls`` (a target's grading parts, a brief's identity and mechanism
        audits) at once, up to ``llm_concurrency``, each in a thread that keeps its rows in this
        thread's journal and reads through a cursor of its own; returns their results in order,
        or raises the first error in order. One after another with the rules backend (nothing
        to wait for), in batch mode (the requests are only collected) or outside a journal (one
        thread writes the log itself)."""
        if len(calls) < 2 or not self._beside():
            return [call() for call in calls]
        runs = [self._handed(call) for call in calls]
        width = min(len(calls), self.settings.llm_concurrency)
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="llm-parts") as pool:
            futures = [pool.submit(run) for run in runs]
        return [future.result() for future in futures]

    def later(self, call: Callable[[], T]) -> Later[T]:
        """``call`` (a target's grading) to run beside the rest of its steps from
        :meth:`Later.start` on, else in this thread when its result is asked for; beside only
        where :meth:`each` runs calls at once."""
        return Later(call, self._handed if self._beside() else None)

    def _beside(self) -> bool:
        """Whether this thread's calls may run in threads beside it (see :meth:`each`)."""
        inside = getattr(self._local, "rows", None) is not None
        return inside and self.backend != "rules" and not self.collecting

    def _handed(self, call: Callable[[], T]) -> Callable[[], T]:
        """``call`` for another thread, keeping its rows in this thread's journal and reading
        through a cursor of its own (made here: a cursor is not shared between threads)."""
        own, rows, rank = self._local.reader.cursor(), self._local.rows, self._rank()

        def run() -> T:
            try:
                with self.journal(own, rows, rank):
                    return call()
            finally:
                own.close()

        return run

    @contextlib.contextmanager
    def _single_flight(self, key: str) -> Iterator[None]:
        """Inside journal(): hold ``key`` while this thread asks it; a thread asking the same key
        waits here until the holder is done. Elsewhere (one thread): nothing to hold."""
        if getattr(self._local, "rows", None) is None:
            yield
            return
        while True:
            with self._lock:
                twin = self._flying.get(key)
                if twin is None:
                    self._flying[key] = threading.Event()
                    break
            twin.wait()
        try:
            yield
        finally:
            with self._lock:
                self._flying.pop(key).set()

    def written(self, keys: Iterable[str]) -> None:
        """These calls are in the log now: the log answers them from here on."""
        with self._lock:
            for key in keys:
                self._shared.pop(key, None)

    def keep_unwritten(self, con: duckdb.DuckDBPyConnection) -> int:
        """Write to the log the answers of targets whose records were never written (a build
        stopped by its budget, or by an error, while they ran): they were paid for, and a rerun
        takes them from the log. Returns how many; call it once the targets' threads are done. A
        budget's refusal then states the build's final spend and the calls kept."""
        with self._lock:
            rows, self._shared = list(self._shared.values()), {}
        llm_log.write(con, rows)
        self.budget.restate(self.calls_made)
        return len(rows)

    def _logged(self, key: str) -> str | None:
        journal = getattr(self._local, "rows", None)
        if journal is not None:
            for row in journal:
                if row["call_key"] == key and row["status"] == "answered":
                    return json.dumps(row["output"])
            with self._lock:
                twin = self._shared.get(key)
            if twin is not None:  # kept with this target's rows too, in case the twin's are lost
                journal.append(twin)
                return json.dumps(twin["output"])
            return llm_log.logged_output(self._local.reader, key)
        with self._lock:
            return llm_log.logged_output(self._con, key)

    def _log(self, record: CallRecord, status: str = "answered") -> None:
        row = {
            "call_key": record.call_key,
            **dataclasses.asdict(record),
            "output": json.loads(record.output),
            "status": status,
            "created_at": dt.datetime.now(dt.UTC),
        }
        journal = getattr(self._local, "rows", None)
        if journal is not None:
            journal.append(row)
            if status == "answered":
                with self._lock:
                    self._shared[row["call_key"]] = row
            return
        with self._lock:
            llm_log.write(self._con, [row])


class Later(Generic[T]):
    """A call that may run in a thread of its own (:meth:`LLM.later`): started by
    :meth:`start`, else run by :meth:`result` in the asking thread; never run twice."""

    def __init__(
        self, call: Callable[[], T], shared: Callable[[Callable[[], T]], Callable[[], T]] | None
    ) -> None:
        self._call, self._shared = call, shared
        self._future: Future[T] | None = None

    def start(self) -> None:
        if self._shared is None or self._future is not None:
            return
        run, future = self._shared(self._call), Future[T]()
        self._future = future

        def worker() -> None:
            try:
                future.set_result(run())
            except BaseException as error:  # the asker's result() raises it
                future.set_exception(error)

        threading.Thread(target=worker, name="llm-later", daemon=True).start()

    def result(self) -> T:
        if self._future is None:
            self._shared = None  # run here, now: a start() after this does nothing
            return self._call()
        return self._future.result()

    def settle(self) -> None:
        """Wait until a started call has ended, whatever its outcome (its rows are logged with
        the asker's)."""
        if self._future is not None:
            wait([self._future])
