"""The call log (``llm_calls``) as the LLM client reads and writes it: its keys, its rows, a
target's journal, and one call per key in flight.

A call's key hashes its backend, model, prompt and input: a logged answer under the same key
answers the call again, so an identical rerun makes no calls. A target's thread keeps its new
rows in its :class:`Journal` (:meth:`CallLog.journal`), for the caller to write with the results
they led to; a key one thread asks is held until answered (:meth:`CallLog.single_flight`), and a
twin takes that answer, so a key is asked once per build at any concurrency.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import duckdb
import pydantic

from inspire_build.tables import llm_log

T = TypeVar("T")


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


def input_hash(
    text: str,
    output_model: type[pydantic.BaseModel],
    context: Mapping[str, Any],
    options: Mapping[str, Any],
) -> str:
    """What a call asks, hashed: the rendered ``text``, the answer's schema, the whole
    ``context`` (the rules backend may read data the template does not show, and a hit must mean
    the same question) and the ``options`` that shape an answer (set ones only: unset options
    keep the keys logged before they existed)."""
    data = json.dumps(context, sort_keys=True, default=str)
    asked = f"{text}\0{schema_text(output_model)}\0{data}"
    if options:
        asked += "\0" + json.dumps(options, sort_keys=True)
    return hashlib.sha256(asked.encode()).hexdigest()


class Asked(NamedTuple):
    """One call as the log keys it (:func:`call_key`, with the client's backend and model), and
    ``step``, what it is for, which names its urgency: the prompt's name unless told."""

    key: str
    prompt_name: str
    prompt_hash: str
    input_hash: str
    step: str


class Use(NamedTuple):
    """One call a target's steps used: asked of the backend, or ``cached`` (answered from the
    call log, or from a twin target's call), for ``step`` (the prompt, or grade_deciding)."""

    call_key: str
    step: str
    cached: bool


class Journal(list[dict[str, Any]]):
    """A target's new call-log rows (:meth:`CallLog.journal`), and in ``uses`` every call its
    steps used, the answers from the log included: the cost ledger's rows (``llm_call_uses``)."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: list[Use] = []


def uses_of(calls: Sequence[dict[str, Any]]) -> list[Use]:
    """The calls a target used, where ``calls`` is its journal (else none are known)."""
    return list(calls.uses) if isinstance(calls, Journal) else []


class CallLog:
    """The log of one backend's and model's calls, through ``con``, shared by every thread;
    inside :meth:`journal`, a thread's own."""

    def __init__(self, con: duckdb.DuckDBPyConnection, backend: str, model: str) -> None:
        self._con, self.backend, self.model = con, backend, model
        self._lock = threading.Lock()  # the connection, the keys in flight, the shared answers
        # Inside journal(): this thread's new rows, the cursor it reads the log with, its rank.
        self._local = threading.local()
        self._flying: dict[str, threading.Event] = {}
        self._shared: dict[str, dict[str, Any]] = {}  # answered by a thread, maybe not written

    @contextlib.contextmanager
    def journal(
        self,
        reader: duckdb.DuckDBPyConnection,
        rows: Journal | None = None,
        rank: int = 0,
    ) -> Iterator[Journal]:
        """Keep this thread's new rows in the yielded :class:`Journal` (``rows``, else a new
        one) instead of writing them, with every call used, and read the log through ``reader``
        (a cursor of this thread's own). ``rank``: the target's place in the build."""
        local = self._local
        local.rows, local.reader, local.rank = (Journal() if rows is None else rows), reader, rank
        try:
            yield local.rows
        finally:
            del local.rows, local.reader, local.rank

    def inside(self) -> bool:
        """Whether this thread is inside a journal."""
        return getattr(self._local, "rows", None) is not None

    def rank(self) -> int:
        return int(getattr(self._local, "rank", 0))

    def handed(self, call: Callable[[], T]) -> Callable[[], T]:
        """``call`` for another thread, keeping its rows in this thread's journal and reading
        through a cursor of its own (made here: a cursor is not shared between threads)."""
        own, rows, rank = self._local.reader.cursor(), self._local.rows, self.rank()

        def run() -> T:
            try:
                with self.journal(own, rows, rank):
                    return call()
            finally:
                own.close()

        return run

    @contextlib.contextmanager
    def single_flight(self, key: str) -> Iterator[None]:
        """Inside a journal: hold ``key`` while this thread asks it; a thread asking the same key
        waits here until the holder is done. Elsewhere (one thread): nothing to hold."""
        if not self.inside():
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

    def used(self, use: Use) -> None:
        """Inside a journal: note a call the target's steps used, for the cost ledger."""
        journal = getattr(self._local, "rows", None)
        if isinstance(journal, Journal):
            journal.uses.append(use)

    def logged(self, key: str) -> str | None:
        """The answer logged under ``key`` (this thread's journal first, then a twin's answer,
        then the log), as JSON; None when there is none."""
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

    def record(
        self,
        asked: Asked,
        output: Mapping[str, Any],
        tokens: tuple[int, int],
        latency_ms: float,
        cost_usd: float | None,
    ) -> CallRecord:
        """A call's record (``output``: its answer, or its error), as :meth:`log` takes it."""
        keyed = (self.backend, self.model, asked.prompt_name, asked.prompt_hash, asked.input_hash)
        return CallRecord(*keyed, json.dumps(output), *tokens, latency_ms, cost_usd)

    def log(self, record: CallRecord, status: str = "answered") -> None:
        """Log a call: into this thread's journal (an answer shared with its twins), else now."""
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

    def written(self, keys: Iterable[str]) -> None:
        """These calls are in the log now: the log answers them from here on."""
        with self._lock:
            for key in keys:
                self._shared.pop(key, None)

    def keep_unwritten(self, con: duckdb.DuckDBPyConnection) -> int:
        """Write to the log the answers of targets whose records were never written; returns
        how many."""
        with self._lock:
            rows, self._shared = list(self._shared.values()), {}
        llm_log.write(con, rows)
        return len(rows)
