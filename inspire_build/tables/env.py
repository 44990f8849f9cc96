"""The search environment's tables: ``corpus`` and ``corpus_ids`` (what agents search), and
``env_sessions`` and ``env_steps`` (what they did)."""

from __future__ import annotations

from typing import Any

import duckdb

# One work by paper_id: an index lookup (corpus's primary key).
_READ = "SELECT paper_id, public_by, title, abstract, year, authors FROM corpus WHERE paper_id = ?"


def ids_with_value(con: duckdb.DuckDBPyConnection, value: str) -> list[tuple[str, str]]:
    """(scheme, paper_id) of every corpus ID whose value is ``value``."""
    rows = con.execute("SELECT scheme, paper_id FROM corpus_ids WHERE value = ?", [value])
    return [(str(s), str(p)) for s, p in rows.fetchall()]


def work(con: duckdb.DuckDBPyConnection, paper_id: str) -> tuple[Any, ...] | None:
    """A corpus work by its paper_id: paper_id, public_by, title, abstract, year, authors."""
    return con.execute(_READ, [paper_id]).fetchone()


def aliases(con: duckdb.DuckDBPyConnection, paper_ids: list[str]) -> set[str]:
    """Every ``scheme:value`` the crosswalk or the corpus gives these papers."""
    rows = con.execute(
        "SELECT scheme, value FROM paper_ids WHERE list_contains(?, paper_id) UNION "
        "SELECT scheme, value FROM corpus_ids WHERE list_contains(?, paper_id)",
        [paper_ids, paper_ids],
    ).fetchall()
    return {f"{scheme}:{value}" for scheme, value in rows}


def papers_named(con: duckdb.DuckDBPyConnection, spellings: list[str]) -> set[str]:
    """Every paper the crosswalk or the corpus names by one of these ``scheme:value``."""
    rows = con.execute(
        "SELECT paper_id FROM paper_ids WHERE list_contains(?, scheme || ':' || value) "
        "UNION SELECT paper_id FROM corpus_ids "
        "WHERE list_contains(?, scheme || ':' || value)",
        [spellings, spellings],
    ).fetchall()
    return {str(p) for (p,) in rows}


def corpus_size(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT count(*) FROM corpus").fetchone()
    return int(row[0]) if row else 0


def dated_works(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """(paper_id, first public date, its source, its precision) of every dated corpus work."""
    return con.execute(
        "SELECT paper_id, first_public_date, first_public_source, date_precision FROM corpus "
        "WHERE first_public_date IS NOT NULL"
    ).fetchall()


_SESSION = (
    "SELECT session_id, run_name, version_id, instance_id, agent, backend, budget, status, "
    "token_sha256, scores_revealed, started_at, ranking FROM env_sessions "
)


def run_session(
    con: duckdb.DuckDBPyConnection, run_name: str, instance_id: str
) -> tuple[Any, ...] | None:
    """The first session of a tool-server run on an instance (the columns of ``_SESSION``)."""
    return con.execute(
        _SESSION + "WHERE run_name = ? AND instance_id = ? ORDER BY started_at LIMIT 1",
        [run_name, instance_id],
    ).fetchone()


def token_session(
    con: duckdb.DuckDBPyConnection, run_name: str, token_sha256: str
) -> tuple[Any, ...] | None:
    """The session of a run whose token hashes to ``token_sha256``."""
    return con.execute(
        _SESSION + "WHERE run_name = ? AND token_sha256 = ? LIMIT 1", [run_name, token_sha256]
    ).fetchone()


def steps(con: duckdb.DuckDBPyConnection, session_id: str) -> list[tuple[Any, ...]]:
    """A session's steps in order: tool, query, exposed IDs, latency, k."""
    return con.execute(
        "SELECT tool, query, exposed, latency_ms, k FROM env_steps WHERE session_id = ? "
        "ORDER BY step",
        [session_id],
    ).fetchall()
