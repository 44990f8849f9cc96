"""The OpenAlex snapshot's works read in DuckDB: the filter that keeps only the works a build can
ask for, and the fields ``openalex.parse`` reads, extracted in SQL from the works that are
regular enough for SQL to read them exactly as ``parse`` does.

One scan of a file (``scan``) tests every work and keeps the rest of its columns only when it is
kept; ``kept`` then gives each kept work's fields. A work is *regular* when each field holds the
type ``parse`` expects in the form SQL can read (a W-id URL in ``referenced_works``, a
non-negative integer list per abstract word, a ``YYYY-MM-DD`` date, ...); for a regular work the
SQL values are the ones ``parse`` gives, and the IDs (DOI and arXiv normalisation) are left to
``parse`` itself. Any other work comes back whole, for ``parse`` to read as the API path does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb

from inspire_build.sources import openalex
from inspire_build.tables.bulk import COLUMNS, reader

_WORKS = list(COLUMNS["openalex-works"])

# What a split's candidate filter tests, as OpenAlex's filter reads it (bulk.work_facets is the
# same in Python): the primary topic's field number, and a location whose source is arXiv's.
_FACETS = (
    "TRY_CAST(regexp_extract(json_extract_string(primary_topic, '$.field.id'), "
    "'/?([0-9]+)$', 1) AS INTEGER) AS primary_field, "
    "coalesce(list_bool_or(list_transform(json_extract_string(locations, '$[*].source.id'), "
    f"lambda s: ends_with(s, '{openalex.ARXIV_SOURCE}'))), false) AS on_arxiv"
)
# A work is kept when everything is, when it is on arXiv, or when its primary topic's field is
# one of the build's (the candidates' field, and the field of most works they cite).
_KEEP = "($keep_all OR on_arxiv OR coalesce(list_contains($fields, primary_field), false)) AS keep"
_HELD = ", ".join(f"CASE WHEN keep THEN {name} END AS {name}" for name in _WORKS)
_READ = reader(COLUMNS["openalex-works"], "$path")
# Built from this module's constants; the path and the filter's values are bound.
SCAN = f"CREATE OR REPLACE TEMP TABLE works_scan AS SELECT primary_field, on_arxiv, {_KEEP}, {_HELD} FROM (SELECT *, {_FACETS} FROM {_READ})"  # noqa: S608, E501
FILTERED = "SELECT count(*) FILTER (WHERE NOT keep), count(*) FROM works_scan"

_W = r"\"https://openalex\.org/W[1-9][0-9]*\""
_DAY = "json_extract_string(publication_date, '$')"
_INTEGER = "TRY_CAST(json_extract_string({0}, '$') AS BIGINT)"
# Each field parse reads here holds the type it expects, in the form SQL reads as it does.
_REGULAR = " AND ".join(
    [
        *(f"({c} IS NULL OR json_type({c}) = 'VARCHAR')" for c in ("title", "display_name")),
        *(f"({c} IS NULL OR json_type({c}) = 'OBJECT')" for c in ("primary_topic",
                                                                  "primary_location")),
        *(f"({c} IS NULL OR json_type({c}) = 'ARRAY')" for c in ("topics", "authorships")),
        *(f"({c} IS NULL OR (json_type({c}) IN ('BIGINT', 'UBIGINT') "
          f"AND {_INTEGER.format(c)} IS NOT NULL))"
          for c in ("publication_year", "referenced_works_count")),
        f"(publication_date IS NULL OR (json_type(publication_date) = 'VARCHAR' AND ({_DAY} = '' "
        f"OR (regexp_full_match({_DAY}, '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}') "
        f"AND NOT starts_with({_DAY}, '0000') AND TRY_CAST({_DAY} AS DATE) IS NOT NULL))))",
        f"(referenced_works IS NULL OR regexp_full_match(referenced_works::VARCHAR, "
        f"'\\[(?:{_W}(?:,{_W})*)?\\]'))",
    ]
)  # fmt: skip
_STRINGS = (
    "coalesce(list_transform(list_filter(json_extract({0}, '{1}'), "
    "lambda x: json_type(x) = 'VARCHAR'), lambda x: json_extract_string(x, '$')), [])"
)
_TOPIC = "json_extract_string(primary_topic, '$.field.display_name')"
_VENUE = "json_extract_string(primary_location, '$.source.display_name')"
_COUNT = _INTEGER.format("referenced_works_count")
_YEAR = _INTEGER.format("publication_year")
# The fields of a regular work, as the JSON of the Paper's fields (`fields` in the order parse
# meets them, repeats and all: the caller drops the repeats).
_FIELDS = (
    "json_object("
    "'title', coalesce(nullif(json_extract_string(title, '$'), ''), "
    "nullif(json_extract_string(display_name, '$'), '')), "
    f"'year', CASE WHEN {_YEAR} BETWEEN 1000 AND 2100 THEN {_YEAR} END, "
    f"'publication_date', CASE WHEN {_DAY} <> '' THEN TRY_CAST({_DAY} AS DATE) END, "
    "'venue', nullif(CASE WHEN json_type(primary_location, '$.source.display_name') = 'VARCHAR' "
    f"THEN {_VENUE} END, ''), "
    "'authors', " + _STRINGS.format("authorships", "$[*].author.display_name") + ", "
    "'fields', CASE WHEN json_type(primary_topic, '$.field.display_name') = 'VARCHAR' "
    f"THEN [{_TOPIC}] ELSE [] END || " + _STRINGS.format("topics", "$[*].field.display_name") + ", "
    "'referenced_works', replace(referenced_works::VARCHAR, "
    "'\"https://openalex.org/', '\"openalex:')::JSON, "
    f"'reference_count', CASE WHEN {_COUNT} >= 0 THEN {_COUNT} "
    "ELSE nullif(json_array_length(referenced_works), 0) END)::VARCHAR"
)
_NAMED = ("id", "doi", "locations", "abstract_inverted_index")
_WORK = (
    "CASE WHEN regular THEN json_object("
    + ", ".join(f"'{name}', {name}" for name in _NAMED)
    + ") ELSE json_object("
    + ", ".join(f"'{name}', {name}" for name in _WORKS)
    + ") END::VARCHAR"
)
# Built from this module's constants.
KEPT = f"SELECT primary_field, on_arxiv, {_WORK} AS work, CASE WHEN regular THEN {_FIELDS} END AS fields FROM (SELECT *, {_REGULAR} AS regular FROM works_scan WHERE keep)"  # noqa: S608, E501
NAMES = ("primary_field", "on_arxiv", "work", "fields")


def scan(
    con: duckdb.DuckDBPyConnection, path: Path, fields: Sequence[int] | None
) -> tuple[int, int]:
    """Test every work of ``path`` and hold the kept ones (every one when ``fields`` is None):
    returns (works filtered out, works read)."""
    con.execute(SCAN, {"path": str(path), "keep_all": fields is None, "fields": list(fields or [])})
    row = con.execute(FILTERED).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def kept(con: duckdb.DuckDBPyConnection, batch: int = 10_000) -> Iterator[dict[str, Any]]:
    """The kept works of the last ``scan`` (a temporary table: this connection's own), as
    column -> value, ``batch`` at a time."""
    con.execute(KEPT)
    while rows := con.fetchmany(batch):
        yield from (dict(zip(NAMES, row, strict=True)) for row in rows)
