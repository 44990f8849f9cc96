"""The tool server for external agents: search, read and submit over HTTP/JSON (and MCP).

Two sides, two credentials:

- The **operator** is the harness that runs an agent on an instance. It lists the instances and
  starts sessions (:meth:`ToolSessions.instances`, :meth:`ToolSessions.start`). Over HTTP those
  calls need the **operator key**, made when the server starts (:func:`new_operator_key`) and
  sent as ``Authorization: Bearer KEY``; in-process (``inspire agent run``) the operator calls
  them directly; an MCP server is started by the operator for one session it has opened.
- The **agent** holds one session's token and can only search, read and submit in that
  session (:class:`SessionTools` in-process). No agent call lists instances, opens a session,
  or reaches another session's instance, cutoff or budget.

:class:`ToolSessions` holds the sessions of one *run* (what the server was started for, by
name); the HTTP app here and the MCP server in ``mcp_server.py`` are thin shells over it, and
every argument of every call passes the one validation path of ``limits.py``.

- ``start`` opens an instance and returns a session token, a random secret that every later
  call must carry. The warehouse keeps only its sha256.
- Each (run, instance) has one session: one budget and one final submission. A second
  ``start`` with the session's token resumes it, unchanged; without it, it is refused (the
  session belongs to another agent); once submitted, it is refused. Nothing resets a budget.
- A call is answered by the session its token names, and refused when the token is unknown or
  names another instance.
- Sessions live in the warehouse (``env_sessions`` with status ``open``, ``env_steps`` written
  as each step is taken), so a server killed and restarted resumes them.
- Scores are never returned, except by a server built with a ``judge`` (the CLI's
  ``--debug-reveal-scores-to-agent``), which records ``scores_revealed`` on every session it
  touches and in its trajectory line.
- Refused calls (out of bounds, bad token or key, past the budget, after submit) are charged
  nothing, and no refusal repeats the value it refused.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import logging
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from inspire_build import local_server, splits, user_files
from inspire_build.env import limits, store
from inspire_build.env.core import (
    DEFAULT_BUDGET,
    Backend,
    ReadResult,
    SearchEnv,
    SearchResult,
    SubmitResult,
    Task,
)
from inspire_build.env.store import ServerSession, SessionStatus
from inspire_build.errors import InputError
from inspire_build.evaluation import inputs
from inspire_build.evaluation.funnel import Trajectory
from inspire_build.evaluation.score import score
from inspire_build.tables import crosswalk as crosswalk_table

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


class NoOperatorKey(InputError):
    """An operator's call (list instances, start a session) over HTTP without the key."""


class WrongOperatorKey(InputError):
    """An operator's call over HTTP with a key that is not this server's."""


def new_operator_key() -> str:
    """A fresh operator key: a random secret, made each time a server starts."""
    return secrets.token_urlsafe(32)


def write_secret(path: Path, secret: str) -> None:
    """Write ``secret`` to ``path``, readable by its owner only (mode 0600), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(secret + "\n")
    os.replace(tmp, path)


def read_secret(path: Path) -> str | None:
    """The secret kept in ``path``; None when there is no such file. A folder, a device or a
    file of binary data is one InputError naming the path."""
    if not path.exists():
        return None
    return user_files.read_text(path, _SECRET_BYTES, "a token file holds one line").strip() or None


_SECRET_BYTES = 1 << 16


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

    # --- the operator's side ----------------------------------------------------------------

    def instances(self) -> list[dict[str, Any]]:
        """The operator's list: each instance's ID, brief and cutoff."""
        return [
            {"instance_id": t.instance_id, "brief": t.brief, "cutoff": t.cutoff.isoformat()}
            for t in self.tasks.values()
        ]

    def start(
        self, instance_id: str, agent: str = "external", token: str | None = None
    ) -> dict[str, Any]:
        """The operator opens an instance, or resumes its open session with that session's
        token; the answer holds the token to hand to the agent."""
        chosen, given = limits.instance_id(instance_id), limits.token(token)
        agent = limits.agent(agent)
        with self._lock:
            task = self.tasks.get(chosen)
            if task is None:
                raise UnknownInstance("no instance of that ID in this split version")
            stored = store.run_session(self.con, self.run_name, chosen)
            if stored is None:
                secret = secrets.token_urlsafe(32)
                live = self._open(task, agent, token_digest(secret))
                return self._opened(live, secret, resumed=False)
            if stored.status is not SessionStatus.OPEN:
                raise AlreadySubmitted(
                    f"that instance was already submitted in run {self.run_name!r}; "
                    "its submission is final"
                )
            if given is None or not hmac.compare_digest(token_digest(given), stored.token_sha256):
                raise SessionTaken(
                    f"that instance is open in run {self.run_name!r} under another session; "
                    "only that session's token resumes it"
                )
            return self._opened(self._resume(stored), given, resumed=True)

    def finish(self, token: str) -> SearchEnv:
        """The operator ends a session its agent has returned from: a session left unsubmitted
        is recorded as abandoned (final). Returns its environment, for the run and trajectory
        lines."""
        with self._lock:
            live = self._session(token, None)
            if live.record.status is SessionStatus.OPEN:
                store.abandon_session(self.con, live.record.session_id, _now())
                status = SessionStatus.ABANDONED
                live.record = dataclasses.replace(live.record, status=status)
                live.env.submitted = ()  # as a resumed abandoned session: nothing, final
            return live.env

    # --- the agent's side: one session's token ----------------------------------------------

    def about(self, token: str | None) -> dict[str, Any]:
        """The token's own session: its instance, brief, cutoff, budget and budget left."""
        with self._lock:
            live = self._session(token, None)
            return {
                key: value
                for key, value in self._opened(live, "", resumed=True).items()
                if key not in ("token", "resumed")
            }

    def search_result(
        self,
        token: str | None,
        query: str,
        k: object = limits.DEFAULT_K,
        instance_id: str | None = None,
    ) -> SearchResult:
        text, depth = limits.query(query), limits.k(k)
        with self._lock:
            live = self._session(token, instance_id)
            result = live.env.search(text, depth)
            self._log_steps(live)
            return result

    def read_result(
        self, token: str | None, paper_id: str, instance_id: str | None = None
    ) -> ReadResult:
        wanted = limits.paper_id(paper_id)
        with self._lock:
            live = self._session(token, instance_id)
            result = live.env.read(wanted)
            self._log_steps(live)
            return result

    def submit_result(
        self, token: str | None, ranking: Sequence[str], instance_id: str | None = None
    ) -> tuple[SubmitResult, dict[str, Any]]:
        """The final ranking, and the wire answer (with scores only from a debugging server).
        A second submit is answered ``submitted``, unchanged."""
        ids = limits.ranking(ranking)
        with self._lock:
            live = self._session(token, instance_id)
            env = live.env
            if env.submitted is not None:
                return env.submit(ids), self._submitted(live, SessionStatus.SUBMITTED.value)
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
            return result, answer

    def search(
        self,
        token: str | None,
        query: str,
        k: object = limits.DEFAULT_K,
        instance_id: str | None = None,
    ) -> dict[str, Any]:
        """search, as the HTTP and MCP servers answer it."""
        result = self.search_result(token, query, k, instance_id)
        return {
            "status": result.status.value,
            "results": [dataclasses.asdict(found) for found in result.results],
            "budget_left": result.budget_left,
        }

    def read(
        self, token: str | None, paper_id: str, instance_id: str | None = None
    ) -> dict[str, Any]:
        """read, as the HTTP and MCP servers answer it."""
        result = self.read_result(token, paper_id, instance_id)
        paper = dataclasses.asdict(result.paper) if result.paper else None
        return {"status": result.status.value, "paper": paper, "budget_left": result.budget_left}

    def submit(
        self, token: str | None, ranking: Sequence[str], instance_id: str | None = None
    ) -> dict[str, Any]:
        """submit, as the HTTP and MCP servers answer it; final."""
        return self.submit_result(token, ranking, instance_id)[1]

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
                "no session token: pass the token of the session the operator started for "
                "you with every call"
            )
        digest = token_digest(given)
        live = self._live.get(digest)
        if live is None:
            stored = store.token_session(self.con, self.run_name, digest)
            if stored is None:
                raise WrongToken(f"unknown session token for run {self.run_name!r}")
            live = self._resume(stored)
        if named is not None and named != live.record.instance_id:
            raise WrongToken("this session token is not for that instance")
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


class SessionTools:
    """What an agent holds in process: one session's token and the three calls it may make,
    on the same path as HTTP and MCP. It lists no instances and opens no session."""

    def __init__(self, sessions: ToolSessions, token: str) -> None:
        self._sessions, self._token = sessions, token
        about = sessions.about(token)
        self.brief: str = about["brief"]
        self.cutoff = dt.date.fromisoformat(about["cutoff"])

    def search(self, query: str, k: int = limits.DEFAULT_K) -> SearchResult:
        return self._sessions.search_result(self._token, query, k)

    def read(self, paper_id: str) -> ReadResult:
        return self._sessions.read_result(self._token, paper_id)

    def submit(self, ranking: Sequence[str]) -> SubmitResult:
        return self._sessions.submit_result(self._token, ranking)[0]


def hold_session(sessions: ToolSessions, instance_id: str, agent: str, kept: Path) -> str:
    """The operator's step before an MCP server is started for one session: open the
    instance's session and keep its token in ``kept`` (mode 0600), or, when ``kept`` holds a
    token, resume that session. Returns the token."""
    opened = sessions.start(instance_id, agent, read_secret(kept))
    if not opened["resumed"]:  # a new session (a stale file of another run or warehouse too)
        write_secret(kept, opened["token"])
    return str(opened["token"])


def session_file(warehouse_path: Path, run_name: str, instance_id: str) -> Path:
    """Where an MCP server keeps its session's token by default: a file under
    ``<warehouse>.sessions/``, named by a hash of the run and the instance."""
    name = hashlib.sha256(f"{run_name}\n{instance_id}".encode()).hexdigest()[:32]
    return warehouse_path.with_name(warehouse_path.name + ".sessions") / f"{name}.token"


def operator_key_file(warehouse_path: Path) -> Path:
    """Where ``inspire env serve`` writes its operator key by default: beside the warehouse."""
    return warehouse_path.with_name(warehouse_path.name + ".operator-key")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def judge_from(con: duckdb.DuckDBPyConnection, version: str) -> Judge:
    """Per-instance scores of a submitted session, against the version's qrels (debugging only:
    a server that answers with them is an oracle for the gold)."""
    normalise = inputs.normaliser(crosswalk_table.crosswalk(con))
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
    k: object = limits.DEFAULT_K  # as sent: limits.k takes only a JSON integer (not "10", 2.0)
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
    (NoOperatorKey, 401),
    (WrongToken, 403),
    (WrongOperatorKey, 403),
    (UnknownInstance, 404),
    (InputError, 409),  # SessionTaken, AlreadySubmitted
)


def operator_check(key: str) -> Callable[[Request], None]:
    """A FastAPI dependency that refuses a request without ``Authorization: Bearer <key>``.

    A dependency runs before the body is read, so a refused call reads and answers nothing.
    """
    expected = key.encode()

    def check(request: Request) -> None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise NoOperatorKey(
                "this call is the operator's: send the operator key as 'Authorization: Bearer "
                "KEY'; an agent holds a session token, for search, read and submit only"
            )
        if not hmac.compare_digest(given.strip().encode(), expected):
            raise WrongOperatorKey("that is not this server's operator key")

    return check


def create_app(
    sessions: ToolSessions,
    operator_key: str,
    max_body: int = limits.MAX_BODY_BYTES,
    allowed_hosts: Sequence[str] = local_server.LOOPBACK,
) -> FastAPI:
    """The HTTP API: ``/instances`` and ``/start`` for the operator (its key), ``/search``,
    ``/read`` and ``/submit`` for an agent (its session token)."""
    if len(operator_key) < 32:
        raise ValueError("an operator key has at least 32 characters")
    app = FastAPI(
        title="inspire search environment",
        description="search, read and submit on benchmark instances, one session per instance",
    )
    app.add_middleware(local_server.BodyLimit, limit=max_body)
    local_server.refuse_foreign_hosts(app, allowed_hosts)  # last added: runs first
    operator = [Depends(operator_check(operator_key))]

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
        if "json" not in request.headers.get("content-type", ""):  # curl -d sends a form
            problems += "; send the body as JSON, with Content-Type: application/json"
        return JSONResponse({"error": f"malformed request: {problems}"}, status_code=422)

    # async handlers run on the server's one event loop thread, so the warehouse connection
    # behind the sessions is never used from two threads at once.
    @app.get("/instances", dependencies=operator)
    async def instances() -> list[dict[str, Any]]:
        return sessions.instances()

    @app.post("/start", dependencies=operator)
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


@contextmanager
def running(app: FastAPI, port: int = 0) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 in a background thread; yields the base URL."""
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    with local_server.in_thread(app, port, "the tool server") as base:
        yield base
