"""Running an agent over a split version's tasks; writing its run and trajectory files."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import duckdb

from inspire_build.config import Settings
from inspire_build.env.agents import Agent
from inspire_build.env.core import Backend, SearchEnv, Task
from inspire_build.env.store import Session
from inspire_build.errors import InputError
from inspire_build.http import SourceMode


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
    """One session per task, in order; ``advance`` is called after each (for progress)."""
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


def run_split(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    agent: Agent,
    where: tuple[str, str | None, str, int],
    mode: SourceMode | None = None,
    started: Callable[[str, int], Callable[[], None]] = lambda _v, _n: lambda: None,
) -> tuple[str, list[Session]]:
    """Run ``agent`` on every instance of a split version, with ``where`` = (split, version
    or None for the latest, backend name, budget), and log its sessions in the warehouse.
    ``started(version, instances)`` returns what to call after each instance (progress).
    Returns the version and the sessions, in instance order."""
    split, version, backend, budget = where
    chosen, tasks, made = prepare(con, settings, split, version, backend, mode)
    advance = started(chosen, len(tasks))
    sessions = run_agent(agent, tasks, lambda task: SearchEnv(task, budget, made), chosen, advance)
    from inspire_build.env import store

    store.write_sessions(con, sessions)
    return chosen, sessions


def write_run(sessions: Sequence[Session], run_path: Path, trajectories: Path) -> int:
    """Write the sessions' run file and trajectory file; returns the tool calls they made."""
    write_jsonl(run_path, (s.env.run_line() for s in sessions))
    write_jsonl(trajectories, (s.env.trajectory_line() for s in sessions))
    return sum(len(s.env.steps) for s in sessions)
