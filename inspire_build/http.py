"""The only module that sends HTTP requests.

One :class:`HttpClient` per process holds one ``requests.Session`` (connections are reused), a
pacer per source that holds across threads (``pacing.Pacer``, as the LLM's calls have), bounded
retries with backoff and jitter, a timeout on every request, base-URL overrides, credentials,
secret redaction, and the raw response store (record and replay).

Sources never build absolute URLs: they ask for ``(source, method, path, params, json)`` and a
:class:`SourceCodec` tells this module how that source names a *resource* (see
:class:`Described`), when a page is complete, how it reports errors, and which statuses are
transient. The same codec describes recorded cassettes on import, so a live request and a
replayed one share one key.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import email.utils
import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import duckdb
import requests
from requests.adapters import HTTPAdapter

from inspire_build import warehouse
from inspire_build.config import LLM_TARGETS_PER_SLOT, Settings
from inspire_build.errors import InspireError
from inspire_build.pacing import Pacer
from inspire_build.redaction import REDACTED, Redactor
from inspire_build.tables import raw

log = logging.getLogger(__name__)

SourceMode = Literal["live", "replay", "auto"]
Params = Sequence[tuple[str, str]]

# Query parameters and headers that carry credentials or personal data. They never reach a log,
# an error message, the store or an export.
SECRET_PARAMS = frozenset({"api_key", "api-key", "apikey", "key", "mailto", "email", "token"})
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "cookie", "set-cookie", "from"})


# --- errors -------------------------------------------------------------------------------------


class SourceError(InspireError):
    """A request to a source failed. Messages only ever hold redacted URLs."""


class RetriesExhausted(SourceError):
    """The retry budget was spent on transient failures (429/403/5xx/timeouts/bad bodies)."""


class UnreadableBody(RetriesExhausted):
    """Every attempt got a body that does not parse: the answer itself is broken, not the link.

    A batch answering this may hold one bad record; ``split_unreadable`` finds that record.
    """

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


_T = TypeVar("_T")
Item = TypeVar("Item")
Answer = TypeVar("Answer")


def split_unreadable(
    ask: Callable[[list[str]], list[_T]],
    listed: list[str],
    failed: dict[str, str] | None,
    source: str,
    shown: Callable[[str], str] = str,
) -> list[_T]:
    """``ask(listed)``, and when its answer stays unreadable, ask again in halves.

    One bad record breaks a whole batch's answer; halving finds it among n IDs in about
    2·log2(n) requests (one at a time would be n, and S2 and arXiv allow one per second or
    three). A single ID whose own answer is unreadable goes into ``failed`` (``shown(ID)`` ->
    why, naming the source) instead of failing the others. Without ``failed``, it raises.
    """
    try:
        return ask(listed)
    except UnreadableBody as error:
        if failed is None:
            raise
        if len(listed) == 1:
            name = shown(listed[0])
            failed[name] = f"{source}'s answer for {name} stays malformed: {error.problem}"
            return []
        half = len(listed) // 2
        return split_unreadable(ask, listed[:half], failed, source, shown) + split_unreadable(
            ask, listed[half:], failed, source, shown
        )


class ReplayMiss(SourceError):
    """Replay mode was asked for a resource the raw response store does not hold."""


class ApiError(SourceError):
    """The source answered with a final error status; carries the server's own message."""

    def __init__(self, source: str, status: int, message: str, url: str) -> None:
        self.source, self.status, self.server_message, self.url = source, status, message, url
        super().__init__(f"{source} answered {status} for {url}: {message}")


class BadRequest(ApiError):
    """400: the request was malformed (bad filter, unknown field, bad ID format)."""

    exit_code = 2


class Unauthorized(ApiError):
    """401/403 that is not a rate limit: a missing or wrong API key."""


class NotFound(ApiError):
    """404, or a source's own way of saying that nothing matched."""


def error_for_status(source: str, status: int, message: str, url: str) -> ApiError:
    kind = {400: BadRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound}.get(
        status, ApiError
    )
    return kind(source, status, message, url)


# --- redaction ----------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """Drop credential query parameters and any ``user:password@`` from a URL."""
    parts = urlsplit(url)
    query = [
        (k, REDACTED if k.lower() in SECRET_PARAMS else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe=":|,*/"), ""))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in SECRET_HEADERS}


class _RedactingFilter(logging.Filter):
    """Scrubs secrets from records of loggers we do not own (urllib3 logs full URLs at DEBUG)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._redactor.text(record.getMessage())
        record.args = None
        return True


# --- describing requests ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Described:
    """What a request asks for, as the store keys it.

    ``resource`` is the source's canonical name for the endpoint, entity IDs, filters and page;
    ``fields`` and ``page_size`` are the presentation parameters left out of it.
    ``fields=None`` means the source's full record.
    """

    resource: str
    fields: tuple[str, ...] | None = None
    page_size: int | None = None


@dataclasses.dataclass(frozen=True)
class Paging:
    """How one source's paged lists chain, so replay can answer a page of one size from stored
    pages of another (a reference list recorded 100 at a time, asked for 1,000 at a time).

    A paged resource is ``"<list> <position>"``: ``position`` names where its page starts
    (``offset=100``, ``page=first``, ``cursor=...``), the rest names the list.
    """

    # a page body -> its items, and the position of the page after it (None: none follows)
    split: Callable[[bytes], tuple[list[Any], str | None]]
    # (the first page's body, the items, the next position or None) -> the joined page's body
    join: Callable[[bytes, list[Any], str | None], bytes]
    # (the last page's body, the items gathered) -> whether the list truly ends there; asked
    # only when the chain ran out, so a list whose pages do not chain is never cut short
    ends: Callable[[bytes, int], bool] = lambda _last, _count: True


def json_error_message(body: bytes) -> str:
    """A JSON API's error text: its ``error`` and ``message`` fields, else the body itself."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode(errors="replace").strip()[:500] or "(empty body)"
    if isinstance(data, dict):
        parts = [str(data[k]) for k in ("error", "message") if data.get(k)]
        if parts:
            return ": ".join(parts)
    return json.dumps(data)[:500]


def check_json(body: bytes) -> object:
    """Raises ValueError on a truncated or malformed JSON body."""
    return json.loads(body)


@dataclasses.dataclass(frozen=True)
class SourceCodec:
    """How http.py talks about one source. Each module in ``sources/`` defines one."""

    name: str
    default_base_url: str
    describe: Callable[[str, str, Params, Any], Described]
    # Whether an answer holds the whole resource, judged on its body as check_body read it.
    is_complete: Callable[[Any], bool]
    # How it reports an error, and reads a body, refusing a malformed one (ValueError): as a
    # JSON API does, unless told. The reading serves the store's is_complete too, and a JSON
    # API's caller (Response.json), so a fresh body is parsed once.
    error_message: Callable[[bytes], str] = json_error_message
    check_body: Callable[[bytes], object] = check_json
    transient_statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504})
    credentials: Callable[[Settings], tuple[Params, dict[str, str]]] = lambda _: ((), {})
    max_in_flight: int | None = None
    # Whether an answer with a transient status is in fact final, judged by its body: OpenAlex's
    # 403 is its per-second limit only when it says so.
    final_despite_status: Callable[[int, bytes], bool] = lambda _status, _body: False
    paging: Paging | None = None  # how its paged lists chain, for replay (see Paging)

    def is_transient(self, status: int, body: bytes) -> bool:
        """Worth a retry: a transient status whose body does not make it final. Every other
        4xx (a malformed request, a wrong key, a missing record) is an answer, never retried."""
        return status in self.transient_statuses and not self.final_despite_status(status, body)


@dataclasses.dataclass(frozen=True)
class Response:
    source: str
    status: int
    body: bytes
    headers: Mapping[str, str]
    url: str  # redacted
    from_store: bool
    # A fresh answer's body as its source's check_body read it (a 560 KB OpenAlex page takes
    # milliseconds to parse, and a build reads hundreds): json() returns it, when it is JSON.
    document: Any = dataclasses.field(default=None, compare=False, repr=False)

    def json(self) -> Any:
        """The body's JSON: a fresh answer's own reading (one object: read it, do not change
        it), else parsed here."""
        if isinstance(self.document, dict | list):
            return self.document
        return json.loads(self.body)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def request_key(source: str, method: str, url: str, body: bytes | None) -> str:
    digest = hashlib.sha256()
    for part in (source, method.upper(), url, body or b""):
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def serves(
    described: Described,
    status: int,
    row_fields: Sequence[str] | None,
    row_page_size: int | None,
    row_complete: bool | None,
) -> bool:
    """The replay matching rule: may a stored response answer this request?

    A stored response serves a request for the same resource when it holds every requested
    field (``row_fields`` None means the full record), and it has the requested page size, or
    it holds the whole result set (``row_complete``), which serves any page size. An error
    answer (4xx) serves any page size: the resource itself was refused or not found.
    """
    if row_fields is not None and (
        described.fields is None or not set(described.fields) <= set(row_fields)
    ):
        return False
    if described.page_size is None or row_page_size is None or status >= 400:
        return True
    return bool(row_complete) or described.page_size == row_page_size


# --- rate limiting ------------------------------------------------------------------------------


# A server times a request when it reads it, after delays of its own (a busy event loop, a busy
# machine), so two requests that left exactly an interval apart can be seen closer, and the
# second refused: S2 and arXiv count exact windows, and a refusal costs a back-off of a second.
# Requests leave a tenth of an interval more apart, at most 10 ms (1% of S2's 1 s).
SEND_MARGIN_SHARE, SEND_MARGIN_MAX_S = 0.1, 0.01


def send_margin(interval_s: float) -> float:
    """How much more than ``interval_s`` apart a source's requests leave."""
    return min(SEND_MARGIN_MAX_S, interval_s * SEND_MARGIN_SHARE)


# --- the raw response store ---------------------------------------------------------------------


class ResponseStore:
    """Raw responses in the warehouse's ``raw_http`` table, matched by resource (see serves())."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._lock = threading.Lock()  # one DuckDB connection, many fetching threads

    def _rows(self, source: str, resource: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return raw.responses(self._con, f"{source} {resource}")

    def lookup(
        self, source: str, described: Described, paging: Paging | None = None
    ) -> Response | None:
        """A stored answer to ``described``: a row that serves it, else (for a paged list)
        contiguous stored pages of another size joined into one (:meth:`joined`)."""
        for status, body, headers, url, fields, page_size, complete in self._rows(
            source, described.resource
        ):
            if serves(described, status, fields, page_size, complete):
                return Response(
                    source,
                    status,
                    bytes(body or b""),
                    json.loads(headers or "{}"),
                    url,
                    from_store=True,
                )
        if paging is None or described.page_size is None or " " not in described.resource:
            return None
        return self.joined(source, described, paging)

    def _page(self, source: str, resource: str, fields: tuple[str, ...] | None) -> Any:
        """The newest stored 200 page of ``resource`` holding ``fields``, of any page size."""
        for status, body, headers, url, row_fields, _, _ in self._rows(source, resource):
            if status == 200 and serves(
                Described(resource, fields), status, row_fields, None, None
            ):
                return bytes(body or b""), json.loads(headers or "{}"), url
        return None

    def joined(self, source: str, described: Described, paging: Paging) -> Response | None:
        """Stored pages from the requested position on, chained until they hold a page of the
        requested size or the list ends; None when a page is missing, when they overshoot the
        size (the next position would fall inside a stored page), or when the chain ends before
        the list does."""
        wanted = described.page_size or 0
        listing, _, position = described.resource.rpartition(" ")
        items: list[Any] = []
        pages: list[Any] = []
        following: str | None = position
        while following is not None and len(items) < wanted:
            page = self._page(source, f"{listing} {following}", described.fields)
            if page is None:
                return None
            pages.append(page)
            got, following = paging.split(page[0])
            items += got
            if not got:
                following = None
        if not pages or len(items) > wanted:
            return None
        if following is None and not paging.ends(pages[-1][0], len(items)):
            return None
        first = pages[0]
        body = paging.join(first[0], items, following)
        return Response(source, 200, body, first[1], first[2], from_store=True)

    def save(self, rows: Sequence[Mapping[str, object]]) -> int:
        with self._lock:
            # a response is saved because the store did not hold it, unless refreshed
            return warehouse.upsert(self._con, "raw_http", rows, ["request_key"], mostly_new=True)


class HeldResponses(ResponseStore):
    """A store read from a read-only copy of the warehouse (a worker process's, which may not
    open the warehouse itself) whose new responses are kept in :attr:`saved` for the process
    that owns the warehouse to write."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(con)
        self.saved: list[dict[str, object]] = []

    def save(self, rows: Sequence[Mapping[str, object]]) -> int:
        with self._lock:
            self.saved += [dict(row) for row in rows]
        return len(rows)


class Limits:
    """The spacing of each source's calls and the guard on its calls in flight, for the threads
    of one process; a cluster's workers share theirs through the scheduler (dask_runner.py)."""

    def rate(self, name: str, interval_s: float, sleep: Callable[[float], None]) -> Any:
        return Pacer(interval_s, sleep=sleep, margin_s=send_margin(interval_s))

    def in_flight(self, name: str, most: int) -> Any:
        return threading.BoundedSemaphore(most)


def store_row(
    codec: SourceCodec,
    described: Described,
    *,
    method: str,
    url: str,
    request_body: bytes | None,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    origin: str,
    fetched_at: dt.datetime,
    document: Any = None,
) -> dict[str, object]:
    """One ``raw_http`` row. ``url``, ``request_body`` and ``body`` must already be redacted.
    ``document``: the body as the codec's check_body read it, else it is read here."""
    if status < 400 and document is None:
        document = codec.check_body(body)
    return {
        "request_key": request_key(codec.name, method, url, request_body),
        "source": codec.name,
        "method": method.upper(),
        "url": url,
        "request_body": request_body.decode() if request_body else None,
        "status": status,
        "headers": dict(redact_headers(headers)),
        "body": body,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "origin": origin,
        "fetched_at": fetched_at,
        "resource_key": f"{codec.name} {described.resource}",
        "fields": list(described.fields) if described.fields is not None else None,
        "page_size": described.page_size,
        "complete": status < 400 and codec.is_complete(document),
    }


# --- the client ---------------------------------------------------------------------------------


@dataclasses.dataclass
class CallStats:
    """Per-source counters: what was asked, what went over the network, what was retried."""

    requests: int = 0
    network: int = 0
    from_store: int = 0
    retries: int = 0


# The header the sandbox answers with: its responses are the emulator's, not the real API's.
SANDBOX_HEADER = "x-inspire-sandbox"


def origin_of(origin: str, headers: Mapping[str, str]) -> str:
    """Where a response came from: ``sandbox`` when the local emulator answered (a query for
    ``origin = 'live'`` must not find emulated data), else the client's ``origin``."""
    answered = {name.lower(): value for name, value in headers.items()}
    return "sandbox" if origin == "live" and answered.get(SANDBOX_HEADER) == "1" else origin


class HttpClient:
    """Sends every request of the product. Safe to share across threads."""

    def __init__(
        self,
        settings: Settings,
        codecs: Mapping[str, SourceCodec],
        store: ResponseStore | None = None,
        *,
        mode: SourceMode | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        origin: str = "live",
        limits: Limits | None = None,
    ) -> None:
        self.settings = settings
        self.codecs = dict(codecs)
        self.store = store
        self.mode: SourceMode = mode or settings.source_mode
        if self.mode != "live" and store is None:
            raise SourceError(f"source mode {self.mode!r} needs a raw response store")
        self.origin = origin
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._session = session or _session(settings)
        self._redactor = Redactor.for_settings(settings)
        limits = limits or Limits()
        self._limiters = {
            name: limits.rate(name, _interval(settings, name), sleep) for name in self.codecs
        }
        self._in_flight = {
            name: limits.in_flight(name, codec.max_in_flight)
            for name, codec in self.codecs.items()
            if codec.max_in_flight
        }
        self.stats = {name: CallStats() for name in self.codecs}
        self._stats_lock = threading.Lock()
        _install_log_filter(self._redactor)

    def recording_into(self, store: ResponseStore) -> HttpClient:
        """This client, sharing its session, rate limits, guards and counts, with its responses
        looked up in and saved to ``store``: a thread that reads the warehouse through a cursor
        of its own keeps what it fetches for the thread that writes (:class:`HeldResponses`)."""
        twin = copy.copy(self)
        twin.store = store
        return twin

    def base_url(self, source: str) -> str:
        configured = configured_base_urls(self.settings)
        return configured.get(source, self.codecs[source].default_base_url).rstrip("/")

    def request(
        self,
        source: str,
        method: str,
        path: str,
        params: Params = (),
        json_body: Any = None,
    ) -> Response:
        """Answer one request from the store or the network, per the source mode.

        Returns final responses of any status; :meth:`get` raises on errors instead.
        """
        codec = self.codecs[source]
        described = codec.describe(method, path, params, json_body)
        self._count(source, "requests")
        if self.mode in ("replay", "auto") and self.store is not None:
            hit = self.store.lookup(source, described, codec.paging)
            if hit is not None:
                self._count(source, "from_store")
                return hit
            if self.mode == "replay":
                raise ReplayMiss(
                    f"replay mode: no recorded {source} response for {described.resource}; "
                    "import a snapshot or run with INSPIRE_SOURCE_MODE=auto/live"
                )
        return self._fetch(codec, described, method, path, params, json_body)

    def get(
        self,
        source: str,
        path: str,
        params: Params = (),
        json_body: Any = None,
        method: str = "GET",
    ) -> Response:
        """:meth:`request`, raising a typed :class:`ApiError` on a final error status."""
        response = self.request(source, method, path, params, json_body)
        if not response.ok:
            message = self._redactor.text(self.codecs[source].error_message(response.body))
            raise error_for_status(source, response.status, message, response.url)
        return response

    def at_once(self, ask: Callable[[Item], Answer], items: Sequence[Item]) -> list[Answer]:
        """``ask(item)`` for every item, up to ``concurrency`` at a time, answers in the items'
        order. Each source's rate limit still spaces the requests; what runs at once is one
        request's round trip, parsing and storing beside the next one's. The first error is
        raised once the items already started end; those not started are dropped."""
        width = max(1, min(self.settings.concurrency, len(items)))
        if width == 1:
            return [ask(item) for item in items]
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="http-at-once") as pool:
            futures = [pool.submit(ask, item) for item in items]
            try:
                return [future.result() for future in futures]
            except BaseException:
                for future in futures:
                    future.cancel()
                raise

    # --- internals ---

    def _count(self, source: str, name: str) -> None:
        with self._stats_lock:
            stats = self.stats[source]
            setattr(stats, name, getattr(stats, name) + 1)

    def _fetch(
        self,
        codec: SourceCodec,
        described: Described,
        method: str,
        path: str,
        params: Params,
        json_body: Any,
    ) -> Response:
        cred_params, cred_headers = codec.credentials(self.settings)
        url = self.base_url(codec.name) + path
        send_params = [*params, *cred_params]
        body = json.dumps(json_body).encode() if json_body is not None else None
        shown = redact_url(url + ("?" + urlencode(params, safe=":|,*/") if params else ""))
        shown = self._redactor.text(shown)
        attempts = self.settings.http_max_retries + 1
        last_problem = "no attempt made"
        unreadable = 0
        for attempt in range(attempts):
            if attempt:
                self._count(codec.name, "retries")
            self._limiters[codec.name].acquire()
            self._count(codec.name, "network")
            try:
                raw = self._send(codec, method, url, send_params, cred_headers, body)
            except (
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,  # the connection broke mid-body
            ) as error:
                last_problem = type(error).__name__
                self._back_off(codec, shown, attempt, attempts, last_problem, None)
                continue
            if codec.is_transient(raw.status_code, raw.content):
                last_problem = f"status {raw.status_code}"
                self._back_off(
                    codec, shown, attempt, attempts, last_problem, raw.headers.get("Retry-After")
                )
                continue
            content, document = self._redactor.data(raw.content), None
            if raw.status_code < 400:
                try:
                    document = codec.check_body(content)
                except ValueError as error:  # truncated or malformed: never stored
                    last_problem = f"unreadable body ({error})"
                    unreadable += 1
                    self._back_off(codec, shown, attempt, attempts, last_problem, None)
                    continue
            return self._record(codec, described, method, shown, body, raw, content, document)
        message = (
            f"{codec.name}: gave up on {method.upper()} {said(shown)} after {attempts} attempts "
            f"(last: {last_problem})"
        )
        if unreadable == attempts:
            raise UnreadableBody(message, last_problem)
        raise RetriesExhausted(message)

    def _send(
        self,
        codec: SourceCodec,
        method: str,
        url: str,
        params: Params,
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> requests.Response:
        semaphore = self._in_flight.get(codec.name)
        if semaphore:
            semaphore.acquire()
        try:
            merged = {"Content-Type": "application/json"} if body is not None else {}
            self._limiters[codec.name].sent()
            return self._session.request(
                method,
                url,
                params=list(params),
                data=body,
                headers={**merged, **headers},
                timeout=self.settings.http_timeout_s,
            )
        finally:
            if semaphore:
                semaphore.release()

    def _record(
        self,
        codec: SourceCodec,
        described: Described,
        method: str,
        shown: str,
        body: bytes | None,
        raw: requests.Response,
        content: bytes,
        document: Any,
    ) -> Response:
        headers = redact_headers(dict(raw.headers))
        response = Response(codec.name, raw.status_code, content, headers, shown, False, document)
        if self.store is not None:
            self.store.save(
                [
                    store_row(
                        codec,
                        described,
                        method=method,
                        url=shown,
                        request_body=self._redactor.data(body) if body else None,
                        status=raw.status_code,
                        headers=headers,
                        body=content,
                        origin=origin_of(self.origin, headers),
                        fetched_at=dt.datetime.now(dt.UTC),
                        document=document,
                    )
                ]
            )
        return response

    def _back_off(
        self,
        codec: SourceCodec,
        shown: str,
        attempt: int,
        attempts: int,
        problem: str,
        retry_after: str | None,
    ) -> None:
        if attempt + 1 >= attempts:
            return
        delay = min(self.settings.http_backoff_cap_s, self.settings.http_backoff_s * 2**attempt)
        delay *= self._rng.uniform(0.5, 1.0)  # jitter: threads that failed together spread out
        asked = parse_retry_after(retry_after)
        if asked is not None:
            if asked > self.settings.http_max_wait_s:
                raise RetriesExhausted(
                    f"{codec.name}: {problem} for {said(shown)}; the server asks to wait "
                    f"{asked:.0f} s, "
                    f"more than INSPIRE_HTTP_MAX_WAIT_S={self.settings.http_max_wait_s:.0f} "
                    "(a daily quota?)"
                )
            delay = max(delay, asked)
        log.warning(
            "%s: %s for %s; retry %d/%d in %.2f s",
            codec.name,
            problem,
            said(shown),
            attempt + 1,
            attempts - 1,
            delay,
        )
        self._sleep(delay)


def said(url: str, limit: int = 200) -> str:
    """A URL as a message shows it: a batch request's (a hundred IDs) is cut to ``limit``
    characters, with its length, so one error stays one readable line (the store keeps it
    whole)."""
    return url if len(url) <= limit else f"{url[:limit]}... ({len(url):,} characters)"


def health_ok(url: str, timeout_s: float = 2.0) -> bool:
    """Whether a local service answers ``GET url`` with 200 (a Prefect server's health check):
    no store, no retries, no limits; any failure to connect is False."""
    try:
        return requests.get(url, timeout=timeout_s).status_code == 200
    except requests.RequestException:
        return False


def parse_retry_after(value: str | None, now: dt.datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - (now or dt.datetime.now(dt.UTC))).total_seconds())


def configured_base_urls(settings: Settings) -> dict[str, str]:
    """Source name -> the base URL the settings point it at (the real API or a sandbox)."""
    return {"openalex": settings.openalex_url, "s2": settings.s2_url, "arxiv": settings.arxiv_url}


def _interval(settings: Settings, source: str) -> float:
    rates = {
        "openalex": 1 / settings.openalex_rps,
        "s2": 1 / settings.s2_rps,
        "arxiv": settings.arxiv_interval_s,
    }
    return rates.get(source, 0.0)


def _session(settings: Settings) -> requests.Session:
    session = requests.Session()
    # Lineage asks up to `concurrency` + 1 at once (at_once) with S2's reference lists in a
    # thread beside them, and each target whose LLM steps are in progress one more (the search
    # check): a smaller pool throws connections away.
    steps = settings.llm_concurrency * LLM_TARGETS_PER_SLOT
    room = max(4, settings.concurrency + 2 + steps)
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=room)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = "inspire-build (+https://github.com/inspire-build)"
    return session


_filters_lock = threading.Lock()


def _install_log_filter(redactor: Redactor) -> None:
    """Attach a redacting filter to the transport loggers (once per redactor)."""
    with _filters_lock:
        for name in ("urllib3.connectionpool", "requests", __name__):
            logger = logging.getLogger(name)
            logger.filters = [f for f in logger.filters if not isinstance(f, _RedactingFilter)]
            logger.addFilter(_RedactingFilter(redactor))
