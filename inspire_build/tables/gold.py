"""The LLM steps' tables: ``briefs`` (every attempt), ``audit_findings`` and ``grades``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from inspire_build import warehouse
from inspire_build.models import Brief, Grade
from inspire_build.tables import model_rows


def replace_briefs(con: duckdb.DuckDBPyConnection, target_id: str, briefs: Sequence[Brief]) -> None:
    """A target's briefs, every attempt, in place of those an earlier run wrote; the findings
    of the attempts replaced go with them (a version keeps its own in version_findings)."""
    rows = model_rows.rows(briefs)
    con.execute(
        "DELETE FROM audit_findings WHERE brief_id IN (SELECT brief_id FROM briefs "
        "WHERE target_id = ? AND NOT list_contains(?, brief_id))",
        [target_id, [b.brief_id for b in briefs]],
    )
    warehouse.replace_where(con, "briefs", {"target_id": target_id}, rows, ["brief_id"])


def replace_grades(con: duckdb.DuckDBPyConnection, target_id: str, grades: Sequence[Grade]) -> None:
    """A target's grades, tier 0 included, in place of those an earlier run wrote."""
    rows = model_rows.rows(grades)
    key = ["target_id", "paper_id"]
    warehouse.replace_where(con, "grades", {"target_id": target_id}, rows, key)


def target_briefs(con: duckdb.DuckDBPyConnection, target_id: str) -> list[Brief]:
    """A target's briefs, by attempt."""
    found = warehouse.dicts(
        con, "SELECT * FROM briefs WHERE target_id = ? ORDER BY attempt, brief_id", [target_id]
    )
    return model_rows.read(Brief, found)


def target_grades(con: duckdb.DuckDBPyConnection, target_id: str) -> list[Grade]:
    """A target's grades, tier 0 included, by paper ID."""
    found = warehouse.dicts(
        con, "SELECT * FROM grades WHERE target_id = ? ORDER BY paper_id", [target_id]
    )
    return model_rows.read(Grade, found)


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
