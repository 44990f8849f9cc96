"""The environment's warehouse side: tasks with their withheld IDs, the corpus, session logs.

The tool server (and ``inspire agent run``, through it) keeps its sessions here while they are
open (:class:`ServerSession`): each step is written as it is taken, so a restarted server
resumes a session with the budget it has spent. :func:`write_sessions` writes the sessions of an
in-memory run (``run.run_agent``, the benches) when they end.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

import duckdb

from inspire_build import cutoff, warehouse
from inspire_build.env import corpus
from inspire_build.env.core import SearchEnv, Step, Task
from inspire_build.errors import InputError
from inspire_build.ids import PaperId
from inspire_build.lineage import canonical_id
from inspire_build.models import DatePrecision, Source
from inspire_build.tables import corpus as corpus_table
from inspire_build.tables import crosswalk as crosswalk_table
from inspire_build.tables import env as env_table
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import versions


def load_tasks(con: duckdb.DuckDBPyConnection, version: str) -> list[Task]:
    """The instances of a split version, each with its target's IDs to withhold."""
    rows = versions.tasks(con, version)
    if not rows:
        raise InputError(f"version {version} has no instances")
    return [Task(str(i), str(b), c, withheld_ids(con, str(t))) for i, b, c, t in rows]


def withheld_ids(con: duckdb.DuckDBPyConnection, target_id: str) -> frozenset[str]:
    """The target's paper IDs and every alias, closed over the crosswalk and the corpus's IDs.

    A twin the warehouse keeps as its own paper but the corpus merged (or the other way round)
    is reached in a further round, until nothing new turns up.
    """
    papers, aliases = {target_id}, set[str]()
    while True:
        found = env_table.aliases(con, sorted(papers))
        more = env_table.papers_named(con, sorted(found))
        if found <= aliases and more <= papers:
            return frozenset(papers | aliases)
        aliases |= found
        papers |= more


def _source_date(
    day: dt.date | None, source: str | None, precision: str | None
) -> cutoff.SourceDate | None:
    if day is None:
        return None
    return cutoff.SourceDate(
        Source(source or "openalex"), day, DatePrecision(precision or DatePrecision.DAY)
    )


def known_dates(con: duckdb.DuckDBPyConnection) -> dict[str, cutoff.SourceDate]:
    """The warehouse's first public date of every paper that has one."""
    found = {}
    for paper_id, day, source, precision in lineage_table.dated_papers(con):
        date = _source_date(day, source, precision)
        if date is not None:
            found[str(paper_id)] = date
    return found


@dataclasses.dataclass(frozen=True)
class CorpusSize:
    records: int
    works: int
    undated: int
    known_papers: int  # works that are also papers of the warehouse (targets, references)


def write_corpus(
    con: duckdb.DuckDBPyConnection, records: Sequence[corpus.CorpusRecord], origin: str
) -> CorpusSize:
    """Replace the corpus with these records, merged, and rebuild its bm25 index. No records
    is refused, the corpus left as it was: an empty file or window would wipe it silently."""
    if not records:
        raise InputError(f"no works from the {origin} source: the corpus is left as it was")
    known = known_dates(con)
    works = corpus.merge(records, crosswalk_table.crosswalk(con), known)
    corpus_rows, id_rows = corpus.rows(works, origin, dt.datetime.now(dt.UTC))
    corpus_table.replace_corpus(con, corpus_rows, id_rows)
    return CorpusSize(
        records=len(records),
        works=len(works),
        undated=sum(1 for w in works if w.first_public is None),
        known_papers=sum(1 for w in works if w.paper_id in known),
    )


def corpus_size(con: duckdb.DuckDBPyConnection) -> int:
    return env_table.corpus_size(con)


@dataclasses.dataclass(frozen=True)
class Catalog:
    """Our IDs and first public dates, for judging results a live backend returns."""

    ids: dict[PaperId, str]
    dates: dict[str, cutoff.SourceDate]

    def resolve(
        self, typed: Sequence[PaperId], own: Iterable[cutoff.SourceDate]
    ) -> tuple[str, cutoff.SourceDate | None] | None:
        """Our paper_id for a result and its first public date: the earliest of the result's
        own date and ours. None for a result with no ID at all."""
        known = sorted({self.ids[p] for p in typed if p in self.ids})
        chosen = canonical_id(typed)
        if not known and chosen is None:
            return None
        dates = list(own) + [self.dates[p] for p in known if p in self.dates]
        return (known[0] if known else str(chosen)), cutoff.first_public(dates)


def catalog(con: duckdb.DuckDBPyConnection) -> Catalog:
    ids = crosswalk_table.with_corpus(con)
    dates = known_dates(con)
    for paper_id, day, source, precision in env_table.dated_works(con):
        date = _source_date(day, source, precision)
        if date is not None and str(paper_id) not in dates:
            dates[str(paper_id)] = date
    return Catalog(ids, dates)


@dataclasses.dataclass(frozen=True)
class Session:
    """One finished (or abandoned) environment session, for the warehouse log."""

    session_id: str
    version_id: str | None
    agent: str
    env: SearchEnv
    started_at: dt.datetime
    finished_at: dt.datetime


def write_sessions(con: duckdb.DuckDBPyConnection, sessions: Sequence[Session]) -> None:
    """Write sessions and their steps; a rewritten session replaces exactly its own steps."""
    session_rows, steps = [], {}
    for s in sessions:
        session_rows.append(
            {
                "session_id": s.session_id,
                "version_id": s.version_id,
                "instance_id": s.env.task.instance_id,
                "agent": s.agent,
                "backend": s.env.backend.name,
                "budget": s.env.budget,
                "calls": len(s.env.steps),
                "status": (
                    SessionStatus.ABANDONED if s.env.submitted is None else SessionStatus.SUBMITTED
                ).value,
                "ranking": list(s.env.submitted) if s.env.submitted is not None else None,
                "started_at": s.started_at,
                "finished_at": s.finished_at,
            }
        )
        steps[s.session_id] = [
            _step_row(s.session_id, number, step) for number, step in enumerate(s.env.steps, 1)
        ]
    with warehouse.transaction(con):
        warehouse.upsert(con, "env_sessions", session_rows, ["session_id"])
        for session_id, rows in steps.items():
            warehouse.replace_where(
                con, "env_steps", {"session_id": session_id}, rows, ["session_id", "step"]
            )


def _step_row(session_id: str, number: int, step: Step) -> dict[str, object]:
    return {
        "session_id": session_id,
        "step": number,
        "tool": step.tool,
        "query": step.query,
        "k": step.k,
        "exposed": list(step.exposed),
        "latency_ms": step.latency_ms,
    }


# --- the tool server's sessions: open while they run, bound to a token ---------------------------


class SessionStatus(StrEnum):
    OPEN = "open"  # the tool server's session, still running
    SUBMITTED = "submitted"  # final
    ABANDONED = "abandoned"  # ended without a submission (``inspire agent run``): final


@dataclasses.dataclass(frozen=True)
class ServerSession:
    """One row of ``env_sessions`` as the tool server holds it. Only the token's hash is kept."""

    session_id: str
    run_name: str
    version_id: str | None
    instance_id: str
    agent: str
    backend: str
    budget: int
    status: SessionStatus
    token_sha256: str
    scores_revealed: bool
    started_at: dt.datetime
    ranking: tuple[str, ...] | None = None


def _server_session(row: tuple[Any, ...] | None) -> ServerSession | None:
    if row is None:
        return None
    session_id, run_name, version, instance, agent, backend, budget, status, token = row[:9]
    revealed, started_at, ranking = row[9:]
    return ServerSession(
        session_id=str(session_id),
        run_name=str(run_name),
        version_id=None if version is None else str(version),
        instance_id=str(instance),
        agent=str(agent),
        backend=str(backend),
        budget=int(budget),
        status=SessionStatus(str(status)),
        token_sha256=str(token or ""),
        scores_revealed=bool(revealed),
        started_at=started_at,
        ranking=None if ranking is None else tuple(str(i) for i in ranking),
    )


def run_session(
    con: duckdb.DuckDBPyConnection, run_name: str, instance_id: str
) -> ServerSession | None:
    """The tool server's session of this run on this instance, if it has one."""
    return _server_session(env_table.run_session(con, run_name, instance_id))


def token_session(
    con: duckdb.DuckDBPyConnection, run_name: str, token_sha256: str
) -> ServerSession | None:
    """The session of this run whose token hashes to ``token_sha256``, if any."""
    return _server_session(env_table.token_session(con, run_name, token_sha256))


def session_steps(con: duckdb.DuckDBPyConnection, session_id: str) -> list[Step]:
    """The steps a session has taken, in order (each counts against its budget)."""
    return [
        Step(str(tool), str(query), tuple(str(i) for i in exposed), float(latency), k)
        for tool, query, exposed, latency, k in env_table.steps(con, session_id)
    ]


def open_session(con: duckdb.DuckDBPyConnection, session: ServerSession) -> None:
    """Record a new open session, before it takes a step."""
    row = {
        "session_id": session.session_id,
        "run_name": session.run_name,
        "version_id": session.version_id,
        "instance_id": session.instance_id,
        "agent": session.agent,
        "backend": session.backend,
        "budget": session.budget,
        "calls": 0,
        "status": session.status.value,
        "ranking": None,
        "token_sha256": session.token_sha256,
        "scores_revealed": session.scores_revealed,
        "started_at": session.started_at,
        "finished_at": None,
    }
    warehouse.upsert(con, "env_sessions", [row], ["session_id"])


def log_step(con: duckdb.DuckDBPyConnection, session_id: str, number: int, step: Step) -> None:
    """Write step ``number`` of a session and its call count, together."""
    with warehouse.transaction(con):
        warehouse.upsert(
            con, "env_steps", [_step_row(session_id, number, step)], ["session_id", "step"]
        )
        warehouse.update_where(con, "env_sessions", {"calls": number}, {"session_id": session_id})


def submit_session(
    con: duckdb.DuckDBPyConnection,
    session_id: str,
    ranking: Sequence[str],
    finished_at: dt.datetime,
) -> None:
    """Close a session with its final ranking."""
    warehouse.update_where(
        con,
        "env_sessions",
        {
            "status": SessionStatus.SUBMITTED.value,
            "ranking": list(ranking),
            "finished_at": finished_at,
        },
        {"session_id": session_id},
    )


def abandon_session(
    con: duckdb.DuckDBPyConnection, session_id: str, finished_at: dt.datetime
) -> None:
    """Close a session its agent left without a submission (final: it submits nothing)."""
    warehouse.update_where(
        con,
        "env_sessions",
        {"status": SessionStatus.ABANDONED.value, "finished_at": finished_at},
        {"session_id": session_id},
    )


def mark_scores_revealed(con: duckdb.DuckDBPyConnection, session_id: str) -> None:
    """Record that a debugging server touched this session: its scores reach the agent."""
    warehouse.update_where(
        con, "env_sessions", {"scores_revealed": True}, {"session_id": session_id}
    )
