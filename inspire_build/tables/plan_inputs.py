"""What an earlier build of a split measured, for the next build's plan (:mod:`inspire_build.plan`):
its targets' outcomes, briefs per target, graded and eligible shares, and the call log's tokens
and latency per step for the model."""

from __future__ import annotations

from typing import Any

import duckdb

# Outcomes lineage gives a target it leaves out before any LLM step.
LEFT_BY_LINEAGE = (
    "no_date",
    "outside_window",
    "no_references",
    "no_eligible_reference",
    "thin_window",
)


def target_figures(con: duckdb.DuckDBPyConnection, split: str) -> dict[str, Any]:
    """Of the split's targets an earlier build finished (a cancelled build leaves targets
    selected or resolved, with no outcome yet: counted, they would read as a yield of 0): how
    many, how many lineage left out, how many were briefed (and their briefs), graded and
    accepted; their references, listed and eligible."""
    row = con.execute(
        "WITH reached AS (SELECT paper_id, outcome FROM targets WHERE split = ? "
        "AND outcome NOT IN ('selected', 'over_limit', 'lineage_resolved')) "
        "SELECT count(*), count(*) FILTER (WHERE outcome IN (SELECT unnest(?::VARCHAR[]))), "
        "(SELECT count(DISTINCT target_id) FROM briefs WHERE target_id IN "
        "  (SELECT paper_id FROM reached)), "
        "(SELECT count(*) FROM briefs WHERE target_id IN (SELECT paper_id FROM reached)), "
        "(SELECT count(DISTINCT target_id) FROM grades WHERE target_id IN "
        "  (SELECT paper_id FROM reached)), "
        "count(*) FILTER (WHERE outcome = 'accepted'), "
        '(SELECT count(*) FROM "references" WHERE target_id IN (SELECT paper_id FROM reached)), '
        "(SELECT count(*) FROM \"references\" WHERE status = 'eligible' AND target_id IN "
        "  (SELECT paper_id FROM reached)) "
        "FROM reached",
        [split, list(LEFT_BY_LINEAGE)],
    ).fetchone()
    names = ("reached", "left_by_lineage", "briefed", "briefs", "graded", "accepted")
    values = [int(v or 0) for v in row] if row else [0] * 8
    return {
        **dict(zip(names, values, strict=False)),
        "references": values[6],
        "eligible": values[7],
    }


def step_figures(
    con: duckdb.DuckDBPyConnection, backend: str, model: str
) -> dict[str, tuple[int, float, float, float]]:
    """prompt_name -> (calls, mean tokens in, mean tokens out, mean latency in s) of the model's
    answered calls."""
    rows = con.execute(
        "SELECT prompt_name, count(*), avg(tokens_in), avg(tokens_out), avg(latency_ms) / 1000 "
        "FROM llm_calls WHERE backend = ? AND model = ? AND status = 'answered' GROUP BY 1",
        [backend, model],
    ).fetchall()
    return {str(r[0]): (int(r[1]), float(r[2]), float(r[3]), float(r[4])) for r in rows}
