"""The cost ledger: ``llm_call_uses`` (each call a build's target used) and the ``llm_ledger``
view over it, the call log, the build runs and the versions (migration 0023).

A call is counted once per summary, however many targets or builds used it: ``cost_usd`` is
what the chosen builds' calls cost, ``paid_usd`` what of it no earlier build's stored target
had used (the view's ``paid_usd``), and ``asked`` the calls asked of the model, not answered
from the log, in these builds. A call of a model with no price counts in ``unpriced_calls``,
never as 0.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import duckdb

from inspire_build import warehouse

KEY = ["call_key", "run_id", "target_id", "step"]
PER = ("step", "target")  # what a summary may be grouped by
NOTHING = {  # the figures of no call
    "calls": 0,
    "asked": 0,
    "tokens_in": 0,
    "tokens_out": 0,
    "cost_usd": 0.0,
    "paid_usd": 0.0,
    "unpriced_calls": 0,
}
# Each call once per group (step, target, or all: 'total'), over the chosen builds' uses.
_SUMMARY = """
WITH calls AS (
    SELECT
        CASE $per WHEN 'step' THEN step WHEN 'target' THEN target_id ELSE 'total' END AS grouped,
        call_key,
        bool_and(cached) AS cached,
        any_value(tokens_in) AS tokens_in,
        any_value(tokens_out) AS tokens_out,
        any_value(cost_usd) AS cost_usd,
        sum(paid_usd) AS paid_usd,
        bool_and(priced) AS priced
    FROM llm_ledger
    WHERE ($version IS NULL OR version_id = $version) AND ($split IS NULL OR split = $split)
    GROUP BY grouped, call_key
)
SELECT
    grouped,
    count(*) AS calls,
    count(*) FILTER (WHERE NOT cached) AS asked,
    coalesce(sum(tokens_in), 0) AS tokens_in,
    coalesce(sum(tokens_out), 0) AS tokens_out,
    -- a group none of whose calls has a price costs an unknown amount, not 0
    CASE WHEN bool_or(priced) THEN round(coalesce(sum(cost_usd), 0), 6) END AS cost_usd,
    CASE WHEN bool_or(priced) THEN round(coalesce(sum(paid_usd), 0), 6) END AS paid_usd,
    count(*) FILTER (WHERE NOT priced) AS unpriced_calls
FROM calls
GROUP BY grouped
ORDER BY grouped
"""
_UNPRICED = """
SELECT model, count(DISTINCT call_key)
FROM llm_ledger
WHERE NOT priced
    AND ($version IS NULL OR version_id = $version) AND ($split IS NULL OR split = $split)
GROUP BY model
ORDER BY model
"""


def unattributed(con: duckdb.DuckDBPyConnection) -> tuple[int, float | None]:
    """(calls, their cost) in the call log that a build which did not complete asked and no
    stored target used: it stopped (its budget, a Ctrl-C) before storing their targets; its
    resume uses them from the log and records them. The cost is None when none has a price."""
    row = con.execute(
        "SELECT count(*), sum(cost_usd) FROM llm_calls c "
        "WHERE NOT EXISTS (SELECT 1 FROM llm_call_uses u WHERE u.call_key = c.call_key) "
        "AND EXISTS (SELECT 1 FROM build_runs b WHERE b.status <> 'completed' "
        "AND c.created_at >= b.started_at "
        "AND (b.finished_at IS NULL OR c.created_at <= b.finished_at))"
    ).fetchone()
    return (int(row[0]), None if row[1] is None else round(float(row[1]), 6)) if row else (0, None)


def running_build(con: duckdb.DuckDBPyConnection) -> tuple[str, str] | None:
    """The build that holds the warehouse now (its run ID and split), if one is running: a build
    records itself once it holds the write lock, which no other process can then hold."""
    row = con.execute(
        "SELECT run_id, split FROM build_runs WHERE status = 'running' "
        "ORDER BY started_at DESC LIMIT 1"
    ).fetchone()
    return (str(row[0]), str(row[1])) if row else None


def record_uses(
    con: duckdb.DuckDBPyConnection, target_id: str, uses: Iterable[tuple[str, str, bool]]
) -> int:
    """Record the calls (key, step, cached) that ``target_id``'s steps used, under the running
    build; a call used twice for one step is one use, cached only if it was both times. Outside
    a build nothing is recorded. Returns the rows written."""
    merged: dict[tuple[str, str], bool] = {}
    for call_key, step, cached in uses:
        merged[(call_key, step)] = merged.get((call_key, step), True) and cached
    run = running_build(con) if merged else None
    if run is None:
        return 0
    run_id, split = run
    now = dt.datetime.now(dt.UTC)
    rows = [
        {
            "call_key": call_key,
            "run_id": run_id,
            "split": split,
            "target_id": target_id,
            "step": step,
            "cached": cached,
            "used_at": now,
        }
        for (call_key, step), cached in merged.items()
    ]
    # stored before only where this build wrote the target already: one lookup, then an insert
    return warehouse.upsert(con, "llm_call_uses", rows, KEY, mostly_new=True)


def costs(
    con: duckdb.DuckDBPyConnection,
    per: str = "step",
    version: str | None = None,
    split: str | None = None,
) -> list[dict[str, Any]]:
    """Calls, tokens and cost per step (``per="step"``) or per target (``per="target"``) of the
    builds that wrote ``version``, else of every build (of ``split``)."""
    if per not in PER:
        raise ValueError(f"per must be one of {', '.join(PER)}, not {per!r}")
    return _summary(con, per, version, split)


def total(
    con: duckdb.DuckDBPyConnection, version: str | None = None, split: str | None = None
) -> dict[str, Any]:
    """The figures of :func:`costs` over every call of the chosen builds, each call once, and
    ``unpriced_models``: each model with no price, with its count of calls."""
    found = _summary(con, "total", version, split)
    figures = {k: v for k, v in found[0].items() if k != "total"} if found else dict(NOTHING)
    unpriced = con.execute(_UNPRICED, {"version": version, "split": split}).fetchall()
    return {**figures, "unpriced_models": {str(m): int(n) for m, n in unpriced}}


def _summary(
    con: duckdb.DuckDBPyConnection, per: str, version: str | None, split: str | None
) -> list[dict[str, Any]]:
    cursor = con.execute(_SUMMARY, {"per": per, "version": version, "split": split})
    names = [per if d[0] == "grouped" else d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
