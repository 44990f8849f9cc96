"""A read-only copy of what lineage reads, for worker processes: DuckDB lets one process open a
database file for writing and no other open it at all, so a Dask worker cannot read the
warehouse the build's flow process writes. The copy is made once per build before its chunks
are sent: each table through a Parquet file, whose path COPY and read_parquet bind, so no
value but this module's own table names enters the SQL text."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

from inspire_build.tables import search

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
# What a target's LLM steps read, once lineage is complete: its inputs, the corpus the retrieval
# check searches (indexed in the copy), the call log that answers a call asked before, and for
# the search identity check the crosswalk (the target's IDs), the stored responses and the
# jitter of a kept cutoff (its window).
STEPS_TABLES = (
    "targets",
    "references",
    "papers",
    "llm_calls",
    "paper_ids",
    "raw_http",
    "published_cutoffs",
)
_EXPORT = {t: f'COPY "{t}" TO ? (FORMAT parquet)' for t in TABLES + STEPS_TABLES}
_IMPORT = {
    t: f'CREATE TABLE "{t}" AS SELECT * FROM read_parquet(?)'  # noqa: S608
    for t in TABLES + STEPS_TABLES
}
_INDEX = "CREATE INDEX raw_http_resource ON raw_http (resource_key)"
_CALL_INDEX = "CREATE INDEX llm_calls_key ON llm_calls (call_key)"


def write(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Copy :data:`TABLES` into a new database file at ``path`` (replacing one left there)."""
    _copied(con, path, TABLES, lambda copy: copy.execute(_INDEX))


def write_for_steps(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Copy :data:`STEPS_TABLES` into a new database file at ``path``, with the search index
    over its papers that the retrieval check reads (the copy is opened read-only after)."""

    def indexed(copy: duckdb.DuckDBPyConnection) -> None:
        copy.execute(_CALL_INDEX)
        copy.execute(_INDEX)
        search.build_search_index(copy)

    _copied(con, path, STEPS_TABLES, indexed)


def _copied(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    tables: tuple[str, ...],
    finish: Callable[[duckdb.DuckDBPyConnection], object],
) -> None:
    path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".reading-copy-") as staged:
        copy = duckdb.connect(str(path))
        try:
            for table in tables:
                part = str(Path(staged) / f"{table}.parquet")
                con.execute(_EXPORT[table], [part])
                copy.execute(_IMPORT[table], [part])
            finish(copy)
        finally:
            copy.close()


def open_copy(path: Path) -> duckdb.DuckDBPyConnection:
    """The copy, read-only: any number of worker processes may hold it open at once."""
    return duckdb.connect(str(path), read_only=True)
