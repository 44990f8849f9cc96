"""The OpenAI-compatible part of the sandbox: models, chat completions and the Batch API.

It is a test double for load and orchestration tests, and says so: every model id contains
``sandbox``, chat completions carry ``system_fingerprint="inspire-sandbox"``, and batches carry
``metadata["sandbox"] = "true"``. Structured output is a deterministic instance of the requested
JSON Schema (as pydantic v2 emits it), drawn from ``(seed, schema, messages)``. Faults are chosen
per request from ``(seed, request number)``, so a run can be replayed exactly.

Given the emulated model (a :class:`~inspire_build.sandbox.llm_truth.Truth`), the pipeline's
own prompts get answers read from their own text instead, with failures planted at seeded rates
(see ``llm_truth.py``); a request carrying the search environment's tools gets the emulated
agent's next call, read from the conversation alone (``emulated_agent.py``). It also emulates
per-minute request and token limits (429 with OpenAI's ``x-ratelimit-*`` and ``retry-after``
headers), ``usage`` details (cached and reasoning tokens) and ``max_tokens`` truncation
(``finish_reason: "length"``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import dataclasses
import datetime as dt
import email
import email.message
import hashlib
import json
import math
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import fastapi
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from inspire_build.sandbox import emulated_agent
from inspire_build.sandbox.emulated_brief import Scope
from inspire_build.sandbox.llm_truth import KNOWLEDGE_CUTOFF, Answer, Truth, TruthRates
from inspire_build.sandbox.world import MARKER

MODELS = ("sandbox-gpt", "sandbox-small")
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z; timestamps are EPOCH + a counter, for replayability
FAULTS = ("invalid_json", "refusal", "drop_item", "timeout")
REFUSAL = "I can't help with that. (sandbox refusal)"
CHAT_URL = "/v1/chat/completions"
_SYLLABLES = ("ka", "lo", "mi", "ren", "to", "sa", "vel", "un", "dor", "pi", "qua", "zen", "ba")
_NULL_BATCH_FIELDS = (  # null until the batch reaches the state they describe
    "in_progress_at",
    "finalizing_at",
    "completed_at",
    "failed_at",
    "expired_at",
    "cancelling_at",
    "cancelled_at",
    "output_file_id",
    "error_file_id",
    "errors",
)
_MAX_DEPTH = 32  # a schema whose required fields recurse cannot be satisfied; stop, do not hang
_SHALLOW = 6  # past this depth prefer null branches and minimal arrays, so recursion ends
RATE_WINDOW_S = 60.0  # OpenAI's limits are per minute
CACHE_MIN_TOKENS, CACHE_STEP = 1024, 128  # OpenAI caches prompt prefixes from 1,024 tokens up


@dataclasses.dataclass(frozen=True)
class OpenAIConfig:
    """How the emulated OpenAI API behaves. Every choice it makes is a function of ``seed``."""

    seed: int = 0
    latency_s: float = 0.0
    tokens_per_word: float = 1.3
    batch_delay_s: float = 1.0
    fault: str | None = None
    fault_rate: float = 0.0
    timeout_s: float = 30.0
    # (text, fault): every chat request whose prompt contains the text gets the fault, always.
    triggers: tuple[tuple[str, str], ...] = ()
    truth: TruthRates = dataclasses.field(default_factory=TruthRates)  # for a world's prompts
    # The emulated model knows the world's papers first public before this day (its training).
    knowledge_cutoff: dt.date = KNOWLEDGE_CUTOFF
    brief_scope: Scope = "own"  # what its briefs state: the target's own problem, or the field's
    rpm: int | None = None  # requests per rolling minute; None: unlimited, and no headers
    tpm: int | None = None  # prompt plus max_tokens tokens per rolling minute
    rate_window_s: float = RATE_WINDOW_S  # the "minute" of rpm and tpm (shorter in tests)
    reasoning_ratio: float = 0.0  # reasoning tokens reported per visible completion token
    # A tool-calling agent's turns (emulated_agent.py): malformed calls and refusals per turn,
    # drawn from the conversation so far. Off by default: a run's failures are those asked for.
    agent_malformed_rate: float = 0.0
    agent_refusal_rate: float = 0.0

    def __post_init__(self) -> None:
        for fault in (self.fault, *(f for _, f in self.triggers)):
            if fault is not None and fault not in FAULTS:
                raise ValueError(f"Unknown fault {fault!r}; valid faults: {', '.join(FAULTS)}")
        for rate in ("fault_rate", "agent_malformed_rate", "agent_refusal_rate"):
            if not 0.0 <= getattr(self, rate) <= 1.0:
                raise ValueError(f"{rate} must lie in [0, 1], got {getattr(self, rate)}")
        for name in ("rpm", "tpm"):
            limit = getattr(self, name)
            if limit is not None and limit < 1:
                raise ValueError(f"{name} must be at least 1 (or None), got {limit}")
        if self.reasoning_ratio < 0 or self.latency_s < 0:
            raise ValueError("reasoning_ratio and latency_s must not be negative")


class _ApiError(Exception):
    """Raised inside a handler; :class:`_Route` turns it into an OpenAI error response."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        *,
        kind: str = "invalid_request_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param
        self.kind, self.code, self.headers = kind, code, headers or {}

    def body(self) -> dict[str, Any]:
        error = {"message": self.message, "type": self.kind, "param": self.param}
        return {"error": {**error, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


class _Route(APIRoute):
    """Translates :class:`_ApiError` once, at the edge, instead of in every handler."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except _ApiError as exc:
                return exc.response()

        return handle


def _digest(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# --- instances of a JSON Schema -------------------------------------------------------------


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))


def _string(schema: dict[str, Any], rng: random.Random) -> str:
    fmt = schema.get("format")
    if fmt == "date" or fmt == "date-time":
        day = dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=rng.randrange(50_000))
        return day.date().isoformat() if fmt == "date" else day.isoformat().replace("+00:00", "Z")
    if fmt == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if fmt == "email":
        return f"{_word(rng)}@sandbox.example"
    if fmt in ("uri", "url"):
        return f"https://sandbox.example/{_word(rng)}"
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = " ".join(_word(rng) for _ in range(rng.randint(1, 3)))
    while len(text) < low:
        text += " " + _word(rng)
    text = text[:high] if high is not None else text
    return text[:-1] + "a" if text.endswith(" ") else text  # a cut may end on the separator


def _number(schema: dict[str, Any], rng: random.Random, integer: bool) -> Any:
    strict_lo, strict_hi = "exclusiveMinimum" in schema, "exclusiveMaximum" in schema
    lo = schema.get("exclusiveMinimum", schema.get("minimum"))
    hi = schema.get("exclusiveMaximum", schema.get("maximum"))
    lo = lo if lo is not None else (hi - 100 if hi is not None else 0)
    hi = hi if hi is not None else lo + 100
    if integer:
        step = schema.get("multipleOf", 1)
        first = math.floor(lo / step) + 1 if strict_lo else math.ceil(lo / step)
        last = math.ceil(hi / step) - 1 if strict_hi else math.floor(hi / step)
        if first > last:
            raise _ApiError(400, f"No integer fits the bounds {lo}..{hi}", "response_format")
        return rng.randint(first, last) * step
    if lo > hi or (lo == hi and (strict_lo or strict_hi)):
        raise _ApiError(400, f"No number fits the bounds {lo}..{hi}", "response_format")
    value = round(rng.uniform(lo, hi), 3)  # rounding may step onto or over a bound
    above = lo < value if strict_lo else lo <= value
    below = value < hi if strict_hi else value <= hi
    return value if above and below else (lo + hi) / 2


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref`` and single-branch ``allOf`` (pydantic wraps refs that carry a default)."""
    while True:
        if "$ref" in schema:
            ref = schema["$ref"]
            name = ref.removeprefix("#/$defs/").removeprefix("#/definitions/")
            defs = root.get("$defs", root.get("definitions", {}))
            target = root if ref == "#" else defs.get(name)
            if not isinstance(target, dict):
                raise _ApiError(400, f"Unresolvable $ref {ref!r} in schema", "response_format")
            schema = {**{k: v for k, v in schema.items() if k != "$ref"}, **target}
        elif isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            schema = {**{k: v for k, v in schema.items() if k != "allOf"}, **schema["allOf"][0]}
        else:
            return schema


def _instance(
    schema: dict[str, Any], rng: random.Random, root: dict[str, Any] | None = None, depth: int = 0
) -> Any:
    """One value valid against ``schema`` (``$ref`` resolves in ``root``), choices from ``rng``.

    Not enforced: ``pattern``, ``multipleOf`` on numbers, ``not``, ``if``/``then``, ``allOf``
    with several branches, and unsatisfiable lengths; such schemas may get an invalid instance.
    """
    root = schema if root is None else root
    if depth > _MAX_DEPTH:
        raise _ApiError(400, "Schema nests too deeply to instantiate", "response_format")
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            branches = schema[key]
            nulls = [b for b in branches if isinstance(b, dict) and b.get("type") == "null"]
            branch = nulls[0] if nulls and depth >= _SHALLOW else rng.choice(branches)
            return _instance(branch, rng, root, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = "null" if "null" in kind and depth >= _SHALLOW else rng.choice(kind)
    if kind == "object":
        value = {
            name: _instance(sub, rng, root, depth + 1)
            for name, sub in schema.get("properties", {}).items()
        }
        extra = schema.get("additionalProperties")
        if not value and isinstance(extra, dict):  # a mapping such as dict[str, int]
            value = {_word(rng): _instance(extra, rng, root, depth + 1) for _ in range(2)}
        return value
    if kind == "array":
        return _array(schema, rng, root, depth)
    if kind == "string":
        return _string(schema, rng)
    if kind in ("integer", "number"):
        return _number(schema, rng, integer=kind == "integer")
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    raise _ApiError(400, f"Unsupported schema type {kind!r}", "response_format")


def _array(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> Any:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):  # a tuple
        return [_instance(sub, rng, root, depth + 1) for sub in prefix]
    low = int(schema.get("minItems", 0))
    high = int(schema.get("maxItems", low + 3))
    count = low if depth >= _SHALLOW else rng.randint(max(low, min(1, high)), max(low, high))
    items, unique = schema.get("items", {}), bool(schema.get("uniqueItems"))
    values: list[Any] = []
    for _ in range(count * 20 if unique else count):  # duplicates are retried, within a bound
        item = _instance(items, rng, root, depth + 1)
        if not unique or _canonical(item) not in {_canonical(v) for v in values}:
            values.append(item)
        if len(values) == count:
            break
    _one_each(values, _resolve(items, root) if isinstance(items, dict) else {}, root)
    return values


def _one_each(values: list[Any], item: dict[str, Any], root: dict[str, Any]) -> None:
    """A list of objects keyed by an enum as long as the list gets each key once, in order.

    That is how a compliant model answers "grade every one of these exactly once"; faults such
    as ``drop_item`` then break it on purpose.
    """
    for name, sub in (item.get("properties") or {}).items():
        options = _resolve(sub, root).get("enum") if isinstance(sub, dict) else None
        if isinstance(options, list) and len(options) == len(values) and values:
            for value, option in zip(values, options, strict=True):
                if isinstance(value, dict):
                    value[name] = option
            return


def _drop_item(value: Any) -> bool:
    """Remove the last element of the first non-empty array, depth first; report success."""
    if isinstance(value, list) and value:
        value.pop()
        return True
    return isinstance(value, dict) and any(_drop_item(child) for child in value.values())


# --- chat completions -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None  # None means free text
    max_tokens: int | None = None  # max_completion_tokens, or the older max_tokens
    tools: list[dict[str, Any]] | None = None  # function tools, as the request declares them
    tool_choice: Any = None
    agent: bool = False  # the tools are the search environment's: the emulated agent answers


def _max_tokens(body: dict[str, Any]) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _ApiError(400, f"'{name}' must be a positive integer.", name)
        return value
    return None


def _chat_request(body: Any) -> _ChatRequest:
    """Check a chat request as OpenAI does, raising a 400 that names the offending parameter."""
    if not isinstance(body, dict):
        raise _ApiError(400, "The request body must be a JSON object.")
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise _ApiError(400, "'model' is a required string.", "model")
    if not isinstance(messages, list) or not messages:
        raise _ApiError(400, "'messages' must be a non-empty array.", "messages")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise _ApiError(400, "Each message must be an object with a 'role'.", "messages")
    limit = _max_tokens(body)
    if body.get("tools") is not None:  # checked; other tools than the agent's are ignored
        tooled = _tool_request(body, model, messages, limit)
        if tooled.agent:
            return tooled
    fmt = body.get("response_format") or {"type": "text"}
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return _ChatRequest(model, messages, None, limit)
    if kind == "json_object":
        return _ChatRequest(model, messages, _stated_schema(messages), limit)
    spec = fmt.get("json_schema") if kind == "json_schema" else None
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        raise _ApiError(
            400,
            "response_format needs type text, json_object or json_schema "
            "with a 'json_schema.schema' object.",
            "response_format",
        )
    return _ChatRequest(model, messages, spec["schema"], limit)


def _tool_request(
    body: dict[str, Any], model: str, messages: list[dict[str, Any]], limit: int | None
) -> _ChatRequest:
    """A request with function tools, checked as OpenAI checks ``tools``, ``tool_choice`` and
    ``parallel_tool_calls`` (one call a turn is valid either way)."""
    tools = body["tools"]
    functions = [t.get("function") for t in tools if isinstance(t, dict)] if tools else []
    if not isinstance(tools, list) or not tools or len(functions) != len(tools):
        raise _ApiError(400, "'tools' must be a non-empty array of tool objects.", "tools")
    if not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions):
        raise _ApiError(400, "Each tool needs a 'function' object with a 'name'.", "tools")
    names = [str(f["name"]) for f in functions if isinstance(f, dict)]
    choice = body.get("tool_choice")
    named = choice.get("function") if isinstance(choice, dict) else None
    if not (
        choice in (None, "none", "auto", "required")
        or (isinstance(named, dict) and named.get("name") in names)
    ):
        raise _ApiError(400, "'tool_choice' must be none, auto, required or a tool.", "tool_choice")
    if not isinstance(body.get("parallel_tool_calls", True), bool):
        raise _ApiError(400, "'parallel_tool_calls' must be a boolean.", "parallel_tool_calls")
    agent = emulated_agent.is_agent(names)
    return _ChatRequest(model, messages, None, limit, tools, choice, agent)


def _stated_schema(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """json_object mode: the JSON schema the last message states after "JSON schema:", which a
    server without json_schema support is asked to follow; else any object."""
    content = messages[-1].get("content")
    _, marker, stated = (content if isinstance(content, str) else "").rpartition("JSON schema:")
    try:
        schema = json.loads(stated) if marker else None
    except ValueError:
        schema = None
    return schema if isinstance(schema, dict) else {"type": "object", "additionalProperties": {}}


def _tokens(text: str, per_word: float) -> int:
    # Rounded first so that 10 words at 1.3 count 13 tokens, not ceil(13.000000000000002) = 14.
    return max(1, math.ceil(round(len(re.findall(r"\w+", text)) * per_word, 6)))


def _prompt_text(messages: list[dict[str, Any]]) -> str:
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content}]  # text parts too
        texts += [str(part.get("text") or "") for part in parts if isinstance(part, dict)]
    return " ".join(texts)


def _first_user_text(messages: list[dict[str, Any]]) -> str:
    """The rendered prompt: the pipeline sends its template as the first user message."""
    first = next((m for m in messages if m.get("role") == "user"), None)
    return _prompt_text([first]) if first is not None else ""


@dataclasses.dataclass(frozen=True)
class _Said:
    """A completion's message, before truncation; ``answer`` when the truth answered."""

    content: str | None
    refusal: str | None
    answer: Answer | None


def _say(
    config: OpenAIConfig, request: _ChatRequest, fault: str | None, truth: Truth | None
) -> _Said:
    """The message: the emulated model's for the pipeline's prompts, else schema-driven; then
    the fault."""
    rng = random.Random(
        _digest(config.seed, _canonical(request.schema), _canonical(request.messages))
    )
    answer = None
    if truth is not None and request.schema is not None:
        prompt = _first_user_text(request.messages)
        answer = truth.answer(prompt, request.schema, _prompt_text(request.messages))
    fault = fault or (answer.fault if answer else None)
    content: str | None
    if request.schema is None:
        words = [_word(rng) for _ in range(rng.randint(8, 16))]
        content = " ".join(words).capitalize() + "."
    else:
        value = copy.deepcopy(answer.value) if answer else _instance(request.schema, rng)
        if fault == "drop_item":
            _drop_item(value)
        content = json.dumps(value)
    if fault == "invalid_json":  # cut mid-value, as a truncated generation is
        content = content[: len(content) // 2]
        content = content if _loads(content) is _INVALID else content + "{"  # a cut scalar parses
    if fault == "refusal":
        return _Said(None, REFUSAL, answer)
    return _Said(content, None, answer)


def _truncate(content: str, limit: int, per_word: float) -> str:
    """The longest word-boundary prefix of ``content`` that ``limit`` tokens can hold."""
    words = list(re.finditer(r"\w+", content))
    keep = int(limit / per_word) + 1
    while keep > 0 and math.ceil(round(keep * per_word, 6)) > limit:  # as _tokens rounds
        keep -= 1
    return content[: words[keep].start()] if keep < len(words) else content


def _completion(
    config: OpenAIConfig,
    request: _ChatRequest,
    fault: str | None,
    ident: str,
    created: int,
    truth: Truth | None = None,
    cached: int = 0,
) -> dict[str, Any]:
    """A ``chat.completion`` object; ``fault`` is applied to its content when given."""
    if request.agent:  # never given the truth: the conversation alone decides its next call
        message, finish, visible = _agent_message(config, request, fault)
    else:
        message, finish, visible = _message(config, request, fault, truth)
    model = request.model if "sandbox" in request.model else f"sandbox-{request.model}"
    return {
        "id": f"chatcmpl-{ident}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(config, request, visible, cached),
        "system_fingerprint": MARKER,
    }


def _message(
    config: OpenAIConfig, request: _ChatRequest, fault: str | None, truth: Truth | None
) -> tuple[dict[str, Any], str, int]:
    """The assistant message, its finish reason and its visible tokens."""
    said = _say(config, request, fault, truth)
    content, finish = said.content, "stop"
    visible = _tokens(content or said.refusal or "", config.tokens_per_word)
    if content is not None and request.max_tokens is not None and visible > request.max_tokens:
        content, finish = _truncate(content, request.max_tokens, config.tokens_per_word), "length"
        visible = request.max_tokens
    if truth is not None and said.answer is not None and finish == "stop" and content:
        delivered = _loads(content)
        if isinstance(delivered, dict):
            truth.record(said.answer, delivered, _digest(_canonical(request.messages)))
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": said.refusal}
    message["annotations"] = []
    return message, finish, visible


def _agent_message(
    config: OpenAIConfig, request: _ChatRequest, fault: str | None
) -> tuple[dict[str, Any], str, int]:
    """The emulated agent's turn: one tool call (``finish_reason`` "tool_calls"), or plain
    content; cut at ``max_tokens`` like any answer ("length")."""
    move = emulated_agent.answer(
        request.messages,
        config.seed,
        malformed_rate=config.agent_malformed_rate,
        refusal_rate=config.agent_refusal_rate,
        tool_choice=request.tool_choice,
        fault=fault,
    )
    text = move.content if move.name is None else move.arguments or ""
    finish = "stop" if move.name is None else "tool_calls"
    visible = _tokens(text or "", config.tokens_per_word)
    if request.max_tokens is not None and visible > request.max_tokens:
        text, finish = _truncate(text or "", request.max_tokens, config.tokens_per_word), "length"
        visible = request.max_tokens
    content = text if move.name is None else None
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    message["annotations"] = []
    if move.name is not None:
        function = {"name": move.name, "arguments": text}
        message["tool_calls"] = [{"id": move.call_id, "type": "function", "function": function}]
    return message, finish, visible


def _prompt_tokens(config: OpenAIConfig, request: _ChatRequest) -> int:
    """The prompt's tokens: its messages' text, and with tools, their definitions and the
    conversation's calls, as OpenAI counts them too."""
    text = _prompt_text(request.messages)
    if request.tools is not None:
        calls = [m.get("tool_calls") for m in request.messages if m.get("tool_calls")]
        text = " ".join((text, _canonical(request.tools), _canonical(calls)))
    return _tokens(text, config.tokens_per_word)


def _usage(
    config: OpenAIConfig, request: _ChatRequest, visible: int, cached: int
) -> dict[str, Any]:
    """OpenAI's usage object; completion tokens include the (emulated) reasoning tokens."""
    prompt = _prompt_tokens(config, request)
    reasoning = math.ceil(round(visible * config.reasoning_ratio, 6))
    completion = visible + reasoning
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": min(cached, prompt), "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


_INVALID = object()


def _loads(text: str | bytes) -> Any:
    """Parsed JSON, or ``_INVALID``: malformed input is expected here, not exceptional."""
    try:
        return json.loads(text)
    except ValueError:  # includes UnicodeDecodeError
        return _INVALID


def _triggered(config: OpenAIConfig, request: _ChatRequest) -> str | None:
    if not config.triggers:
        return None
    text = _prompt_text(request.messages)
    return next((fault for trigger, fault in config.triggers if trigger in text), None)


def _fault(config: OpenAIConfig, key: object) -> str | None:
    chosen = random.Random(f"{config.seed}:{key}").random() < config.fault_rate
    return config.fault if chosen else None


# --- files and batches ----------------------------------------------------------------------


@dataclasses.dataclass
class _File:
    meta: dict[str, Any]
    content: bytes


@dataclasses.dataclass
class _Batch:
    obj: dict[str, Any]
    lines: list[dict[str, Any]]
    started: float  # time.monotonic() at creation


def _batch_lines(content: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split batch JSONL into request lines and validation errors (which fail the batch)."""
    lines: list[dict[str, Any]] = []
    problems: list[tuple[int | None, str]] = []
    for number, raw in enumerate(content.splitlines(), start=1):
        if not raw.strip():
            continue
        line = _loads(raw)
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            problems.append((number, "Each line must be a JSON object with a string 'custom_id'."))
        elif line.get("method") != "POST" or line.get("url") != CHAT_URL:
            problems.append((number, f"Each line must have method 'POST' and url '{CHAT_URL}'."))
        elif any(seen["custom_id"] == line["custom_id"] for seen in lines):
            problems.append((number, f"Duplicate custom_id {line['custom_id']!r}."))
        else:
            lines.append(line)
    if not lines and not problems:
        problems.append((None, "The input file has no requests."))
    errors = [
        {"code": "invalid_request", "message": m, "param": None, "line": n} for n, m in problems
    ]
    return lines, errors


class _Limits:
    """OpenAI's per-minute request and token limits, over a rolling minute."""

    def __init__(self, rpm: int | None, tpm: int | None, window_s: float = RATE_WINDOW_S) -> None:
        self.limits = {"requests": rpm, "tokens": tpm}
        self.window_s = window_s
        self.spent: collections.deque[tuple[float, int]] = collections.deque()  # (when, tokens)
        self.lock = threading.Lock()

    def admit(self, tokens: int) -> dict[str, str]:
        """Count one request of ``tokens``; its headers, or a 429 that carries them."""
        now = time.monotonic()
        with self.lock:
            while self.spent and now - self.spent[0][0] >= self.window_s:
                self.spent.popleft()
            used = {"requests": len(self.spent), "tokens": sum(t for _, t in self.spent)}
            asked = {"requests": 1, "tokens": tokens}
            over = [k for k, limit in self.limits.items() if limit and used[k] + asked[k] > limit]
            if not over:
                self.spent.append((now, tokens))
                used = {k: used[k] + asked[k] for k in used}
            headers = self._headers(now, used)
        if over:
            kind = over[0]
            wait = headers[f"x-ratelimit-reset-{kind}"]
            message = (
                f"Rate limit reached for {kind} per min: limit {self.limits[kind]}, used "
                f"{used[kind]}, requested {asked[kind]}. Please try again in {wait}. (sandbox)"
            )
            headers["retry-after"] = str(max(1, math.ceil(self._wait(now))))
            raise _ApiError(429, message, kind=kind, code="rate_limit_exceeded", headers=headers)
        return headers

    def _wait(self, now: float) -> float:
        return self.window_s - (now - self.spent[0][0]) if self.spent else 0.0

    def _headers(self, now: float, used: dict[str, int]) -> dict[str, str]:
        headers: dict[str, str] = {}
        for kind, limit in self.limits.items():
            if limit is not None:
                headers[f"x-ratelimit-limit-{kind}"] = str(limit)
                headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, limit - used[kind]))
                headers[f"x-ratelimit-reset-{kind}"] = _duration(self._wait(now))
        return headers


def _duration(seconds: float) -> str:
    """OpenAI's reset format: "20ms", "1.5s", "6m0s"."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:.3g}s"
    return f"{int(seconds // 60)}m{int(seconds % 60)}s"


class _State:
    """The in-memory files and batches of one router, with counters that make ids replayable."""

    def __init__(self, config: OpenAIConfig, truth: Truth | None = None) -> None:
        self.config, self.truth = config, truth
        self.lock = threading.RLock()
        self.counts: dict[str, int] = {}
        self.files: dict[str, _File] = {}
        self.batches: dict[str, _Batch] = {}
        self.limits = _Limits(config.rpm, config.tpm, config.rate_window_s)
        self.prefixes: set[str] = set()
        self.flying = self.most_in_flight = 0

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """Count a chat call as in flight while it is being answered."""
        with self.lock:
            self.flying += 1
            self.most_in_flight = max(self.most_in_flight, self.flying)
        try:
            yield
        finally:
            with self.lock:
                self.flying -= 1

    def cached(self, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens OpenAI would serve from its cache: the longest message prefix seen
        before, when it reaches 1,024 tokens, in steps of 128."""
        seen = 0
        with self.lock:
            for size in range(1, len(messages) + 1):
                digest = _digest(_canonical(messages[:size]))
                seen = size if digest in self.prefixes else seen
                self.prefixes.add(digest)
        if not seen:
            return 0
        tokens = _tokens(_prompt_text(messages[:seen]), self.config.tokens_per_word)
        steps = (tokens - CACHE_MIN_TOKENS) // CACHE_STEP
        return CACHE_MIN_TOKENS + steps * CACHE_STEP if tokens >= CACHE_MIN_TOKENS else 0

    def next(self, kind: str) -> int:
        with self.lock:
            count = self.counts.get(kind, 0)
            self.counts[kind] = count + 1
            return count

    def tick(self) -> int:
        return EPOCH + self.next("clock")

    def add_file(self, filename: str, purpose: str, content: bytes) -> dict[str, Any]:
        ident = f"file-{_digest(self.config.seed, 'file', self.next('file'))[:24]}"
        meta = {
            "id": ident,
            "object": "file",
            "bytes": len(content),
            "created_at": self.tick(),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }
        with self.lock:
            self.files[ident] = _File(meta, content)
        return meta

    def file(self, ident: str) -> _File:
        if ident not in self.files:
            raise _ApiError(404, f"No such File object: {ident}", "file_id")
        return self.files[ident]

    def create_batch(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _ApiError(400, "The request body must be a JSON object.")
        if body.get("endpoint") != CHAT_URL:
            raise _ApiError(400, f"The sandbox only batches {CHAT_URL}.", "endpoint")
        if body.get("completion_window") != "24h":
            raise _ApiError(400, "completion_window must be '24h'.", "completion_window")
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise _ApiError(400, "metadata must map strings to strings.", "metadata")
        source = self.file(str(body.get("input_file_id")))
        if source.meta["purpose"] != "batch":
            raise _ApiError(400, "The input file's purpose must be 'batch'.", "input_file_id")
        lines, errors = _batch_lines(source.content)
        ident = f"batch_{_digest(self.config.seed, 'batch', self.next('batch'))[:32]}"
        created = self.tick()
        obj: dict[str, Any] = {
            **dict.fromkeys(_NULL_BATCH_FIELDS),
            "id": ident,
            "object": "batch",
            "endpoint": CHAT_URL,
            "input_file_id": source.meta["id"],
            "completion_window": "24h",
            "status": "validating",
            "created_at": created,
            "expires_at": created + 86_400,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": {**metadata, "sandbox": "true"},
        }
        if errors:  # OpenAI validates the whole file first and fails the batch on any bad line
            obj.update(
                status="failed", failed_at=created, errors={"object": "list", "data": errors}
            )
        with self.lock:
            self.batches[ident] = _Batch(obj, lines, time.monotonic())
        return dict(obj)

    def batch(self, ident: str) -> dict[str, Any]:
        """The batch, advanced lazily: the sandbox has no worker, time passes on retrieval."""
        with self.lock:
            if ident not in self.batches:
                raise _ApiError(404, f"No such Batch object: {ident}", "batch_id")
            batch = self.batches[ident]
            obj = batch.obj
            if obj["status"] == "validating":
                obj.update(status="in_progress", in_progress_at=obj["created_at"])
            elapsed = time.monotonic() - batch.started
            if obj["status"] == "in_progress" and elapsed >= self.config.batch_delay_s:
                self._complete(batch)
            if obj["status"] == "cancelling":
                obj.update(status="cancelled", cancelled_at=obj["cancelling_at"])
            return dict(obj)  # a snapshot: nested values are replaced, never mutated

    def cancel(self, ident: str) -> dict[str, Any]:
        """Answered 'cancelling', as OpenAI does; the next retrieve reports 'cancelled'."""
        with self.lock:
            status = self.batch(ident)["status"]
            if status in ("completed", "failed", "expired"):
                raise _ApiError(400, f"Cannot cancel a batch with status {status!r}.")
            obj = self.batches[ident].obj
            if status == "in_progress":
                obj.update(status="cancelling", cancelling_at=self.tick())
            return dict(obj)

    def _complete(self, batch: _Batch) -> None:
        obj = batch.obj
        outputs: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        for line in batch.lines:
            key = _digest(self.config.seed, obj["id"], line["custom_id"])
            record: dict[str, Any] = {"id": f"batch_req_{key[:24]}", "custom_id": line["custom_id"]}
            fault = _fault(self.config, f"{obj['id']}:{line['custom_id']}")
            try:
                chat = _chat_request(line.get("body"))
                body = _completion(
                    self.config,
                    chat,
                    None if fault == "timeout" else fault,  # a batch has no connection to time out
                    key[24:48],
                    obj["created_at"],
                    self.truth,
                    self.cached(chat.messages),
                )
                status, target = 200, outputs
            except _ApiError as exc:
                body, status, target = exc.body(), exc.status, failures
            response = {"status_code": status, "request_id": f"req_{key[48:]}", "body": body}
            target.append({**record, "response": response, "error": None})
        done = obj["created_at"] + max(1, math.ceil(self.config.batch_delay_s))
        for kind, records in (("output", outputs), ("error", failures)):
            if records:
                text = "".join(json.dumps(r) + "\n" for r in records).encode()
                meta = self.add_file(f"{obj['id']}_{kind}.jsonl", "batch_output", text)
                obj[f"{kind}_file_id"] = meta["id"]
        counts = {"total": len(batch.lines), "completed": len(outputs), "failed": len(failures)}
        obj.update(status="completed", finalizing_at=done, completed_at=done, request_counts=counts)


# --- the router -----------------------------------------------------------------------------


def _form(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Parse multipart/form-data with the stdlib, so the sandbox needs no python-multipart."""
    header = email.message.Message()
    header["content-type"] = content_type
    boundary = header.get_param("boundary")
    if header.get_content_type() != "multipart/form-data" or not isinstance(boundary, str):
        raise _ApiError(400, "Expected a multipart/form-data body.")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in body.split(b"--" + boundary.encode())[1:-1]:
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers = email.message_from_bytes(head + b"\r\n\r\n")
        name = headers.get_param("name", header="content-disposition")
        if isinstance(name, str):
            fields[name] = (headers.get_filename(), data.removesuffix(b"\r\n"))
    return fields


async def _json(request: Request) -> Any:
    body = _loads(await request.body())
    if body is _INVALID:
        raise _ApiError(400, "We could not parse the JSON body of your request.")
    return body


async def _chat_completion(state: _State, body: Any, arrived: float) -> Response:
    """A chat request's answer, under the limits and faults, sent ``latency_s`` after it came
    (``arrived``): the answer is made first, so the emulated model's latency is ``latency_s``,
    not ``latency_s`` plus this machine's time to answer."""
    config, truth = state.config, state.truth
    chat = _chat_request(body)
    asked = _prompt_tokens(config, chat)
    try:
        headers = state.limits.admit(asked + (chat.max_tokens or 0))
    except _ApiError:
        state.next("rate_limited")
        raise
    number = state.next("chat")
    fault = _triggered(config, chat) or _fault(config, number)
    with state.in_flight():
        ident = _digest(config.seed, "chat", number)[:24]
        cached = state.cached(chat.messages)
        answer: dict[str, Any] | _ApiError
        try:
            answer = _completion(config, chat, fault, ident, state.tick(), truth, cached)
        except _ApiError as refused:  # a schema it cannot answer: said after the latency too
            answer = refused
        spent = time.monotonic() - arrived
        await asyncio.sleep(
            max(0.0, config.latency_s - spent) + (config.timeout_s if fault == "timeout" else 0)
        )
    if isinstance(answer, _ApiError):
        raise answer
    return JSONResponse(answer, headers=headers)


def router(config: OpenAIConfig, truth: Truth | None = None) -> fastapi.APIRouter:
    """The OpenAI endpoints over fresh in-memory state; mount it at prefix ``/v1``.

    With ``truth``, the pipeline's prompts get the emulated model's answers, read from their own
    text, in chat and in batches alike.
    """
    state = _State(config, truth)
    api = fastapi.APIRouter(route_class=_Route)
    models = [{"id": m, "object": "model", "created": EPOCH, "owned_by": MARKER} for m in MODELS]

    @api.get("/models")
    async def list_models() -> dict[str, Any]:
        return {"object": "list", "data": models}

    @api.post("/chat/completions")
    async def chat_completions(request: Request) -> Response:
        arrived = time.monotonic()  # before its body is read: the latency counts from here
        return await _chat_completion(state, await _json(request), arrived)

    @api.get("/_sandbox/calls")
    async def calls() -> dict[str, int]:
        """Chat calls answered and refused for a rate limit, and the most in flight at once."""
        with state.lock:
            return {
                "chat": state.counts.get("chat", 0),
                "rate_limited": state.counts.get("rate_limited", 0),
                "most_in_flight": state.most_in_flight,
            }

    @api.post("/files")
    async def upload_file(request: Request) -> dict[str, Any]:
        fields = _form(request.headers.get("content-type", ""), await request.body())
        filename, content = fields.get("file", (None, b""))
        purpose = fields.get("purpose", (None, b""))[1].decode(errors="replace")
        if filename is None:
            raise _ApiError(400, "A 'file' field with a filename is required.", "file")
        if purpose != "batch":
            raise _ApiError(400, "The sandbox only accepts purpose 'batch'.", "purpose")
        return state.add_file(filename, purpose, content)

    @api.get("/files/{file_id}")
    async def retrieve_file(file_id: str) -> dict[str, Any]:
        return state.file(file_id).meta

    @api.get("/files/{file_id}/content")
    async def file_content(file_id: str) -> Response:
        return Response(state.file(file_id).content, media_type="application/octet-stream")

    @api.post("/batches")
    async def create_batch(request: Request) -> dict[str, Any]:
        return state.create_batch(await _json(request))

    @api.get("/batches/{batch_id}")
    async def retrieve_batch(batch_id: str) -> dict[str, Any]:
        return state.batch(batch_id)

    @api.post("/batches/{batch_id}/cancel")
    async def cancel_batch(batch_id: str) -> dict[str, Any]:
        return state.cancel(batch_id)

    return api
