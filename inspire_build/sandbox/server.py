"""The sandbox service: OpenAlex, S2 Graph, arXiv and OpenAI-compatible APIs on 127.0.0.1.

It serves a world from ``world.py`` with the real APIs' payload shapes, limits and failure
modes, so the pipeline runs against it unchanged with only its base URLs pointed here:

- OpenAlex at ``/`` (``/works``, ``/works/{id}``), S2 at ``/graph/v1``, arXiv at
  ``/api/query``, the OpenAI-compatible API at ``/v1``; ``/_sandbox/stats`` counts requests.
- Rate limits: OpenAlex answers 403 above its per-second rate and 429 once its daily budget of
  list calls is spent; S2 answers 429 above its rate; arXiv 503 when called faster than its
  interval. Every limit is multiplied by ``time_scale``, so tests run fast at the same ratios.
- Faults, deterministic by seed: 5xx, 429/403, slow answers, dropped connections and truncated
  JSON, at ``fault_rate``.
- Malformed parameters (``per-page=abc``, a foreign cursor, ``limit=abc``, ``start=-1``) answer
  400 in each API's own error shape, as the real services do: never a 500 a client would retry.
- The OpenAI-compatible API answers the pipeline's prompts from their own text, never the
  world's truth (``llm_truth.py``); ``/_sandbox/llm/briefs`` and ``/_sandbox/llm/grades`` list
  the briefs and grade sheets it delivered, with what it planted in each.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import dataclasses
import datetime as dt
import functools
import logging
import math
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inspire_build import ids, local_server
from inspire_build.config import Settings
from inspire_build.errors import InvalidIdError
from inspire_build.sandbox import payloads
from inspire_build.sandbox.llm_truth import Truth
from inspire_build.sandbox.openai_api import OpenAIConfig, router
from inspire_build.sandbox.world import MARKER, Record, World, load

FAULT_KINDS = ("5xx", "rate", "slow", "drop", "truncate")
OPENALEX_FILTERS = (
    "openalex",
    "openalex_id",
    "ids.openalex",
    "doi",
    "cites",
    "cited_by",
    "from_publication_date",
    "to_publication_date",
    "publication_year",
    "primary_topic.field.id",
    "topics.field.id",
    "locations.source.id",
    "referenced_works_count",
)
S2_REFERENCE_FIELDS = ("contexts", "intents", "contextsWithIntent", "isInfluential")
MAX_RESULTS_WITHOUT_CURSOR = 10_000
OPENALEX_PER_PAGE_MAX = 200  # the real API's cap; the pipeline's client asks for 100
S2_REFERENCES_LIMIT_MAX = 1000


@dataclasses.dataclass(frozen=True)
class SandboxConfig:
    """Limits are the real services' per-second figures; ``time_scale`` multiplies them."""

    seed: int = 0
    time_scale: float = 1.0
    openalex_rps: float = 100.0
    openalex_daily_list_calls: int | None = None
    s2_rps: float = 1.0
    arxiv_interval_s: float = 3.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    slow_s: float = 2.0
    openai: OpenAIConfig = dataclasses.field(default_factory=OpenAIConfig)


class _Window:
    """At most ``limit`` requests in any ``window_s``; thread-safe."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit, self.window_s = limit, window_s
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        now = time.monotonic()
        with self._lock:
            while self._times and now - self._times[0] >= self.window_s:
                self._times.popleft()
            if len(self._times) >= self.limit:
                return False
            self._times.append(now)
            return True


class _Dropped(Exception):
    """Raised after a partial body so the server closes the connection mid-response."""


class _DropResponse(Response):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"1000")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"results": [', "more_body": True})
        raise _Dropped("sandbox fault: connection dropped")


class _QuietDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _Dropped))


class Sandbox:
    """The world's indexes plus the service state: limits, fault dice, and counters."""

    def __init__(self, world: World, config: SandboxConfig) -> None:
        self.world, self.config = world, config
        self.records = world.records
        self.by_key = world.by_key()
        self.by_openalex = {r.openalex: r for r in self.records}
        self.by_doi = {r.doi.lower(): r for r in self.records}
        self.by_arxiv = {r.arxiv: r for r in self.records if r.arxiv}
        self.by_s2 = {r.s2: r for r in self.records}
        self.by_corpus = {r.corpus_id: r for r in self.records}
        self.citing: dict[str, list[str]] = collections.defaultdict(list)
        for record in self.records:
            for citation in record.references:
                self.citing[citation.cites].append(record.key)
        self._works: dict[str, dict[str, Any]] = {}
        self._work_json: dict[tuple[str, tuple[str, ...] | None], bytes] = {}
        self._papers: dict[str, dict[str, Any]] = {}
        self._folded: dict[str, str] = {}
        scale = config.time_scale
        window = 1.0 / scale
        self.limits = {
            "openalex": _Window(max(1, round(config.openalex_rps)), window),
            "s2": _Window(max(1, round(config.s2_rps)), window * 0.9),
            "arxiv": _Window(1, config.arxiv_interval_s / scale * 0.9),
        }
        self.daily_left = config.openalex_daily_list_calls
        self._lock = threading.Lock()
        self._requests = 0
        self.stats: collections.Counter[str] = collections.Counter()

    # --- rendering (cached: records never change) ---

    def work(self, record: Record) -> dict[str, Any]:
        cached = self._works.get(record.key)
        if cached is None:
            referenced = [self.by_key[c.cites].openalex for c in record.references]
            cached = payloads.openalex_work(record, referenced, len(self.citing[record.key]))
            cached = payloads.hostile_openalex(record, cached)
            self._works[record.key] = cached
        return cached

    def work_json(self, record: Record, fields: Sequence[str] | None) -> bytes:
        """The work as JSON bytes, cached per field selection: list pages join these."""
        cache_key = (record.key, tuple(fields) if fields is not None else None)
        cached = self._work_json.get(cache_key)
        if cached is None:
            if record.hostile == "malformed_json":  # so is every page that holds it
                cached = payloads.malformed(record)
            else:
                cached = orjson.dumps(_pick(self.work(record), fields))
            self._work_json[cache_key] = cached
        return cached

    def folded(self, record: Record) -> str:
        """Title and abstract in lower case: what the keyword ``search`` counts terms in."""
        cached = self._folded.get(record.key)
        if cached is None:
            cached = self._folded[record.key] = (record.title + " " + record.abstract).lower()
        return cached

    def paper(self, record: Record) -> dict[str, Any]:
        cached = self._papers.get(record.key)
        if cached is None:
            cached = payloads.hostile_s2(record, payloads.s2_paper(record))
            self._papers[record.key] = cached
        return cached

    # --- service state ---

    def fault(self) -> tuple[str, int] | None:
        """The fault for the next request, if any: its kind and a die for its variant."""
        with self._lock:
            number = self._requests
            self._requests += 1
        dice = random.Random(f"{self.config.seed}:{number}")
        if dice.random() >= self.config.fault_rate:
            return None
        return dice.choice(self.config.fault_kinds), dice.randrange(3)

    def count(self, family: str, status: int, fault: str | None = None) -> None:
        with self._lock:
            self.stats[f"{family} {status}"] += 1
            if fault:
                self.stats[f"fault {fault}"] += 1

    def spend_daily(self) -> bool:
        with self._lock:
            if self.daily_left is None:
                return True
            if self.daily_left <= 0:
                return False
            self.daily_left -= 1
            return True


def _family(path: str) -> str | None:
    if path.startswith("/works"):
        return "openalex"
    if path.startswith("/graph/v1"):
        return "s2"
    if path.startswith("/api/query"):
        return "arxiv"
    return None


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


def _integer(value: str) -> int | None:
    """A query parameter as an integer, or None when it is not one (``abc``, ``1.5``, ``""``).

    Callers answer None with the API's own 400: a malformed request is the client's fault,
    never the server's, so it must not look like a transient 500.
    """
    try:
        return int(value)
    except ValueError:
        return None


_RATE_ANSWERS = {
    "openalex": (403, b'{"error": "Too many requests", "message": "Per-second rate limit hit"}'),
    "s2": (429, b'{"message": "Too Many Requests. Please wait and try again."}'),
    "arxiv": (503, b"Rate exceeded."),
}


class _LimitsAndFaults:
    """Pure ASGI middleware: rate limits, injected faults, counters and the sandbox header.

    Pure ASGI rather than ``BaseHTTPMiddleware``: it passes large bodies through untouched,
    which keeps the service fast enough for load tests.
    """

    def __init__(self, app: ASGIApp, sandbox: Sandbox) -> None:
        self.app, self.sandbox = app, sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sandbox, config = self.sandbox, self.sandbox.config
        family = _family(scope["path"])
        if family is None:
            if scope["path"].startswith("/v1/"):  # counted; its faults are its own (openai_api)
                endpoint = scope["path"].split("/")[2]  # chat, models, files, batches
                await self.app(scope, receive, _counted(send, sandbox, f"openai {endpoint}"))
            else:
                await self.app(scope, receive, _marked(send))
            return
        if not sandbox.limits[family].allow():
            status, body = _RATE_ANSWERS[family]
            sandbox.count(family, status)
            await Response(body, status, {"Retry-After": "1"})(scope, receive, _marked(send))
            return
        rolled = sandbox.fault()
        fault, variant = rolled if rolled else (None, 0)
        if fault in ("5xx", "rate"):
            status, body = (
                ((500, 502, 503)[variant], b"sandbox fault: server error")
                if fault == "5xx"
                else _RATE_ANSWERS[family]
            )
            sandbox.count(family, status, fault)
            await Response(body, status)(scope, receive, _marked(send))
            return
        if fault == "drop":
            sandbox.count(family, 0, fault)
            await _DropResponse()(scope, receive, send)
            return
        if fault == "slow":
            await asyncio.sleep(config.slow_s / config.time_scale)
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                sandbox.count(family, message["status"], fault)
                message = {**message, "headers": [*message["headers"], _HEADER]}
                if fault == "truncate":  # hold the head until the body's length is known
                    start.update(message)
                    return
            elif fault == "truncate" and message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks)
                body = body[: len(body) // 2]
                headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
                await send(
                    {**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
                )
                message = {"type": "http.response.body", "body": body}
            await send(message)

        await self.app(scope, receive, watch)


_HEADER = (b"x-inspire-sandbox", b"1")


def _counted(send: Send, sandbox: Sandbox, family: str) -> Send:
    async def counted(message: Message) -> None:
        if message["type"] == "http.response.start":
            sandbox.count(family, message["status"])
        await _marked(send)(message)

    return counted


def _marked(send: Send) -> Send:
    async def marked(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), _HEADER]}
        await send(message)

    return marked


def _with_triggers(config: OpenAIConfig, world: World) -> OpenAIConfig:
    """A hostile world's ``llm_*`` records fault every chat request that carries their abstract."""
    triggers = tuple(
        (record.abstract, record.hostile.removeprefix("llm_"))
        for record in world.records
        if record.hostile and record.hostile.startswith("llm_")
    )
    return dataclasses.replace(config, triggers=config.triggers + triggers) if triggers else config


def create_app(world: World, config: SandboxConfig | None = None) -> FastAPI:
    """The FastAPI app serving ``world``. ``app.state.sandbox`` holds the live state."""
    config = config or SandboxConfig()
    sandbox = Sandbox(world, config)
    app = FastAPI(title=f"{MARKER}: a local emulator of scholarly APIs (a test double)")
    app.state.sandbox = sandbox
    llm = config.openai
    truth = Truth(world, llm.truth, llm.seed, llm.knowledge_cutoff, llm.brief_scope)
    app.include_router(router(_with_triggers(config.openai, world), truth), prefix="/v1")

    app.add_middleware(_LimitsAndFaults, sandbox=sandbox)

    @app.get("/works")
    def list_works(request: Request) -> Response:
        return _openalex_list(sandbox, dict(request.query_params))

    @app.get("/works/{work_id:path}")
    def get_work(work_id: str, request: Request) -> Response:
        record = _openalex_entity(sandbox, work_id)
        if record is None:
            return _json({"error": "404 Not Found", "message": f"{work_id} not found"}, 404)
        fields, problem = _openalex_select(request.query_params.get("select"))
        if problem:
            return _json(problem, 400)
        return Response(sandbox.work_json(record, fields), media_type="application/json")

    @app.post("/graph/v1/paper/batch")
    async def s2_batch(request: Request) -> Response:
        try:
            requested = (await request.json())["ids"]
        except (ValueError, KeyError, TypeError):
            return _json({"error": "Body must be a JSON object with an 'ids' list"}, 400)
        if len(requested) > 500:
            return _json({"error": "Cannot process more than 500 ids"}, 400)
        fields, problem = _s2_fields(request.query_params.get("fields"))
        if problem:
            return _json(problem, 400)
        records = [_s2_entity(sandbox, str(i)) for i in requested]
        broken = next((r for r in records if r and r.hostile == "malformed_json"), None)
        if broken:
            return Response(payloads.malformed(broken), media_type="application/json")
        return _json([payloads.select(sandbox.paper(r), fields) if r else None for r in records])

    @app.get("/graph/v1/paper/{rest:path}")
    def s2_paper(rest: str, request: Request) -> Response:
        query = request.query_params
        if rest.endswith("/references"):
            return _s2_references(sandbox, rest.removesuffix("/references"), dict(query))
        record = _s2_entity(sandbox, rest)
        if record is None:
            return _json({"error": f"Paper with id {rest} not found"}, 404)
        fields, problem = _s2_fields(query.get("fields"))
        if problem:
            return _json(problem, 400)
        if record.hostile == "malformed_json":
            return Response(payloads.malformed(record), media_type="application/json")
        return _json(payloads.select(sandbox.paper(record), fields))

    @app.get("/api/query")
    def arxiv_query(request: Request) -> Response:
        return _arxiv(sandbox, dict(request.query_params))

    _control_routes(app, sandbox, truth, config)
    return app


def _control_routes(app: FastAPI, sandbox: Sandbox, truth: Truth, config: SandboxConfig) -> None:
    """The sandbox's own routes, under /_sandbox: its counts, the LLM's planted truth, a reset."""

    @app.get("/_sandbox/stats")
    def stats() -> Response:
        return _json({"marker": MARKER, "counts": dict(sorted(sandbox.stats.items()))})

    @app.get("/_sandbox/llm/briefs")
    def llm_briefs() -> Response:
        return _json(truth.briefs())

    @app.get("/_sandbox/llm/grades")
    def llm_grades() -> Response:
        return _json(truth.grades())

    @app.post("/_sandbox/reset")
    def reset() -> Response:
        with sandbox._lock:
            sandbox.stats.clear()
            sandbox.daily_left = config.openalex_daily_list_calls
        truth.clear()
        return _json({"marker": MARKER, "reset": True})


# --- OpenAlex -----------------------------------------------------------------------------------


def _openalex_entity(sandbox: Sandbox, raw: str) -> Record | None:
    if raw[:1] == "W" and raw[1:].isdigit():  # the common case, without the general parser
        return sandbox.by_openalex.get(raw)
    try:
        parsed = ids.parse_any_id(raw.removeprefix("doi:") if raw.startswith("doi:") else raw)
    except InvalidIdError:
        return None
    if parsed.scheme is ids.Scheme.OPENALEX:
        return sandbox.by_openalex.get(parsed.value)
    if parsed.scheme is ids.Scheme.DOI:
        return sandbox.by_doi.get(parsed.value)
    if parsed.scheme is ids.Scheme.ARXIV:
        return sandbox.by_doi.get(ids.arxiv_to_doi(parsed.value))
    return None


def _openalex_select(select: str | None) -> tuple[list[str] | None, dict[str, str] | None]:
    if not select:
        return None, None
    fields = [f.strip() for f in select.split(",") if f.strip()]
    known = payloads.OPENALEX_WORK_FIELDS
    for field in fields:
        if "." in field or field not in known:
            return None, {
                "error": "Invalid query parameters error.",
                "message": f"{field} is not a valid select field. Valid fields for "
                f"select are: {', '.join(sorted(known))}.",
            }
    return fields, None


def _pick(work: dict[str, Any], fields: Sequence[str] | None) -> dict[str, Any]:
    return work if fields is None else {f: work[f] for f in fields}


def _openalex_predicate(sandbox: Sandbox, key: str, values: list[str]) -> Callable[[Record], bool]:
    """One filter clause as a test on records; IDs in it are resolved once, not per record."""

    def resolved(prefix: str = "") -> list[Record]:
        found = (_openalex_entity(sandbox, prefix + v) for v in values)
        return [r for r in found if r is not None]

    def oa_references(record: Record) -> set[str]:
        # What OpenAlex knows a record cites: nothing, for records with empty referenced_works.
        return set() if record.openalex_references_empty else {c.cites for c in record.references}

    if key in ("openalex", "openalex_id", "ids.openalex", "doi"):
        keys = {r.key for r in resolved("doi:" if key == "doi" else "")}
        return lambda record: record.key in keys
    if key == "cites":
        cited = {r.key for r in resolved()}
        return lambda record: not cited.isdisjoint(oa_references(record))
    if key == "cited_by":
        cited_by_them = set().union(*(oa_references(r) for r in resolved()))
        return lambda record: record.key in cited_by_them
    if key == "from_publication_date":
        return lambda record: record.publication_date >= values[0]
    if key == "to_publication_date":
        return lambda record: record.publication_date <= values[0]
    if key == "publication_year":
        return lambda record: record.publication_date[:4] in values
    if key in ("primary_topic.field.id", "topics.field.id"):
        wanted = {v.rsplit("/", 1)[-1] for v in values}
        return lambda record: str(payloads.FIELD_IDS.get(record.field, 17)) in wanted
    if key == "locations.source.id":
        arxiv = any(v.endswith("S4306400194") for v in values)
        return lambda record: arxiv and record.arxiv is not None
    if key == "referenced_works_count":
        value = values[0]
        bound = int(value.lstrip("<>"))

        def count(record: Record) -> int:
            return 0 if record.openalex_references_empty else len(record.references)

        if value.startswith(">"):
            return lambda record: count(record) > bound
        if value.startswith("<"):
            return lambda record: count(record) < bound
        return lambda record: count(record) == bound
    return lambda record: False


def _openalex_invalid(message: str) -> Response:
    """OpenAlex's 400 for a malformed query: a final answer, never worth a retry."""
    return _json({"error": "Invalid query parameters error.", "message": message}, 400)


def _filter_value_problem(key: str, values: Sequence[str]) -> str | None:
    """Why a filter's values are malformed for ``key``, or None when they are well formed."""
    for value in values:
        if key == "referenced_works_count" and _integer(value.lstrip("<>")) is None:
            return f"Value for param {key} must be a number, optionally after < or >: {value!r}"
        if key == "publication_year" and _integer(value) is None:
            return f"Value for param {key} must be a number: {value!r}"
        if key in ("from_publication_date", "to_publication_date") and not _is_iso_date(value):
            return f"Value for param {key} must be a date in format YYYY-MM-DD: {value!r}"
    return None


def _is_iso_date(value: str) -> bool:
    if len(value) != 10 or value[4] != "-" or value[7] != "-":
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _cursor_start(cursor: str) -> int | None:
    """The offset a cursor this sandbox issued stands for; None for any other cursor."""
    if cursor == "*":
        return 0
    try:
        start = _integer(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (binascii.Error, ValueError):  # not base64, or not text
        return None
    return start if start is not None and start >= 0 else None


def _openalex_list(sandbox: Sandbox, query: dict[str, str]) -> Response:
    per_page = _integer(query.get("per_page", query.get("per-page", "25")))
    if per_page is None or not 1 <= per_page <= OPENALEX_PER_PAGE_MAX:
        return _openalex_invalid(
            f"per-page parameter must be between 1 and {OPENALEX_PER_PAGE_MAX}"
        )
    cursor, page_number = query.get("cursor"), None
    if cursor is not None:
        start = _cursor_start(cursor)
        if start is None:
            return _openalex_invalid(
                f"cursor {cursor!r} is not valid: start with cursor=* and pass each "
                "page's meta.next_cursor"
            )
    else:
        page_number = _integer(query.get("page", "1"))
        if page_number is None or page_number < 1:
            return _openalex_invalid("page parameter must be a positive integer")
        start = (page_number - 1) * per_page
        if start + per_page > MAX_RESULTS_WITHOUT_CURSOR:
            return _openalex_invalid(
                "Maximum results size of 10,000 records is exceeded. "
                "Cursor pagination is required for records beyond 10,000."
            )
    fields, problem = _openalex_select(query.get("select"))
    if problem:
        return _json(problem, 400)
    clauses = _openalex_filter(query.get("filter") or "")
    if isinstance(clauses, Response):
        return clauses
    if not sandbox.spend_daily():
        return _daily_budget_spent(sandbox)
    candidates: Sequence[Record] = sandbox.records
    for key, values in clauses:  # narrow cheaply by ID lookups first
        if key in ("openalex", "openalex_id", "ids.openalex", "doi"):
            found = [_openalex_entity(sandbox, v if key != "doi" else "doi:" + v) for v in values]
            candidates = list({r.key: r for r in found if r is not None}.values())
            break
    tests = [_openalex_predicate(sandbox, key, values) for key, values in clauses]
    matched = [r for r in candidates if all(test(r) for test in tests)]
    if query.get("search.semantic"):
        matched = _similar(matched, query["search.semantic"])
    elif query.get("search"):
        terms = collections.Counter(query["search"].lower().split())  # a repeated term counts
        scored = [
            (sum(n * sandbox.folded(r).count(t) for t, n in terms.items()), r) for r in matched
        ]
        matched = [r for score, r in sorted(scored, key=lambda s: (-s[0], s[1].key)) if score]
    page = matched[start : start + per_page]
    end = start + len(page)
    next_cursor = (
        base64.urlsafe_b64encode(str(end).encode()).decode()
        if cursor is not None and end < len(matched)
        else None
    )
    meta = {
        "count": len(matched),
        "db_response_time_ms": 1,
        "page": page_number,
        "per_page": per_page,
        "next_cursor": next_cursor,
        "groups_count": None,
    }
    results = b",".join(sandbox.work_json(r, fields) for r in page)
    page_body = b'{"meta":' + orjson.dumps(meta) + b',"results":[' + results + b'],"group_by":[]}'
    return Response(page_body, media_type="application/json")


SEMANTIC_TEXT_MAX = 2000  # the real semantic search reads this many characters of its text
_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=65536)
def _words(text: str) -> collections.Counter[str]:
    return collections.Counter(_WORD.findall(text.lower()))


def _similar(records: Sequence[Record], text: str) -> list[Record]:
    """``search.semantic``: the records that passed the filters, most similar first. The real
    API ranks by embeddings; here bm25 (k1 1.2, b 0.75) of the text's first 2,000 characters
    over the records' titles and abstracts, with the filtered records as the collection, stands
    in: an answer from the request and the corpus alone, as a search engine's is. A record that
    shares no word with the text is not similar at all, and is left out."""
    query = _words(text[:SEMANTIC_TEXT_MAX])
    docs = [_words(f"{r.title} {r.abstract}") for r in records]
    if not docs:
        return []
    mean = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    held = collections.Counter(term for d in docs for term in d.keys() & query.keys())
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in held.items()}

    def score(doc: collections.Counter[str]) -> float:
        scale = 1.2 * (0.25 + 0.75 * sum(doc.values()) / mean)
        return sum(idf[t] * query[t] * doc[t] * 2.2 / (doc[t] + scale) for t in idf if t in doc)

    scored = sorted(zip(map(score, docs), records, strict=True), key=lambda s: (-s[0], s[1].key))
    return [record for value, record in scored if value > 0]


def _openalex_filter(text: str) -> list[tuple[str, list[str]]] | Response:
    """A ``filter`` parameter's clauses, (key, values), or OpenAlex's 400 for a bad one."""
    clauses: list[tuple[str, list[str]]] = []
    for clause in filter(None, text.split(",")):
        key, _, value = clause.partition(":")
        key = key.strip().lower().replace("-", "_")
        if key not in OPENALEX_FILTERS:
            return _openalex_invalid(
                f"{key} is not a valid field. Valid fields are "
                f"underscore or hyphenated versions of: {', '.join(OPENALEX_FILTERS)}"
            )
        wrong = _filter_value_problem(key, value.split("|"))
        if wrong:
            return _openalex_invalid(wrong)
        clauses.append((key, value.split("|")))
    return clauses


def _daily_budget_spent(sandbox: Sandbox) -> Response:
    """OpenAlex's 429 when the day's list calls are spent. The real budget resets at midnight
    UTC; the sandbox's day is scaled like its limits."""
    now = dt.datetime.now(dt.UTC)
    midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    wait = max(1, int((midnight - now).total_seconds() / sandbox.config.time_scale))
    body = {
        "error": "Rate limit exceeded",
        "message": "Daily budget exhausted; it resets at midnight UTC.",
    }
    return Response(
        orjson.dumps(body), 429, {"Retry-After": str(wait)}, media_type="application/json"
    )


# --- Semantic Scholar ---------------------------------------------------------------------------


def _s2_entity(sandbox: Sandbox, raw: str) -> Record | None:
    text = raw.strip()
    head, _, rest = text.partition(":")
    if head.upper() in ("DOI", "ARXIV") and rest:
        text = rest
    try:
        parsed = ids.parse_any_id(text)
    except InvalidIdError:
        return None
    if parsed.scheme is ids.Scheme.S2:
        return sandbox.by_s2.get(parsed.value)
    if parsed.scheme is ids.Scheme.CORPUS_ID:
        return sandbox.by_corpus.get(int(parsed.value))
    if parsed.scheme is ids.Scheme.ARXIV:
        return sandbox.by_arxiv.get(parsed.value)
    if parsed.scheme is ids.Scheme.DOI:
        record = sandbox.by_doi.get(parsed.value)
        return record if record and record.kind != "preprint" else None
    return None


def _s2_fields(raw: str | None) -> tuple[list[str] | None, dict[str, str] | None]:
    if not raw:
        return None, None
    fields = [f.strip() for f in raw.split(",") if f.strip()]
    unknown = [
        f for f in fields if f not in payloads.S2_PAPER_FIELDS and f not in S2_REFERENCE_FIELDS
    ]
    if unknown:
        return None, {"error": f"Unrecognized or unsupported fields: [{', '.join(unknown)}]"}
    return fields, None


def _s2_references(sandbox: Sandbox, raw_id: str, query: dict[str, str]) -> Response:
    record = _s2_entity(sandbox, raw_id)
    if record is None:
        return _json({"error": f"Paper with id {raw_id} not found"}, 404)
    offset, limit = _integer(query.get("offset", "0")), _integer(query.get("limit", "100"))
    if offset is None or offset < 0:
        return _json({"error": "The offset parameter must be an integer of at least 0"}, 400)
    if limit is None or not 1 <= limit <= S2_REFERENCES_LIMIT_MAX:
        return _json(
            {"error": f"The limit parameter must be between 1 and {S2_REFERENCES_LIMIT_MAX}"}, 400
        )
    fields, problem = _s2_fields(query.get("fields"))
    if problem:
        return _json(problem, 400)
    wanted = fields or []
    signal_fields = [f for f in wanted if f in S2_REFERENCE_FIELDS]
    paper_fields = [f for f in wanted if f not in S2_REFERENCE_FIELDS] or None
    data = []
    for citation in record.references[offset : offset + limit]:
        cited = sandbox.by_key[citation.cites]
        paper = payloads.s2_unidentified(cited) if citation.null_ids else sandbox.paper(cited)
        item: dict[str, Any] = {}
        signals = {
            "contexts": citation.contexts,
            "intents": citation.intents,
            "contextsWithIntent": [
                {"context": c, "intents": citation.intents} for c in citation.contexts
            ],
            "isInfluential": citation.influential,
        }
        item.update({f: signals[f] for f in signal_fields})
        item["citedPaper"] = payloads.select(paper, paper_fields)
        data.append(item)
    page: dict[str, Any] = {"offset": offset, "data": data}
    if offset + limit < len(record.references):
        page["next"] = offset + limit
    return _json(page)


# --- arXiv --------------------------------------------------------------------------------------


def _arxiv_invalid(message: str) -> Response:
    """arXiv's 400: an Atom feed holding one error entry, as for a malformed ID."""
    body = payloads.atom_error(message, message.replace(" ", "_"))
    return Response(body.encode(), 400, media_type="application/atom+xml")


def _arxiv(sandbox: Sandbox, query: dict[str, str]) -> Response:
    start, per_page = _integer(query.get("start", "0")), _integer(query.get("max_results", "10"))
    if start is None or per_page is None:
        return _arxiv_invalid(f"{'start' if start is None else 'max_results'} must be an integer")
    if start < 0 or per_page < 0:
        return _arxiv_invalid(f"{'start' if start < 0 else 'max_results'} must be non-negative")
    listed = [i.strip() for i in query.get("id_list", "").split(",") if i.strip()]
    entries: list[str] = []
    matched: list[tuple[Record, int | None]] = []
    for raw in listed:
        try:
            arxiv_id, version = ids.split_arxiv_version(raw)
        except InvalidIdError:
            return _arxiv_invalid(f"incorrect id format for {raw}")
        record = sandbox.by_arxiv.get(arxiv_id)
        if record is not None and (version is None or version in dict(record.arxiv_versions)):
            matched.append((record, version))
    search = query.get("search_query", "")
    if search and not listed:
        terms = [
            t.split(":", 1)[-1].lower() for t in search.split() if t.upper() not in ("AND", "OR")
        ]
        matched = [
            (r, None)
            for r in sandbox.by_arxiv.values()
            if all(t in (r.title + " " + r.abstract).lower() for t in terms)
        ]
    page = matched[start : start + per_page]
    if any(record.hostile == "malformed_json" for record, _ in page):  # as its OpenAlex pages
        return Response(b"<feed><entry><id>broken", 200, media_type="application/atom+xml")
    for record, version in page:
        entries.append(payloads.atom_entry(record, version))
    text = f"search_query={search}&id_list={','.join(listed)}&start={start}&max_results={per_page}"
    feed = payloads.atom_feed(text, entries, len(matched), start, per_page)
    return Response(feed.encode(), 200, media_type="application/atom+xml")


# --- running ------------------------------------------------------------------------------------


@contextmanager
def running(world: World, config: SandboxConfig | None = None, port: int = 0) -> Iterator[str]:
    """Serve ``world`` on 127.0.0.1 in a background thread; yields the base URL."""
    app = create_app(world, config)
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    with local_server.in_thread(app, port, "the sandbox server") as base:
        yield base


def serve(world_dir: Path, config: SandboxConfig, sock: socket.socket) -> None:
    """Serve in the foreground (``inspire sandbox serve``) on a socket from
    :func:`local_server.bind`, which the CLI binds before it prints anything."""
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    local_server.serve_on(create_app(load(world_dir), config), sock)


def settings_for(base_url: str, **overrides: object) -> Settings:
    """Settings that point every source at a sandbox and keep out of its (scaled) limits."""
    values: dict[str, object] = {
        "openalex_url": base_url,
        "s2_url": base_url + "/graph/v1",
        "arxiv_url": base_url + "/api/query",
        "llm_base_url": base_url + "/v1",
        "openalex_rps": 100,
        "s2_rps": 1000,
        "arxiv_interval_s": 0.001,
    }
    values.update(overrides)
    return Settings.model_validate(values)


def env_lines(base_url: str, time_scale: float = 1.0) -> list[str]:
    """The ``INSPIRE_*`` settings that point the pipeline at a sandbox at ``base_url``."""
    return [
        f"INSPIRE_OPENALEX_URL={base_url}",
        f"INSPIRE_S2_URL={base_url}/graph/v1",
        f"INSPIRE_ARXIV_URL={base_url}/api/query",
        f"INSPIRE_LLM_BASE_URL={base_url}/v1",
        "INSPIRE_LLM_MODEL=sandbox-gpt",
        f"INSPIRE_OPENALEX_RPS={min(100.0, 10.0 * time_scale):g}",
        f"INSPIRE_S2_RPS={1.0 * time_scale:g}",
        f"INSPIRE_ARXIV_INTERVAL_S={3.0 / time_scale:g}",
    ]


# The sandbox's model is priced as gpt-4o-mini is ($ per million tokens in, out), so that a
# shell pointed at it plans, budgets and counts costs as a real build's does.
SANDBOX_PRICES = '{"sandbox-gpt": [0.15, 0.6]}'


def shell_lines(base_url: str, time_scale: float = 1.0) -> list[str]:
    """What ``inspire sandbox env`` prints: :func:`env_lines`, the openai backend (a build in
    that shell asks the sandbox's model, not the rules backend) and that model's price."""
    return [
        *env_lines(base_url, time_scale),
        "INSPIRE_LLM_BACKEND=openai",
        f"INSPIRE_LLM_PRICES={SANDBOX_PRICES}",
    ]
