"""Running an agent over a split version's tasks; writing its run and trajectory files.

``inspire agent run`` takes the operator's path (:func:`operate`): for each instance the
operator starts a session on the tool server's sessions, in-process, and hands the agent only
that session's tools; several instances at once in threads (the LLM agent), their results in
instance order. :func:`run_agent` runs an agent on bare environments in memory, for the
benches.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import duckdb

from inspire_build.config import Settings
from inspire_build.env.agents import Agent, Tools
from inspire_build.env.core import Backend, SearchEnv, Task
from inspire_build.env.server import SessionTools, ToolSessions
from inspire_build.env.store import Session
from inspire_build.errors import InputError
from inspire_build.http import SourceMode

T = TypeVar("T")


def new_session(
    env: SearchEnv, agent: str, version: str | None, started_at: dt.datetime
) -> Session:
    return Session(uuid.uuid4().hex[:16], version, agent, env, started_at, dt.datetime.now(dt.UTC))


def run_agent(
    agent: Agent,
    tasks: Sequence[Task],
    make_env: Callable[[Task], SearchEnv],
    version: str | None = None,
    advance: Callable[[], None] = lambda: None,
) -> list[Session]:
    """One bare, in-memory session per task, in order (the benches; nothing is logged);
    ``advance`` is called after each (for progress)."""
    sessions = []
    for task in tasks:
        env = make_env(task)
        started = dt.datetime.now(dt.UTC)
        agent.run(env)
        sessions.append(new_session(env, agent.name, version, started))
        advance()
    return sessions


def write_jsonl(path: Path, lines: Iterable[dict[str, object]]) -> None:
    """Write JSON lines atomically (``.tmp`` then ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )
    os.replace(tmp, path)


def append_jsonl(path: Path, line: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def prepare(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    version: str | None,
    backend: str,
    mode: SourceMode | None = None,
) -> tuple[str, list[Task], Backend]:
    """The split version (default: latest), its tasks, and the named backend over ``con``."""
    from inspire_build import splits
    from inspire_build.env import backends, store
    from inspire_build.sources import make_client

    chosen = version or splits.latest_version(con, split)
    if backend == "local" and not store.corpus_size(con):
        raise InputError("the corpus is empty; fill it with `inspire corpus build`")
    made = backends.make_backend(backend, con, lambda: make_client(settings, con, mode=mode))
    return chosen, store.load_tasks(con, chosen), made


def run_operated(
    agent: Agent, sessions: ToolSessions, advance: Callable[[], None] = lambda: None
) -> list[SearchEnv]:
    """The operator's path: for each instance in order, start a session, hand ``agent`` that
    session's tools only, and end it when the agent returns (abandoned if it did not submit).
    Every step is logged in the warehouse as it is taken. Returns the sessions' environments."""
    played = operate(sessions, agent.name, lambda tools, _rank: agent.run(tools), 1, advance)
    return [env for env, _ in played]


def operate(
    sessions: ToolSessions,
    agent: str,
    play: Callable[[Tools, int], T],
    workers: int = 1,
    advance: Callable[[], None] = lambda: None,
) -> list[tuple[SearchEnv, T]]:
    """The operator's path for every instance of ``sessions``: start its session (for
    ``agent``), call ``play(tools, rank)`` with that session's tools only and the instance's
    place, and end the session when it returns (abandoned if it did not submit). Up to
    ``workers`` instances at once, in threads (one: in this thread, in order). Returns each
    instance's environment and what ``play`` returned, in instance order, whatever order they
    ended in. An error stops the start of further instances and is raised once the started
    ones have ended (the first, in instance order)."""

    def one(rank: int, instance_id: str) -> tuple[SearchEnv, T]:
        token = str(sessions.start(instance_id, agent)["token"])
        try:
            result = play(SessionTools(sessions, token), rank)
        finally:
            env = sessions.finish(token)
        advance()
        return env, result

    chosen = list(sessions.tasks)
    if workers <= 1:
        return [one(rank, instance_id) for rank, instance_id in enumerate(chosen)]
    return _in_threads(one, chosen, workers)


def _in_threads(
    one: Callable[[int, str], tuple[SearchEnv, T]], chosen: list[str], workers: int
) -> list[tuple[SearchEnv, T]]:
    stop = threading.Event()

    def guarded(rank: int, instance_id: str) -> tuple[SearchEnv, T] | None:
        if stop.is_set():
            return None
        try:
            return one(rank, instance_id)
        except BaseException:
            stop.set()
            raise

    pool = ThreadPoolExecutor(workers, thread_name_prefix="agent")
    try:
        futures: list[Future[tuple[SearchEnv, T] | None]] = [
            pool.submit(guarded, rank, instance_id) for rank, instance_id in enumerate(chosen)
        ]
        pool.shutdown(wait=True)
    except BaseException:  # an interrupt: start nothing more, let the running ones end
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error
    return [result for future in futures if (result := future.result()) is not None]


def run_split(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    agent: Agent,
    where: tuple[str, str | None, str, int],
    mode: SourceMode | None = None,
    started: Callable[[str, int], Callable[[], None]] = lambda _v, _n: lambda: None,
) -> tuple[str, list[SearchEnv]]:
    """Run ``agent`` on every instance of a split version, with ``where`` = (split, version
    or None for the latest, backend name, budget), through the operator's path, as a run of
    its own (``<agent>-<random>``: one budget per instance). ``started(version, instances)``
    returns what to call after each instance (progress). Returns the version and the
    sessions' environments, in instance order."""
    chosen, sessions = open_run(con, settings, agent.name, where, mode)
    advance = started(chosen, len(sessions.tasks))
    return chosen, run_operated(agent, sessions, advance)


def open_run(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    agent: str,
    where: tuple[str, str | None, str, int],
    mode: SourceMode | None = None,
) -> tuple[str, ToolSessions]:
    """The split version of ``where`` (as :func:`run_split` takes it) and the sessions of a new
    run of ``agent`` over its tasks, named ``<agent>-<random>`` (one budget per instance)."""
    split, version, backend, budget = where
    chosen, tasks, made = prepare(con, settings, split, version, backend, mode)
    run_name = f"{agent}-{uuid.uuid4().hex[:12]}"
    sessions = ToolSessions(tasks, made, con, budget=budget, run_name=run_name, version=chosen)
    return chosen, sessions


def write_run(
    envs: Sequence[SearchEnv],
    run_path: Path,
    trajectories: Path,
    notes: Sequence[dict[str, object]] | None = None,
) -> int:
    """Write the sessions' run file and trajectory file, each trajectory line with its
    ``notes`` (the LLM agent's failure) when given; returns the tool calls they made."""
    write_jsonl(run_path, (env.run_line() for env in envs))
    added = notes if notes is not None else [{} for _ in envs]
    lines = (env.trajectory_line() | note for env, note in zip(envs, added, strict=True))
    write_jsonl(trajectories, lines)
    return sum(len(env.steps) for env in envs)
