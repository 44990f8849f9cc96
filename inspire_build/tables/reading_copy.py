"""A read-only copy of what lineage reads, for worker processes: DuckDB lets one process open a
database file for writing and no other open it at all, so a Dask worker cannot read the
warehouse the build's flow process writes. The copy is made once per build before its chunks
are sent, from this module's own table names (the copy's path is the one value in its SQL,
as a quoted literal)."""

from __future__ import annotations

from pathlib import Path

import duckdb

# What a chunk's lineage reads: the raw response store, the ID crosswalk, the bulk tables.
TABLES = (
    "raw_http",
    "paper_ids",
    "bulk_files",
    "bulk_records",
    "bulk_ids",
    "bulk_abstracts",
    "bulk_citations",
    "bulk_paper_ids",
)
_COPY = {table: f"CREATE TABLE copy.{table} AS SELECT * FROM main.{table}" for table in TABLES}  # noqa: S608
_INDEX = "CREATE INDEX raw_http_resource ON copy.raw_http (resource_key)"


def write(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Copy :data:`TABLES` into a new database file at ``path`` (replacing one left there)."""
    path.unlink(missing_ok=True)
    # ATTACH binds no parameter: the path goes in as a string literal, its quotes doubled.
    literal = "'" + str(path).replace("'", "''") + "'"
    con.execute(f"ATTACH {literal} AS copy")
    try:
        for statement in _COPY.values():
            con.execute(statement)
        con.execute(_INDEX)
    finally:
        con.execute("DETACH copy")


def open_copy(path: Path) -> duckdb.DuckDBPyConnection:
    """The copy, read-only: any number of worker processes may hold it open at once."""
    return duckdb.connect(str(path), read_only=True)
