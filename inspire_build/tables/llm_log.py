"""``llm_calls`` (every LLM call, the cache of identical reruns) and ``llm_batches`` (the
OpenAI Batch API jobs)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import duckdb

from inspire_build import warehouse


def logged_output(con: duckdb.DuckDBPyConnection, call_key: str) -> str | None:
    """The logged answer of the call ``call_key``, if it was made before."""
    row = con.execute(
        "SELECT output FROM llm_calls WHERE call_key = ? AND status = 'answered'", [call_key]
    ).fetchone()
    return str(row[0]) if row else None


def write(con: duckdb.DuckDBPyConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Log calls (rows of ``llm_calls``); a call made twice keeps its latest answer. Most calls
    are new (a logged one answers from the log), so a lookup goes before the upsert."""
    warehouse.upsert(con, "llm_calls", rows, ["call_key"], mostly_new=True)


def usage(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Calls, tokens, cost and mean latency per step (prompt), backend and model; the cost of a
    model with no price is unknown (NULL), and its calls are counted in ``unpriced_calls``."""
    return warehouse.dicts(
        con,
        "SELECT prompt_name AS step, backend, model, count(*) AS calls, "
        "sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out, "
        "round(sum(cost_usd), 6) AS cost_usd, "
        "count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced_calls, "
        "round(avg(latency_ms), 1) AS mean_latency_ms "
        "FROM llm_calls GROUP BY ALL ORDER BY step, backend, model",
    )


def open_batch(con: duckdb.DuckDBPyConnection, keys: list[str], final: Sequence[str]) -> str | None:
    """The newest batch job not in a ``final`` status whose requests are exactly ``keys``."""
    rows = con.execute(
        "SELECT batch_id, call_keys FROM llm_batches WHERE NOT list_contains(?, status) "
        "ORDER BY submitted_at DESC",
        [list(final)],
    ).fetchall()
    for batch_id, call_keys in rows:
        if json.loads(call_keys) == keys:
            return str(batch_id)
    return None


def submitted_at(con: duckdb.DuckDBPyConnection, batch_id: str) -> Any:
    row = con.execute(
        "SELECT submitted_at FROM llm_batches WHERE batch_id = ?", [batch_id]
    ).fetchone()
    return row[0] if row else None
