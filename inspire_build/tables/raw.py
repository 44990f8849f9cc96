"""``raw_http``: every raw HTTP response, keyed by its normalised request (the record and replay
store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb


def responses(con: duckdb.DuckDBPyConnection, resource_key: str) -> list[tuple[Any, ...]]:
    """Every stored answer for a resource, newest first: status, body, headers, url, fields,
    page size and completeness."""
    return con.execute(
        "SELECT status, body, headers, url, fields, page_size, complete FROM raw_http "
        "WHERE resource_key = ? ORDER BY fetched_at DESC, request_key",
        [resource_key],
    ).fetchall()


def copy_to_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Write every stored response to ``path`` as Parquet, by request key. Returns the rows."""
    con.execute(
        "COPY (SELECT * FROM raw_http ORDER BY request_key) TO ? (FORMAT parquet)", [str(path)]
    )
    row = con.execute("SELECT count(*) FROM raw_http").fetchone()
    return int(row[0]) if row else 0


def counts(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, int, int, int, int]]:
    """Per source and origin host: responses, errors (HTTP 400 and above), complete pages and
    body bytes."""
    rows = con.execute(
        "SELECT source, regexp_replace(origin, ':.*', ''), count(*), "
        "count(*) FILTER (WHERE status >= 400), count(*) FILTER (WHERE complete), "
        "coalesce(sum(octet_length(body)), 0) "
        "FROM raw_http GROUP BY ALL ORDER BY 1, 2"
    ).fetchall()
    return [(str(a), str(b), int(c), int(d), int(e), int(f)) for a, b, c, d, e, f in rows]
