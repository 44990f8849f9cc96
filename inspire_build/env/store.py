"""The environment's warehouse side: tasks with their withheld IDs, the corpus, session logs."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence

import duckdb

from inspire_build import cutoff, resolve, warehouse
from inspire_build.env import corpus
from inspire_build.env.core import SearchEnv, Task
from inspire_build.errors import InputError
from inspire_build.ids import PaperId, Scheme
from inspire_build.lineage import canonical_id
from inspire_build.models import DatePrecision, Source


def load_tasks(con: duckdb.DuckDBPyConnection, version: str) -> list[Task]:
    """The instances of a split version, each with its target's IDs to withhold."""
    rows = con.execute(
        "SELECT instance_id, brief, cutoff_date, target_id FROM instances WHERE version_id = ? "
        "ORDER BY instance_id",
        [version],
    ).fetchall()
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
        found = {
            f"{scheme}:{value}"
            for scheme, value in con.execute(
                "SELECT scheme, value FROM paper_ids WHERE list_contains(?, paper_id) UNION "
                "SELECT scheme, value FROM corpus_ids WHERE list_contains(?, paper_id)",
                [sorted(papers), sorted(papers)],
            ).fetchall()
        }
        more = {
            str(p)
            for (p,) in con.execute(
                "SELECT paper_id FROM paper_ids WHERE list_contains(?, scheme || ':' || value) "
                "UNION SELECT paper_id FROM corpus_ids "
                "WHERE list_contains(?, scheme || ':' || value)",
                [sorted(found), sorted(found)],
            ).fetchall()
        }
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
    for paper_id, day, source, precision in con.execute(
        "SELECT paper_id, first_public_date, first_public_source, date_precision FROM papers "
        "WHERE first_public_date IS NOT NULL"
    ).fetchall():
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
    """Replace the corpus with these records, merged, and rebuild its bm25 index."""
    known = known_dates(con)
    works = corpus.merge(records, resolve.crosswalk(con), known)
    corpus_rows, id_rows = corpus.rows(works, origin, dt.datetime.now(dt.UTC))
    warehouse.replace_corpus(con, corpus_rows, id_rows)
    return CorpusSize(
        records=len(records),
        works=len(works),
        undated=sum(1 for w in works if w.first_public is None),
        known_papers=sum(1 for w in works if w.paper_id in known),
    )


def corpus_size(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT count(*) FROM corpus").fetchone()
    return int(row[0]) if row else 0


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
    ids = resolve.crosswalk(con)
    for scheme, value, paper_id in con.execute(
        "SELECT scheme, value, paper_id FROM corpus_ids"
    ).fetchall():
        ids.setdefault(PaperId(Scheme(scheme), value), str(paper_id))
    dates = known_dates(con)
    for paper_id, day, source, precision in con.execute(
        "SELECT paper_id, first_public_date, first_public_source, date_precision FROM corpus "
        "WHERE first_public_date IS NOT NULL"
    ).fetchall():
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
                "status": "abandoned" if s.env.submitted is None else "submitted",
                "ranking": list(s.env.submitted) if s.env.submitted is not None else None,
                "started_at": s.started_at,
                "finished_at": s.finished_at,
            }
        )
        steps[s.session_id] = [
            {
                "session_id": s.session_id,
                "step": number,
                "tool": step.tool,
                "query": step.query,
                "k": step.k,
                "exposed": list(step.exposed),
                "latency_ms": step.latency_ms,
            }
            for number, step in enumerate(s.env.steps, 1)
        ]
    with warehouse.transaction(con):
        warehouse.upsert(con, "env_sessions", session_rows, ["session_id"])
        for session_id, rows in steps.items():
            warehouse.replace_where(
                con, "env_steps", {"session_id": session_id}, rows, ["session_id", "step"]
            )
