"""The LLM steps' tables: ``briefs`` (every attempt), ``audit_findings`` and ``grades``."""

from __future__ import annotations

from typing import Any

import duckdb

from inspire_build import warehouse


def accepted_briefs(con: duckdb.DuckDBPyConnection, split: str) -> list[tuple[Any, ...]]:
    """The split's accepted targets with their accepted briefs, by target: target ID, published
    cutoff, brief ID, brief text."""
    return con.execute(
        "SELECT t.paper_id, t.cutoff_date, b.brief_id, b.text FROM targets t "
        "JOIN briefs b ON b.target_id = t.paper_id AND b.status = 'accepted' "
        "WHERE t.split = ? AND t.status = 'accepted' ORDER BY t.paper_id",
        [split],
    ).fetchall()


def antecedents(con: duckdb.DuckDBPyConnection, target_id: str) -> list[tuple[str, int, str]]:
    """A target's antecedents (tiers 1-3) by paper ID: paper ID, tier, role."""
    rows = con.execute(
        "SELECT paper_id, tier, role FROM grades WHERE target_id = ? AND tier > 0 "
        "ORDER BY paper_id",
        [target_id],
    ).fetchall()
    return [(p, t, r) for p, t, r in rows]


def grades(con: duckdb.DuckDBPyConnection, target_id: str) -> list[dict[str, Any]]:
    """Every grade of a target, tier 0 included: paper_id, tier, role, rationale."""
    return warehouse.dicts(
        con, "SELECT paper_id, tier, role, rationale FROM grades WHERE target_id = ?", [target_id]
    )


def findings(con: duckdb.DuckDBPyConnection, brief_id: str) -> list[dict[str, Any]]:
    """A brief's audit findings: check, passed, level, detail."""
    return warehouse.dicts(
        con,
        'SELECT "check", passed, "level", detail FROM audit_findings WHERE brief_id = ?',
        [brief_id],
    )
