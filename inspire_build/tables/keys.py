"""``instance_key``: the warehouse's secret instance key (private; never exported publicly)."""

from __future__ import annotations

import duckdb


def secret_hex(con: duckdb.DuckDBPyConnection, key_id: str) -> str | None:
    row = con.execute("SELECT secret_hex FROM instance_key WHERE key_id = ?", [key_id]).fetchone()
    return str(row[0]) if row else None
