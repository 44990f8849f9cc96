"""The lineage step's tables: ``papers``, ``paper_ids`` (the crosswalk), ``references``,
``targets`` and ``gold_completeness``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import duckdb

from inspire_build import warehouse
from inspire_build.models import Target
from inspire_build.tables import model_rows


def write_targets(con: duckdb.DuckDBPyConnection, targets: Sequence[Target]) -> None:
    """Write ``targets``, each in place of the row its split already holds for its paper."""
    warehouse.upsert(con, "targets", model_rows.rows(targets), ["split", "paper_id"])


def targets(con: duckdb.DuckDBPyConnection, split: str) -> list[Target]:
    """A split's targets, by paper ID."""
    found = warehouse.dicts(con, "SELECT * FROM targets WHERE split = ? ORDER BY paper_id", [split])
    return model_rows.read(Target, found)


def completeness(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Gold completeness per target, by target ID; ``served_by`` as the object it holds (DuckDB
    hands a JSON column over as its text)."""
    rows = warehouse.dicts(con, "SELECT * EXCLUDE (updated_at) FROM gold_completeness ORDER BY 1")
    for row in rows:
        row["served_by"] = json.loads(row["served_by"]) if row["served_by"] else None
    return rows


def title_and_abstract(con: duckdb.DuckDBPyConnection, target_id: str) -> tuple[str, str]:
    """A target's title and abstract as its lineage resolved them, from its latest ``targets``
    row ("" for what is unknown). Not from ``papers``, which a later chunk may rewrite."""
    row = con.execute(
        "SELECT title, abstract FROM targets WHERE paper_id = ? ORDER BY updated_at DESC LIMIT 1",
        [target_id],
    ).fetchone()
    title, abstract = row if row else (None, None)
    return title or "", abstract or ""


def eligible_references(con: duckdb.DuckDBPyConnection, target_id: str) -> list[tuple[Any, ...]]:
    """A target's resolved eligible references in list order: paper ID, title, abstract (as the
    target's lineage resolved the work), citation contexts, intents and the influence flag."""
    return con.execute(
        "SELECT paper_id, coalesce(work_title, title), work_abstract, contexts, intents, "
        'is_influential FROM "references" r '
        "WHERE r.target_id = ? AND r.status = 'eligible' AND r.paper_id IS NOT NULL "
        "ORDER BY r.ref_key",
        [target_id],
    ).fetchall()


def known_ids(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Every paper and target ID, and every (scheme, value, paper_id) of the crosswalk."""
    papers = con.execute("SELECT paper_id FROM papers UNION SELECT paper_id FROM targets")
    ids = [str(paper_id) for (paper_id,) in papers.fetchall()]
    crosswalk = con.execute("SELECT scheme, value, paper_id FROM paper_ids").fetchall()
    return ids, [(str(s), str(v), str(p)) for s, v, p in crosswalk]


def dated_papers(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """(paper_id, first public date, its source, its precision) of every dated paper."""
    return con.execute(
        "SELECT paper_id, first_public_date, first_public_source, date_precision FROM papers "
        "WHERE first_public_date IS NOT NULL"
    ).fetchall()


def target_statuses(con: duckdb.DuckDBPyConnection, split: str) -> dict[str, int]:
    """status -> how many of the split's targets have it."""
    rows = con.execute(
        "SELECT status, count(*) FROM targets WHERE split = ? GROUP BY 1", [split]
    ).fetchall()
    return {str(status): int(count) for status, count in rows}


def source_problems(con: duckdb.DuckDBPyConnection, target_id: str) -> str | None:
    """What the lineage step recorded the sources could not say about a target (None: nothing)."""
    row = con.execute(
        "SELECT source_problems FROM targets WHERE paper_id = ? AND source_problems IS NOT NULL "
        "LIMIT 1",
        [target_id],
    ).fetchone()
    return str(row[0]) if row else None


def published_cutoff(con: duckdb.DuckDBPyConnection, target_id: str) -> dt.date | None:
    """A target's published cutoff as its latest lineage set it (None: no cutoff yet)."""
    row = con.execute(
        "SELECT cutoff_date FROM targets WHERE paper_id = ? AND cutoff_date IS NOT NULL "
        "ORDER BY updated_at DESC LIMIT 1",
        [target_id],
    ).fetchone()
    return row[0] if row else None


def id_spellings(con: duckdb.DuckDBPyConnection, paper_id: str) -> set[str]:
    """A paper's ID and every ``scheme:value`` the crosswalk maps to it."""
    rows = con.execute(
        "SELECT scheme || ':' || value FROM paper_ids WHERE paper_id = ?", [paper_id]
    ).fetchall()
    return {paper_id, *(str(spelling) for (spelling,) in rows)}


def mark_over_count(
    con: duckdb.DuckDBPyConnection, split: str, target_ids: list[str], reason: str
) -> None:
    """Record ``target_ids`` as left out over the build's count of instances (or limit)."""
    if not target_ids:
        return
    with warehouse.transaction(con):
        con.execute(
            "UPDATE targets SET status = 'excluded', outcome = 'over_limit', reason = ?, "
            "updated_at = ? WHERE split = ? AND paper_id IN (SELECT unnest(?::VARCHAR[]))",
            [reason, dt.datetime.now(dt.UTC), split, target_ids],
        )
