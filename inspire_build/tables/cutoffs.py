"""``published_cutoffs``: each target's cutoff as the first split version that held it published
it (migration 0019). Private side: the offset is the secret the jitter hides."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import duckdb

from inspire_build import warehouse
from inspire_build.cutoff import PublishedCutoff


def published(con: duckdb.DuckDBPyConnection) -> dict[str, PublishedCutoff]:
    """target ID -> its published cutoff, for every target a version holds."""
    rows = con.execute(
        "SELECT target_id, offset_days, jitter_days, cutoff_date, version_id FROM published_cutoffs"
    ).fetchall()
    return {str(t): PublishedCutoff(int(o), int(j), c, str(v)) for t, o, j, c, v in rows}


def jitter_days(con: duckdb.DuckDBPyConnection, target_id: str) -> int | None:
    """The jitter a target's published cutoff lies within (None: no version published it)."""
    row = con.execute(
        "SELECT jitter_days FROM published_cutoffs WHERE target_id = ?", [target_id]
    ).fetchone()
    return int(row[0]) if row else None


def first_public_dates(con: duckdb.DuckDBPyConnection, split: str) -> dict[str, dt.date]:
    """target ID -> the first public date its lineage set, for the split's dated targets."""
    rows = con.execute(
        "SELECT paper_id, first_public_date FROM targets WHERE split = ? "
        "AND first_public_date IS NOT NULL",
        [split],
    ).fetchall()
    return {str(t): day for t, day in rows}


def publish(
    con: duckdb.DuckDBPyConnection, first: Mapping[str, PublishedCutoff], at: dt.datetime
) -> None:
    """Store the cutoffs a version publishes first. A stored one is never rewritten: a target
    in ``first`` that has one already keeps it."""
    known = published(con)
    rows = [
        {
            "target_id": target,
            "offset_days": p.offset_days,
            "jitter_days": p.jitter_days,
            "cutoff_date": p.cutoff,
            "version_id": p.version_id,
            "published_at": at,
        }
        for target, p in sorted(first.items())
        if target not in known
    ]
    warehouse.upsert(con, "published_cutoffs", rows, ["target_id"])
