"""The bulk tables (migrations 0016, 0026, 0027): reading the distributions' files with DuckDB, with
explicit columns, and writing what they hold; then the lookups a build makes in them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import warehouse


class Kind(StrEnum):
    OPENALEX_WORKS = "openalex-works"
    S2_PAPERS = "s2-papers"
    S2_ABSTRACTS = "s2-abstracts"
    S2_CITATIONS = "s2-citations"
    S2_PAPER_IDS = "s2-paper-ids"
    ARXIV_METADATA = "arxiv-metadata"


# The columns read from each kind of file. Types are never detected (that reads the file twice
# and, on a sample, infers an all-null column as JSON); the Paper records' columns are read as
# JSON text, so that the sources' `parse` sees each value as the source wrote it.
COLUMNS: dict[str, dict[str, str]] = {
    "openalex-works": {
        name: "JSON"
        for name in (
            "id",
            "doi",
            "title",
            "display_name",
            "publication_date",
            "publication_year",
            "primary_topic",
            "topics",
            "referenced_works",
            "referenced_works_count",
            "primary_location",
            "locations",
            "authorships",
            "abstract_inverted_index",
        )  # fmt: skip
    },
    "s2-papers": {
        name: "JSON"
        for name in (
            "corpusid",
            "externalids",
            "url",
            "title",
            "authors",
            "venue",
            "year",
            "referencecount",
            "s2fieldsofstudy",
            "publicationdate",
        )  # fmt: skip
    },
    "arxiv-metadata": {
        name: "JSON"
        for name in ("id", "title", "abstract", "doi", "categories", "versions", "journal-ref")
    },
    "s2-abstracts": {"corpusid": "BIGINT", "abstract": "VARCHAR"},
    "s2-citations": {
        "citingcorpusid": "BIGINT",
        "citedcorpusid": "BIGINT",
        "isinfluential": "BOOLEAN",
        "contexts": "VARCHAR[]",
        "intents": "VARCHAR[]",
    },
    "s2-paper-ids": {"sha": "VARCHAR", "corpusid": "BIGINT", "primary": "BOOLEAN"},
}


def reader(columns: Mapping[str, str], path: str = "?") -> str:
    """The ``read_json`` call of a file (bound as ``path``) with these columns."""
    listed = ", ".join(f"'{name}': '{type_}'" for name, type_ in columns.items())
    # a snapshot's `updated_date=…` folder is not a column of its works; records = true: with
    # one column, the default reads each line whole into it, ten times slower
    return (
        f"read_json({path}, format = 'newline_delimited', records = true, "
        f"columns = {{{listed}}}, hive_partitioning = false)"
    )


# Every statement that reads a file, built once here from this module's own constants: no value
# from a caller or a file enters the SQL text, the file's path is bound.
_READ = {kind: f"SELECT * FROM {reader(columns)}" for kind, columns in COLUMNS.items()}  # noqa: S608
# The kinds DuckDB loads whole, in SQL: the statement, with the file's provenance bound.
_INSERTS = {
    "s2-abstracts": "INSERT INTO bulk_abstracts SELECT corpusid, abstract",
    "s2-citations": "INSERT INTO bulk_citations SELECT citingcorpusid, citedcorpusid, "
    "isinfluential, contexts, intents",
    "s2-paper-ids": 'INSERT INTO bulk_paper_ids SELECT sha, corpusid, "primary"',
}
_LOAD = {  # the file's path and release, then the JSON Lines read (the file, decompressed)
    kind: f"{insert}, ? AS file, ? AS release FROM {reader(COLUMNS[kind])}"  # noqa: S608
    for kind, insert in _INSERTS.items()
}
# What an earlier ingest of a file wrote, in the order that keeps bulk_ids' subquery answerable.
_FORGET = (
    "DELETE FROM bulk_ids WHERE (source, record_id) IN "
    "(SELECT (source, record_id) FROM bulk_records WHERE file = ?)",
    "DELETE FROM bulk_records WHERE file = ?",
    "DELETE FROM bulk_abstracts WHERE file = ?",
    "DELETE FROM bulk_citations WHERE file = ?",
    "DELETE FROM bulk_paper_ids WHERE file = ?",
    "DELETE FROM bulk_files WHERE path = ?",
)


def read_rows(
    con: duckdb.DuckDBPyConnection, kind: str, path: Path, batch: int = 10_000
) -> Iterator[dict[str, Any]]:
    """The file's rows, as column -> value, ``batch`` at a time (JSON columns as text)."""
    cursor = con.cursor()
    cursor.execute(_READ[kind], [str(path)])
    yield from _dicts(cursor, list(COLUMNS[kind]), batch)


def rows_of(
    con: duckdb.DuckDBPyConnection, sql: str, names: Sequence[str], batch: int = 10_000
) -> Iterator[dict[str, Any]]:
    """The rows of ``sql`` (built from a table module's constants) as column -> value, by
    ``names``, ``batch`` at a time; on ``con`` itself, not a cursor, so that its temporary
    tables are in reach."""
    con.execute(sql)
    yield from _dicts(con, names, batch)


def _dicts(
    result: duckdb.DuckDBPyConnection, names: Sequence[str], batch: int
) -> Iterator[dict[str, Any]]:
    """The rows of the statement ``result`` last ran, as column -> value, ``batch`` at a time."""
    while rows := result.fetchmany(batch):
        yield from (dict(zip(names, row, strict=True)) for row in rows)


def done_file(con: duckdb.DuckDBPyConnection, path: str) -> tuple[int, int, int] | None:
    """(bytes, modified_ns, works filtered out) of the file as it was ingested, or None if it
    never was."""
    row = con.execute(
        "SELECT bytes, modified_ns, filtered_out FROM bulk_files WHERE path = ?", [path]
    ).fetchone()
    return (int(row[0]), int(row[1]), int(row[2] or 0)) if row else None


def forget(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Drop what an earlier ingest of the file ``path`` wrote (its rows and its file row)."""
    for statement in _FORGET:
        con.execute(statement, [path])


def load(
    con: duckdb.DuckDBPyConnection, kind: str, data: Path, path: str, release: dt.date | None
) -> int:
    """Load a file of a kind DuckDB loads whole, in SQL, from ``data`` (its JSON Lines, not
    compressed), as the file ``path``. Returns its rows."""
    inserted = con.execute(_LOAD[kind], [path, release, str(data)]).fetchone()
    return int(inserted[0]) if inserted else 0


# The S2 citations an ingest keeps: every one, or those whose citing paper's S2 record is on
# arXiv (the papers a build can ask the reference list of); the others are counted. A citation
# without a citing ID is kept, so that the table's NOT NULL refuses the file as before. One read
# of the file counts them all and gathers the kept ones into lists, by citing ID modulo 256 (no
# list holds a whole file's): a fifth less CPU than a scan table holding a row for every one.
_KEPT_CITATION = "{" + ", ".join(f"'{c}': {c}" for c in COLUMNS["s2-citations"]) + "}"
_ON_ARXIV = (
    "SELECT TRY_CAST(record_id AS BIGINT) FROM bulk_records WHERE source = 's2' AND on_arxiv"
)
_CITATIONS_SCAN = (
    "CREATE OR REPLACE TEMP TABLE citations_scan AS SELECT count(*) AS read, "  # noqa: S608
    f"list({_KEPT_CITATION}) FILTER (WHERE keep) AS kept FROM "
    f"(SELECT *, (citingcorpusid IS NULL OR citingcorpusid IN ({_ON_ARXIV})) AS keep "
    f"FROM {reader(COLUMNS['s2-citations'])}) GROUP BY citingcorpusid % 256"
)
_CITATIONS_KEPT = (
    "INSERT INTO bulk_citations SELECT c.citingcorpusid, c.citedcorpusid, c.isinfluential, "
    "c.contexts, c.intents, ? AS file, ? AS release FROM "
    "(SELECT unnest(kept) AS c FROM citations_scan)"
)


def load_citations(
    con: duckdb.DuckDBPyConnection, data: Path, path: str, release: dt.date | None
) -> tuple[int, int]:
    """Load an S2 ``citations`` file from ``data`` (its JSON Lines, not compressed), as the file
    ``path``, keeping the citations of the papers whose S2 record is on arXiv (held already:
    the papers come first in an ingest). Returns (citations kept, citations filtered out)."""
    con.execute(_CITATIONS_SCAN, [str(data)])
    row = con.execute("SELECT sum(read) FROM citations_scan").fetchone()
    inserted = con.execute(_CITATIONS_KEPT, [path, release]).fetchone()
    con.execute("DROP TABLE citations_scan")
    kept = int(inserted[0]) if inserted else 0
    return kept, (int(row[0] or 0) if row else 0) - kept


def filtered_citations(
    con: duckdb.DuckDBPyConnection,
) -> list[tuple[str, dt.date | None, bool]]:
    """(path, release, stale) of the S2 citations files ingested with citations filtered out;
    ``stale``: an S2 papers file was ingested after it."""
    rows = con.execute(
        "SELECT path, release, ingested_at < (SELECT max(ingested_at) FROM bulk_files "
        "WHERE kind = 's2-papers') FROM bulk_files WHERE kind = 's2-citations' "
        "AND filtered_out > 0 ORDER BY path"
    ).fetchall()
    return [(str(p), r, bool(s)) for p, r, s in rows]


_STAGED = (
    "read_json(?, format = 'newline_delimited', columns = {'source': 'VARCHAR', "
    "'record_id': 'VARCHAR', 'paper': 'JSON', 'ids': 'VARCHAR[][]', 'primary_field': 'INTEGER', "
    "'on_arxiv': 'BOOLEAN', 'published': 'DATE', 'listed_references': 'INTEGER'})"
)
_STAGE = f"CREATE OR REPLACE TEMP TABLE staged AS SELECT * FROM {_STAGED}"  # noqa: S608
_STAGE_MORE = f"INSERT INTO staged SELECT * FROM {_STAGED}"  # noqa: S608


def stage_records(con: duckdb.DuckDBPyConnection, records: Path, *, more: bool = False) -> None:
    """Staged records (JSON Lines of source, record_id, paper, ids and the candidate filter's
    columns) into the temporary table ``staged``; ``more`` adds them to the rows there."""
    con.execute(_STAGE_MORE if more else _STAGE, [str(records)])


def write_staged(con: duckdb.DuckDBPyConnection, target: Path) -> None:
    """The rows of ``staged`` written to ``target`` (Parquet, not compressed: read once, soon),
    for ``stage_parquet`` to read on another connection."""
    con.execute("COPY staged TO ? (FORMAT parquet, COMPRESSION uncompressed)", [str(target)])


def stage_parquet(con: duckdb.DuckDBPyConnection, staged: Path) -> None:
    """The rows ``write_staged`` wrote, into the temporary table ``staged``."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE staged AS SELECT * FROM read_parquet(?)", [str(staged)]
    )


def load_staged(con: duckdb.DuckDBPyConnection, path: str, release: dt.date | None) -> int:
    """The records in ``staged`` in, as the file ``path``'s; a record already held from a newer
    release stays. Returns the records."""
    con.execute(
        "DELETE FROM staged s USING bulk_records b WHERE b.source = s.source "
        "AND b.record_id = s.record_id AND b.release > ?",
        [release],
    )
    con.execute(
        "INSERT OR REPLACE INTO bulk_records "
        "SELECT DISTINCT ON (source, record_id) source, record_id, paper, ? AS file, "
        "? AS release, primary_field, on_arxiv, published, listed_references FROM staged",
        [path, release],
    )
    con.execute(
        "INSERT OR REPLACE INTO bulk_ids SELECT DISTINCT ON (i[1], i[2], source) "
        "i[1], i[2], source, record_id FROM (SELECT source, record_id, unnest(ids) AS i "
        "FROM staged)"
    )
    row = con.execute("SELECT count(DISTINCT (source, record_id)) FROM staged").fetchone()
    con.execute("DROP TABLE staged")
    return int(row[0]) if row else 0


def record_file(con: duckdb.DuckDBPyConnection, file_row: Mapping[str, object]) -> None:
    """The file's row of ``bulk_files``: what makes a rerun skip it."""
    warehouse.upsert(con, "bulk_files", [dict(file_row)], ["path"])


def files(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Every file ingested: path, kind, release, rows, bytes, seconds, works filtered out."""
    return (
        con.cursor()
        .execute(
            "SELECT path, kind, release, rows, bytes, seconds, filtered_out FROM bulk_files "
            "ORDER BY path"
        )
        .fetchall()
    )


def records_by_id(
    con: duckdb.DuckDBPyConnection, source: str, typed: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(scheme, value) -> (the record's Paper JSON, its S2 abstract) for the IDs held."""
    if not typed:
        return {}
    cursor = con.cursor()
    rows = cursor.execute(
        "SELECT w.scheme, w.value, r.paper, a.abstract "
        "FROM (SELECT unnest(?) AS k) q "
        "JOIN bulk_ids w ON w.scheme = q.k[1] AND w.value = q.k[2] AND w.source = ? "
        "JOIN bulk_records r USING (source, record_id) "
        "LEFT JOIN bulk_abstracts a ON r.source = 's2' "
        "AND a.corpus_id = TRY_CAST(r.record_id AS BIGINT)",
        [[list(t) for t in typed], source],
    ).fetchall()
    return {(str(s), str(v)): (str(p), a) for s, v, p, a in rows}


def citations(con: duckdb.DuckDBPyConnection, corpus_id: int) -> list[tuple[Any, ...]] | None:
    """The S2 Datasets' citations of one citing paper, each with the cited paper's record:
    (cited corpus ID, influential, contexts, intents, Paper JSON or None, abstract). None when
    the release does not hold the citing paper at all, or when its citations may have been
    filtered out: some citations file was filtered (``load_citations``) and the paper's record
    is not on arXiv, or was written after the first such file (it may have become on arXiv
    since; an ingest of papers reads the filtered citations files again after them)."""
    cursor = con.cursor()
    held = cursor.execute(
        "SELECT r.on_arxiv, f.ingested_at, (SELECT min(ingested_at) FROM bulk_files "
        "WHERE kind = 's2-citations' AND filtered_out > 0) FROM bulk_records r "
        "LEFT JOIN bulk_files f ON f.path = r.file WHERE r.source = 's2' AND r.record_id = ?",
        [str(corpus_id)],
    ).fetchone()
    if held is None:
        return None
    on_arxiv, written, filtered_since = held
    if filtered_since is not None and not (on_arxiv and written and written < filtered_since):
        return None
    return cursor.execute(
        "SELECT c.cited_corpus_id, c.is_influential, c.contexts, c.intents, r.paper, a.abstract "
        "FROM bulk_citations c "
        "LEFT JOIN bulk_records r ON r.source = 's2' "
        "AND r.record_id = CAST(c.cited_corpus_id AS VARCHAR) "
        "LEFT JOIN bulk_abstracts a ON a.corpus_id = c.cited_corpus_id "
        "WHERE c.citing_corpus_id = ? ORDER BY c.cited_corpus_id NULLS LAST, c.contexts",
        [corpus_id],
    ).fetchall()


def newest_release(con: duckdb.DuckDBPyConnection, kind: str) -> dt.date | None:
    """The newest release of the files of ``kind`` ingested, or None when there are none."""
    # a cursor of its own: lineage's threads ask while the raw store reads the same connection
    cursor = con.cursor()
    row = cursor.execute("SELECT max(release) FROM bulk_files WHERE kind = ?", [kind]).fetchone()
    return row[0] if row else None


def candidate_works(
    con: duckdb.DuckDBPyConnection,
    field_ids: Sequence[int],
    start: dt.date,
    end: dt.date,
    min_references: int,
) -> list[str]:
    """The Paper JSON of the OpenAlex works a split's candidate filter takes (openalex.py's
    ``candidate_filter``), tested as OpenAlex tests it, by work ID."""
    rows = (
        con.cursor()
        .execute(
            "SELECT paper FROM bulk_records WHERE source = 'openalex' AND primary_field IN "
            "(SELECT unnest(?)) AND published BETWEEN ? AND ? AND on_arxiv "
            "AND coalesce(listed_references, 0) >= ? ORDER BY record_id",
            [list(field_ids), start, end, min_references],
        )
        .fetchall()
    )
    return [str(r[0]) for r in rows]
