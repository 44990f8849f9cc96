"""A read-only copy of what lineage reads, for worker processes: DuckDB lets one process open a
database file for writing and no other open it at all, so a Dask worker cannot read the
warehouse the build's flow process writes. The copy is made once per build before its chunks
are sent: each table through a Parquet file, whose path COPY and read_parquet bind, so no
value but this module's own table names enters the SQL text."""

from __future__ import annotations

import tempfile
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
_EXPORT = {table: f"COPY {table} TO ? (FORMAT parquet)" for table in TABLES}
_IMPORT = {table: f"CREATE TABLE {table} AS SELECT * FROM read_parquet(?)" for table in TABLES}  # noqa: S608
_INDEX = "CREATE INDEX raw_http_resource ON raw_http (resource_key)"


def write(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Copy :data:`TABLES` into a new database file at ``path`` (replacing one left there)."""
    path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".reading-copy-") as staged:
        copy = duckdb.connect(str(path))
        try:
            for table in TABLES:
                part = str(Path(staged) / f"{table}.parquet")
                con.execute(_EXPORT[table], [part])
                copy.execute(_IMPORT[table], [part])
            copy.execute(_INDEX)
        finally:
            copy.close()


def open_copy(path: Path) -> duckdb.DuckDBPyConnection:
    """The copy, read-only: any number of worker processes may hold it open at once."""
    return duckdb.connect(str(path), read_only=True)
