"""tables/lineage.py, read back as a user's `inspire stats lineage --json` shows it."""

from __future__ import annotations

import datetime as dt

import duckdb

from inspire_build import warehouse
from inspire_build.tables import lineage


def test_served_by_reads_back_as_an_object_not_json_text(con: duckdb.DuckDBPyConnection) -> None:
    """It was printed as a JSON string inside the JSON line: "{\\"openalex\\":\\"api\\"}"."""
    row = {"target_id": "arxiv:2210.00004", "references_seen": 2, "resolved": 2, "dated": 2,
           "eligible": 1, "after_cutoff": 1, "dated_after_target": 0, "no_date": 0,
           "unresolved": 0, "self": 0, "sources": ["openalex", "s2"],
           "served_by": {"openalex": "api", "s2 references": "bulk"}, "unidentified": 0,
           "updated_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)}  # fmt: skip
    warehouse.upsert(con, "gold_completeness", [row], ["target_id"])
    [read] = lineage.completeness(con)
    assert read["served_by"] == {"openalex": "api", "s2 references": "bulk"}
