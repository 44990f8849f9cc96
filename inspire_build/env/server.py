"""The tool server for external agents: search, read and submit over HTTP/JSON (and MCP).

:class:`ToolSessions` holds one instance's session at a time; the HTTP app here and the MCP
server in ``mcp_server.py`` are thin shells over it. Starting an instance while another is
open ends the open one as abandoned (it submitted nothing, so it scores 0). Every finished
session is handed to ``finish``: the CLI writes it to ``env_sessions``/``env_steps`` and
appends its run and trajectory lines to files.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from inspire_build import local_server, resolve
from inspire_build.env.core import MAX_K, SearchEnv, Task
from inspire_build.env.run import new_session
from inspire_build.env.store import Session
from inspire_build.errors import InputError
from inspire_build.evaluation import inputs
from inspire_build.evaluation.funnel import Trajectory
from inspire_build.evaluation.score import score

Judge = Callable[[SearchEnv], dict[str, float | None]]


class NoSession(InputError):
    """A tool was called with no instance started, or after its session ended."""


class UnknownInstance(InputError):
    """No instance of the served split version has this ID."""


class ToolSessions:
    """One instance at a time: start, then search/read within the budget, then submit."""

    def __init__(
        self,
        tasks: Sequence[Task],
        make_env: Callable[[Task], SearchEnv],
        finish: Callable[[Session], None],
        *,
        version: str | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.tasks = {task.instance_id: task for task in tasks}
        self.make_env, self.finish, self.version, self.judge = make_env, finish, version, judge
        self._lock = threading.Lock()
        self._env: SearchEnv | None = None
        self._agent = "external"
        self._started = dt.datetime.now(dt.UTC)

    def instances(self) -> list[dict[str, Any]]:
        """What an agent may know of each instance: its ID, brief and cutoff."""
        return [
            {"instance_id": t.instance_id, "brief": t.brief, "cutoff": t.cutoff.isoformat()}
            for t in self.tasks.values()
        ]

    def start(self, instance_id: str, agent: str = "external") -> dict[str, Any]:
        with self._lock:
            task = self.tasks.get(instance_id)
            if task is None:
                raise UnknownInstance(f"no instance {instance_id!r} in this split version")
            self._end_open()
            self._env, self._agent = self.make_env(task), agent
            self._started = dt.datetime.now(dt.UTC)
            return {
                "instance_id": task.instance_id,
                "brief": task.brief,
                "cutoff": task.cutoff.isoformat(),
                "budget": self._env.budget,
            }

    def search(self, query: str, k: int = 10) -> dict[str, Any]:
        with self._lock:
            result = self._open().search(query, k)
            return {
                "status": result.status.value,
                "results": [dataclasses.asdict(found) for found in result.results],
                "budget_left": result.budget_left,
            }

    def read(self, paper_id: str) -> dict[str, Any]:
        with self._lock:
            result = self._open().read(paper_id)
            paper = dataclasses.asdict(result.paper) if result.paper else None
            return {
                "status": result.status.value,
                "paper": paper,
                "budget_left": result.budget_left,
            }

    def submit(self, ranking: Sequence[str]) -> dict[str, Any]:
        with self._lock:
            env = self._open()
            result = env.submit(ranking)
            self._env = None
            self.finish(new_session(env, self._agent, self.version, self._started))
            answer: dict[str, Any] = {
                "status": result.status.value,
                "instance_id": env.task.instance_id,
                "ranking": list(result.ranking),
                "calls": len(env.steps),
            }
            if self.judge is not None:
                answer["scores"] = self.judge(env)
            return answer

    def close(self) -> None:
        """End an open session as abandoned (on shutdown)."""
        with self._lock:
            self._end_open()

    def _open(self) -> SearchEnv:
        if self._env is None:
            raise NoSession("no instance is open: start one first (the start tool, or POST /start)")
        return self._env

    def _end_open(self) -> None:
        if self._env is not None:
            self.finish(new_session(self._env, self._agent, self.version, self._started))
            self._env = None


def judge_from(con: duckdb.DuckDBPyConnection, version: str) -> Judge:
    """Per-instance scores of a submitted session, against the version's qrels."""
    normalise = inputs.normaliser(resolve.crosswalk(con))
    qrels: dict[str, dict[str, int]] = {}
    for iid, paper_id, tier in con.execute(
        "SELECT instance_id, paper_id, tier FROM qrels WHERE version_id = ?", [version]
    ).fetchall():
        qrels.setdefault(str(iid), {})[str(paper_id)] = int(tier)

    def judge(env: SearchEnv) -> dict[str, float | None]:
        iid = env.task.instance_id
        ranking = [normalise(d) for d in env.submitted or ()]
        path = Trajectory(tuple(tuple(normalise(d) for d in s.exposed) for s in env.steps))
        scored = score({iid: qrels.get(iid, {})}, {iid: ranking}, {iid: path}, samples=1)
        return scored.per_instance[iid]

    return judge


class StartBody(BaseModel):
    instance_id: str
    agent: str = "external"


class SearchBody(BaseModel):
    query: str = Field(min_length=1)
    k: int = Field(default=10, ge=1, le=MAX_K)


class ReadBody(BaseModel):
    paper_id: str = Field(min_length=1)


class SubmitBody(BaseModel):
    ranking: list[str]


def create_app(sessions: ToolSessions) -> FastAPI:
    app = FastAPI(
        title="inspire search environment",
        description="search, read and submit for one benchmark instance at a time",
    )

    @app.exception_handler(InputError)
    async def refused(request: Request, error: InputError) -> JSONResponse:
        status = 404 if isinstance(error, UnknownInstance) else 409
        return JSONResponse({"error": str(error)}, status_code=status)

    # async handlers run on the server's one event loop thread, so the warehouse connection
    # behind the sessions is never used from two threads at once.
    @app.get("/instances")
    async def instances() -> list[dict[str, Any]]:
        return sessions.instances()

    @app.post("/start")
    async def start(body: StartBody) -> dict[str, Any]:
        return sessions.start(body.instance_id, body.agent)

    @app.post("/search")
    async def search(body: SearchBody) -> dict[str, Any]:
        return sessions.search(body.query, body.k)

    @app.post("/read")
    async def read(body: ReadBody) -> dict[str, Any]:
        return sessions.read(body.paper_id)

    @app.post("/submit")
    async def submit(body: SubmitBody) -> dict[str, Any]:
        return sessions.submit(body.ranking)

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
