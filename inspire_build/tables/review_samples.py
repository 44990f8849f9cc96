"""Curators' review samples: ``review_samples`` (one sample per split version, drawn by
``inspire review sample``) and what a draw reads of a version's instances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from inspire_build import warehouse


def candidates(con: duckdb.DuckDBPyConnection, split: str, version_id: str) -> list[dict[str, Any]]:
    """A version's instances, by ID, each with its target's first public date and its highest
    gold tier (0: no qrel): what a draw stratifies by."""
    return warehouse.dicts(
        con,
        "SELECT i.instance_id, t.first_public_date, coalesce(max(q.tier), 0) AS tier "
        "FROM instances i "
        "LEFT JOIN targets t ON t.split = ? AND t.paper_id = i.target_id "
        "LEFT JOIN qrels q ON q.version_id = i.version_id AND q.instance_id = i.instance_id "
        "WHERE i.version_id = ? GROUP BY i.instance_id, t.first_public_date "
        "ORDER BY i.instance_id",
        [split, version_id],
    )


def replace(
    con: duckdb.DuckDBPyConnection, version_id: str, rows: Sequence[Mapping[str, object]]
) -> int:
    """The version's sample becomes ``rows`` (every column of ``review_samples``)."""
    key = ["version_id", "instance_id"]
    return warehouse.replace_where(con, "review_samples", {"version_id": version_id}, rows, key)


def of_version(con: duckdb.DuckDBPyConnection, version_id: str) -> list[dict[str, Any]]:
    """A version's sample in the order drawn, each with its instance's target and brief."""
    return warehouse.dicts(
        con,
        'SELECT s.instance_id, s."position", s."month", s.tier, s.seed, s.requested, i.target_id, '
        "i.brief FROM review_samples s JOIN instances i USING (version_id, instance_id) "
        'WHERE s.version_id = ? ORDER BY s."position"',
        [version_id],
    )
