"""tables/plan_inputs.py: what a plan reads of earlier builds, counted by hand."""

from __future__ import annotations

import datetime as dt

import duckdb

from inspire_build.tables import plan_inputs

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _targets(con: duckdb.DuckDBPyConnection, outcomes: dict[str, str]) -> None:
    for paper_id, outcome in outcomes.items():
        con.execute(
            "INSERT INTO targets (split, paper_id, status, outcome, updated_at) "
            "VALUES ('eval', ?, 'candidate', ?, ?)",
            [paper_id, outcome, NOW],
        )


def test_only_finished_targets_count_as_reached(con: duckdb.DuckDBPyConnection) -> None:
    """A cancelled build leaves its targets resolved and unfinished: counted as reached, they
    read as a yield near 0, and the plan walks every candidate for one instance."""
    _targets(
        con,
        {
            "a": "accepted",
            "b": "no_date",
            "c": "every_brief_leaked",
            **{f"r{n}": "lineage_resolved" for n in range(5)},  # cut off by the cancel
            "s": "selected",
            "o": "over_limit",
        },
    )
    figures = plan_inputs.target_figures(con, "eval")
    assert (figures["reached"], figures["left_by_lineage"], figures["accepted"]) == (3, 1, 1)
