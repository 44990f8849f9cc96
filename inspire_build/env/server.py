"""The tool server for external agents: search, read and submit over HTTP/JSON (and MCP).

:class:`ToolSessions` holds the sessions of one *run* (what the server was started for, by
name); the HTTP app here and the MCP server in ``mcp_server.py`` are thin shells over it, and
every argument of every call passes the one validation path of ``limits.py``.

- ``start`` opens an instance and returns a session token, a random secret that every later
  call must carry. The warehouse keeps only its sha256.
- Each (run, instance) has one session: one budget and one final submission. A second
  ``start`` with the session's token resumes it, unchanged; without it, it is refused (the
  session belongs to another client); once submitted, it is refused. Nothing resets a budget.
- One client can hold sessions on several instances at once; a call is answered by the
  session its token names, and refused when the token is unknown or names another instance.
- Sessions live in the warehouse (``env_sessions`` with status ``open``, ``env_steps`` written
  as each step is taken), so a server killed and restarted resumes them.
- Scores are never returned, except by a server built with a ``judge`` (the CLI's
  ``--debug-reveal-scores-to-agent``), which records ``scores_revealed`` on every session it
  touches and in its trajectory line.
- Refused calls (out of bounds, bad token, past the budget, after submit) are charged nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import logging
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb
import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inspire_build import local_server, splits, warehouse
from inspire_build.env import limits, store
from inspire_build.env.core import DEFAULT_BUDGET, Backend, SearchEnv, Task
from inspire_build.env.store import ServerSession, SessionStatus
from inspire_build.errors import InputError
from inspire_build.evaluation import inputs
from inspire_build.evaluation.funnel import Trajectory
from inspire_build.evaluation.score import score

Judge = Callable[[SearchEnv], dict[str, float | None]]
OnSubmit = Callable[[SearchEnv, bool], None]  # the session's env, and whether scores were shown


class NoSession(InputError):
    """A tool was called without a session token."""


class WrongToken(InputError):
    """The token is unknown to this run, or its session is on another instance."""


class UnknownInstance(InputError):
    """No instance of the served split version has this ID."""


class SessionTaken(InputError):
    """``start`` on an instance whose open session another token holds."""


class AlreadySubmitted(InputError):
    """``start`` on an instance whose session of this run is final."""


def token_digest(token: str) -> str:
    """What the warehouse keeps of a session token: its sha256, in hex."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclasses.dataclass
class _Live:
    """A session this process holds: its row, its environment, and the steps written so far."""

    record: ServerSession
    env: SearchEnv
    logged: int


class ToolSessions:
    """The sessions of one run over one split version's tasks, kept in the warehouse."""

    def __init__(
        self,
        tasks: Sequence[Task],
        backend: Backend,
        con: duckdb.DuckDBPyConnection,
        *,
        budget: int = DEFAULT_BUDGET,
        run_name: str = "default",
        version: str | None = None,
        on_submit: OnSubmit | None = None,
        judge: Judge | None = None,
    ) -> None:
        if budget < 0:
            raise ValueError("budget must be >= 0")
        self.tasks = {task.instance_id: task for task in tasks}
        self.backend, self.con, self.budget = backend, con, budget
        self.run_name, self.version, self.judge = run_name, version, judge
        self.on_submit = on_submit
        self._lock = threading.Lock()
        self._live: dict[str, _Live] = {}  # token digest -> session

    @property
    def reveals_scores(self) -> bool:
        return self.judge is not None

    def instances(self) -> list[dict[str, Any]]:
        """What an agent may know of each instance: its ID, brief and cutoff."""
        return [
            {"instance_id": t.instance_id, "brief": t.brief, "cutoff": t.cutoff.isoformat()}
            for t in self.tasks.values()
        ]

    def start(
        self, instance_id: str, agent: str = "external", token: str | None = None
    ) -> dict[str, Any]:
        """Open an instance, or resume its open session with that session's token."""
        chosen, given = limits.instance_id(instance_id), limits.token(token)
        agent = limits.agent(agent)
        with self._lock:
            task = self.tasks.get(chosen)
            if task is None:
                raise UnknownInstance(f"no instance {chosen!r} in this split version")
            stored = store.run_session(self.con, self.run_name, chosen)
            if stored is None:
                secret = secrets.token_urlsafe(32)
                live = self._open(task, agent, token_digest(secret))
                return self._opened(live, secret, resumed=False)
            if stored.status is not SessionStatus.OPEN:
                raise AlreadySubmitted(
                    f"instance {chosen!r} was already submitted in run {self.run_name!r}; "
                    "its submission is final"
                )
            if given is None or not hmac.compare_digest(token_digest(given), stored.token_sha256):
                raise SessionTaken(
                    f"instance {chosen!r} is open in run {self.run_name!r} under another "
                    "session; only that session's token resumes it"
                )
            return self._opened(self._resume(stored), given, resumed=True)

    def search(
        self,
        token: str | None,
        query: str,
        k: int = limits.DEFAULT_K,
        instance_id: str | None = None,
    ) -> dict[str, Any]:
        text, depth = limits.query(query), limits.k(k)
        with self._lock:
            live = self._session(token, instance_id)
            result = live.env.search(text, depth)
            self._log_steps(live)
            return {
                "status": result.status.value,
                "results": [dataclasses.asdict(found) for found in result.results],
                "budget_left": result.budget_left,
            }

    def read(
        self, token: str | None, paper_id: str, instance_id: str | None = None
    ) -> dict[str, Any]:
        wanted = limits.paper_id(paper_id)
        with self._lock:
            live = self._session(token, instance_id)
            result = live.env.read(wanted)
            self._log_steps(live)
            paper = dataclasses.asdict(result.paper) if result.paper else None
            return {
                "status": result.status.value,
                "paper": paper,
                "budget_left": result.budget_left,
            }

    def submit(
        self, token: str | None, ranking: Sequence[str], instance_id: str | None = None
    ) -> dict[str, Any]:
        """Submit the final ranking; a second submit is answered ``submitted``, unchanged."""
        ids = limits.ranking(ranking)
        with self._lock:
            live = self._session(token, instance_id)
            env = live.env
            if env.submitted is not None:
                return self._submitted(live, SessionStatus.SUBMITTED.value)
            result = env.submit(ids)
            store.submit_session(self.con, live.record.session_id, result.ranking, _now())
            live.record = dataclasses.replace(
                live.record, status=SessionStatus.SUBMITTED, ranking=result.ranking
            )
            if self.on_submit is not None:
                self.on_submit(env, live.record.scores_revealed)
            answer = self._submitted(live, result.status.value)
            if self.judge is not None:
                answer["scores"] = self.judge(env)
            return answer

    # --- sessions ---------------------------------------------------------------------------

    def _open(self, task: Task, agent: str, digest: str) -> _Live:
        record = ServerSession(
            session_id=uuid.uuid4().hex[:16],
            run_name=self.run_name,
            version_id=self.version,
            instance_id=task.instance_id,
            agent=agent,
            backend=self.backend.name,
            budget=self.budget,
            status=SessionStatus.OPEN,
            token_sha256=digest,
            scores_revealed=self.reveals_scores,
            started_at=_now(),
        )
        store.open_session(self.con, record)
        live = _Live(record, SearchEnv(task, record.budget, self.backend), 0)
        self._live[digest] = live
        return live

    def _resume(self, stored: ServerSession) -> _Live:
        """The session as this process holds it, rebuilt from the warehouse on first use."""
        live = self._live.get(stored.token_sha256)
        if live is not None:
            return live
        task = self.tasks.get(stored.instance_id)
        if task is None:
            raise WrongToken("this token's session is on an instance this server does not serve")
        if self.reveals_scores and not stored.scores_revealed:
            store.mark_scores_revealed(self.con, stored.session_id)
            stored = dataclasses.replace(stored, scores_revealed=True)
        steps = store.session_steps(self.con, stored.session_id)
        final = None if stored.status is SessionStatus.OPEN else (stored.ranking or ())
        env = SearchEnv(task, stored.budget, self.backend, steps=steps, submitted=final)
        live = _Live(stored, env, len(steps))
        self._live[stored.token_sha256] = live
        return live

    def _session(self, token: str | None, instance_id: str | None) -> _Live:
        given = limits.token(token)
        named = None if instance_id is None else limits.instance_id(instance_id)
        if given is None:
            raise NoSession(
                "no session token: start an instance first (the start tool, or POST /start) "
                "and pass the token it returns with every call"
            )
        digest = token_digest(given)
        live = self._live.get(digest)
        if live is None:
            stored = store.token_session(self.con, self.run_name, digest)
            if stored is None:
                raise WrongToken(f"unknown session token for run {self.run_name!r}")
            live = self._resume(stored)
        if named is not None and named != live.record.instance_id:
            raise WrongToken(f"this session token is not for instance {named!r}")
        return live

    def _log_steps(self, live: _Live) -> None:
        """Write the steps the last call took (none when it was refused)."""
        for number in range(live.logged + 1, len(live.env.steps) + 1):
            store.log_step(self.con, live.record.session_id, number, live.env.steps[number - 1])
            live.logged = number

    @staticmethod
    def _opened(live: _Live, token: str, *, resumed: bool) -> dict[str, Any]:
        return {
            "instance_id": live.env.task.instance_id,
            "brief": live.env.task.brief,
            "cutoff": live.env.task.cutoff.isoformat(),
            "budget": live.env.budget,
            "budget_left": max(0, live.env.budget_left),
            "token": token,
            "resumed": resumed,
        }

    @staticmethod
    def _submitted(live: _Live, status: str) -> dict[str, Any]:
        return {
            "status": status,
            "instance_id": live.env.task.instance_id,
            "ranking": list(live.env.submitted or ()),
            "calls": len(live.env.steps),
        }


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def judge_from(con: duckdb.DuckDBPyConnection, version: str) -> Judge:
    """Per-instance scores of a submitted session, against the version's qrels (debugging only:
    a server that answers with them is an oracle for the gold)."""
    normalise = inputs.normaliser(warehouse.crosswalk(con))
    qrels = splits.version_qrels(con, version)

    def judge(env: SearchEnv) -> dict[str, float | None]:
        iid = env.task.instance_id
        ranking = [normalise(d) for d in env.submitted or ()]
        path = Trajectory(tuple(tuple(normalise(d) for d in s.exposed) for s in env.steps))
        scored = score({iid: qrels.get(iid, {})}, {iid: ranking}, {iid: path}, samples=1)
        return scored.per_instance[iid]

    return judge


# --- HTTP --------------------------------------------------------------------------------------


class StartBody(BaseModel):
    instance_id: str
    agent: str = "external"
    token: str | None = None  # to resume this instance's open session


class SearchBody(BaseModel):
    token: str | None = None
    query: str
    k: int = limits.DEFAULT_K
    instance_id: str | None = None


class ReadBody(BaseModel):
    token: str | None = None
    paper_id: str
    instance_id: str | None = None


class SubmitBody(BaseModel):
    token: str | None = None
    ranking: list[str]
    instance_id: str | None = None


# An error's HTTP status; the first class in order that the error is an instance of.
HTTP_STATUS: tuple[tuple[type[InputError], int], ...] = (
    (limits.OutOfBounds, 422),
    (NoSession, 401),
    (WrongToken, 403),
    (UnknownInstance, 404),
    (InputError, 409),  # SessionTaken, AlreadySubmitted
)


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 before it is parsed,
    by its Content-Length and by the bytes that actually arrive (chunked bodies have none).

    The rest of a refused body is read and dropped, up to ``DRAIN_BYTES``, so that the client
    gets its answer rather than a reset connection; past that the connection is closed.
    """

    DRAIN_BYTES = 16 * limits.MAX_BODY_BYTES

    def __init__(self, app: ASGIApp, limit: int = limits.MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await _drain(receive, 0, self.DRAIN_BYTES)
            await _too_large(send, self.limit)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                if message.get("more_body", False):
                    await _drain(receive, size, self.DRAIN_BYTES)
                await _too_large(send, self.limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _drain(receive: Receive, size: int, cap: int) -> None:
    """Read and drop the rest of a request body, until it ends or ``cap`` bytes have come."""
    while size <= cap:
        message = await receive()
        if message["type"] != "http.request":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _too_large(send: Send, limit: int) -> None:
    payload = f'{{"error": "the request body is over {limit:,} bytes"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def create_app(sessions: ToolSessions, max_body: int = limits.MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(
        title="inspire search environment",
        description="search, read and submit on benchmark instances, one session per instance",
    )
    app.add_middleware(BodyLimit, limit=max_body)

    @app.exception_handler(InputError)
    async def refused(request: Request, error: InputError) -> JSONResponse:
        status = next(code for kind, code in HTTP_STATUS if isinstance(error, kind))
        return JSONResponse({"error": str(error)}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, error: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer echoes the input; name the fields only.
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        return JSONResponse({"error": f"malformed request: {problems}"}, status_code=422)

    # async handlers run on the server's one event loop thread, so the warehouse connection
    # behind the sessions is never used from two threads at once.
    @app.get("/instances")
    async def instances() -> list[dict[str, Any]]:
        return sessions.instances()

    @app.post("/start")
    async def start(body: StartBody) -> dict[str, Any]:
        return sessions.start(body.instance_id, body.agent, body.token)

    @app.post("/search")
    async def search(body: SearchBody) -> dict[str, Any]:
        return sessions.search(body.token, body.query, body.k, body.instance_id)

    @app.post("/read")
    async def read(body: ReadBody) -> dict[str, Any]:
        return sessions.read(body.token, body.paper_id, body.instance_id)

    @app.post("/submit")
    async def submit(body: SubmitBody) -> dict[str, Any]:
        return sessions.submit(body.token, body.ranking, body.instance_id)

    return app


def serve(app: FastAPI, port: int) -> None:
    """Serve on 127.0.0.1 in the foreground until interrupted."""
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


@contextmanager
def running(app: FastAPI, port: int = 0) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 in a background thread; yields the base URL."""
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    with local_server.in_thread(app, port, "the tool server") as base:
        yield base
