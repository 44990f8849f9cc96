"""What the public-side audit reads of a version's windows (``targets``, ``papers``) and what it
records: ``boundary_audits`` and ``audit_verdicts``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import duckdb

from inspire_build import warehouse

# A paper's first public day may be coarse: a month or a year counts while its range overlaps.
_POOL = (
    "SELECT paper_id, concat_ws(' ', title, abstract), true FROM targets "
    "WHERE split = ? AND first_public_date BETWEEN ? AND ? "
    "UNION ALL "
    "SELECT paper_id, concat_ws(' ', title, abstract), false FROM papers "
    "WHERE first_public_date IS NOT NULL AND "
    "(CASE date_precision WHEN 'year' THEN make_date(year(first_public_date), 1, 1) "
    " WHEN 'month' THEN date_trunc('month', first_public_date)::DATE "
    " ELSE first_public_date END) <= ? AND "
    "(CASE date_precision WHEN 'year' THEN make_date(year(first_public_date), 12, 31) "
    " WHEN 'month' THEN last_day(first_public_date) ELSE first_public_date END) >= ? "
    "AND paper_id NOT IN (SELECT paper_id FROM targets WHERE split = ?)"
)


def pool(
    con: duckdb.DuckDBPyConnection, split: str, first: dt.date, last: dt.date
) -> dict[str, tuple[str, bool]]:
    """paper_id -> (title and abstract, selectable) for every paper the warehouse knows that may
    have gone public from ``first`` to ``last``: the split's candidates (selectable: they met
    its public selection criteria, whatever their status) and the other papers."""
    rows = con.execute(_POOL, [split, first, last, last, first, split]).fetchall()
    return {str(paper_id): (str(text), bool(selectable)) for paper_id, text, selectable in rows}


def selectable(con: duckdb.DuckDBPyConnection, split: str, first: dt.date, last: dt.date) -> int:
    """The split's candidates first public from ``first`` to ``last``: an anonymity set."""
    row = con.execute(
        "SELECT count(*) FROM targets WHERE split = ? AND first_public_date BETWEEN ? AND ?",
        [split, first, last],
    ).fetchone()
    return int(row[0]) if row else 0


def target_cutoff(con: duckdb.DuckDBPyConnection, target_id: str) -> tuple[str, dt.date] | None:
    """(split, published cutoff) as the target's latest lineage set them."""
    row = con.execute(
        "SELECT split, cutoff_date FROM targets WHERE paper_id = ? AND cutoff_date IS NOT NULL "
        "ORDER BY updated_at DESC LIMIT 1",
        [target_id],
    ).fetchone()
    return (str(row[0]), row[1]) if row else None


def record_attacks(con: duckdb.DuckDBPyConnection, row: Mapping[str, object]) -> None:
    warehouse.upsert(con, "boundary_audits", [row], ["version_id"])


def record_verdict(
    con: duckdb.DuckDBPyConnection, version_id: str, split: str, verdict: str, reasons: str | None
) -> None:
    """The verdict of the version's latest audit, which `inspire export` reads."""
    row = {
        "version_id": version_id,
        "split": split,
        "verdict": verdict,
        "reasons": reasons,
        "audited_at": dt.datetime.now(dt.UTC),
    }
    warehouse.upsert(con, "audit_verdicts", [row], ["version_id"])


def latest_verdict(con: duckdb.DuckDBPyConnection, version_id: str) -> dict[str, Any] | None:
    found = warehouse.dicts(
        con,
        "SELECT verdict, reasons, audited_at FROM audit_verdicts WHERE version_id = ?",
        [version_id],
    )
    return found[0] if found else None


def search_details(con: duckdb.DuckDBPyConnection, version_id: str) -> list[str]:
    """The details of the version's search identity findings, one per instance where it ran."""
    rows = con.execute(
        "SELECT detail FROM version_findings WHERE version_id = ? AND \"check\" = 'search' "
        "ORDER BY instance_id",
        [version_id],
    ).fetchall()
    return [str(detail) for (detail,) in rows]
