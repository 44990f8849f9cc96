"""The OpenAlex snapshot's works read in DuckDB: the filter that keeps only the works a build can
ask for, and the Paper records of the kept works, built in SQL from the works that are regular
enough for SQL to read them exactly as ``openalex.parse`` does.

One scan of a file (``scan``) tests every work and keeps the rest of its columns only when it is
kept. ``stage`` then writes the kept regular works' rows (the Paper JSON, its IDs and what the
candidate filter tests) into the temporary table ``staged``, set-based, and ``irregular`` gives
the other kept works whole, for ``parse`` to read as the API path does. A work is *regular* when
each field holds the type ``parse`` expects in the form SQL reads as it does: a W-id URL for its
ID and in ``referenced_works``; a ``https://doi.org/10.…/`` DOI of printable ASCII without
``%``; an arXiv DOI, or a first arXiv location whose landing page is an ``arxiv.org/abs|pdf``
URL, naming a valid new-style arXiv ID; an abstract index of unique words, each with a list of
integers; a ``YYYY-MM-DD`` date; and so on (``_REGULAR``). The rules are ``ids.py``'s and
``openalex.parse``'s, narrowed to forms on which both give the same value; tests hold them
equal (tests/unit/test_bulk_works.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import ids
from inspire_build.sources import openalex
from inspire_build.tables.bulk import COLUMNS, reader, rows_of

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

# A new-style arXiv ID (ids._ARXIV_NEW and _new_style_is_valid): YYMM from 0704 on, a
# four-digit number until 1412 and a five-digit one from 1501; the version is dropped.
MACROS = (
    "CREATE OR REPLACE TEMP MACRO bulk_arxiv_new(s) AS CASE WHEN "
    "regexp_full_match(s, '[0-9]{4}\\.[0-9]{4,5}(?:v[1-9][0-9]*)?') "
    "AND TRY_CAST(s[3:4] AS INTEGER) BETWEEN 1 AND 12 AND s[1:4] >= '0704' "
    "AND length(regexp_extract(s, '\\.([0-9]+)', 1)) = CASE WHEN s[1:2] >= '15' THEN 5 ELSE 4 END "
    "THEN s[1:4] || '.' || regexp_extract(s, '\\.([0-9]+)', 1) END"
)

_W = r"\"https://openalex\.org/W[1-9][0-9]*\""
_DAY = "json_extract_string(publication_date, '$')"
_INTEGER = "TRY_CAST(json_extract_string({0}, '$') AS BIGINT)"
_OPENALEX_URL = r"https://openalex\.org/(W[1-9][0-9]*)"
# ids.normalize_doi on a doi.org URL: unquoted (nothing to unquote without %) and case-folded.
_DOI_URL = r"https://doi\.org/(10\.[0-9]{4,9}/[!-$&-~]+)"
_ARXIV_DOI = ids.ARXIV_DOI_PREFIX
# ids._ARXIV_URL's plain forms (lower case, no www., no trailing slash).
_ARXIV_URL = r"https?://arxiv\.org/(?:abs|pdf)/([0-9]{4}\.[0-9]{4,5}(?:v[1-9][0-9]*)?)(?:\.pdf)?"
# An abstract_inverted_index as DuckDB writes a JSON value: words, each a list of integers.
_KEY, _INTS = r'"(?:[^"\\]|\\.)*"', r"-?[0-9]{1,18}(?:,-?[0-9]{1,18})*"
_INDEX = rf"\{{(?:{_KEY}:\[(?:{_INTS})?\](?:,{_KEY}:\[(?:{_INTS})?\])*)?\}}"
_TYPE = "({0} IS NULL OR json_type({0}) IN ({1}))"
# Each field parse reads holds the type it expects, in the form SQL reads as it does.
_REGULAR = " AND ".join(
    [
        *(_TYPE.format(c, "'NULL', 'VARCHAR'") for c in ("title", "display_name")),
        *(_TYPE.format(c, "'NULL', 'OBJECT'") for c in ("primary_topic", "primary_location")),
        *(_TYPE.format(c, "'NULL', 'ARRAY'") for c in ("topics", "authorships")),
        *(f"({c} IS NULL OR json_type({c}) = 'NULL' OR (json_type({c}) IN ('BIGINT', 'UBIGINT') "
          f"AND {_INTEGER.format(c)} IS NOT NULL))"
          for c in ("publication_year", "referenced_works_count")),
        f"(publication_date IS NULL OR json_type(publication_date) = 'NULL' "
        f"OR (json_type(publication_date) = 'VARCHAR' AND ({_DAY} = '' "
        f"OR (regexp_full_match({_DAY}, '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}') "
        f"AND NOT starts_with({_DAY}, '0000') AND TRY_CAST({_DAY} AS DATE) IS NOT NULL))))",
        f"(referenced_works IS NULL OR json_type(referenced_works) = 'NULL' OR "
        f"regexp_full_match(referenced_works::VARCHAR, '\\[(?:{_W}(?:,{_W})*)?\\]'))",
        "json_type(id) = 'VARCHAR' AND openalex_id <> ''",
        "(doi IS NULL OR json_type(doi) = 'NULL' OR (json_type(doi) = 'VARCHAR' "
        "AND doi_value <> '' AND (NOT starts_with(doi_value, $arxiv_doi) "
        "OR arxiv_from_doi IS NOT NULL)))",
        "(arxiv_from_doi IS NOT NULL OR arxiv_place IS NULL "
        "OR coalesce(json_type(arxiv_place, '$.landing_page_url'), 'NULL') = 'NULL' "
        "OR arxiv_from_place IS NOT NULL)",
        "(abstract_inverted_index IS NULL OR json_type(abstract_inverted_index) = 'NULL' OR "
        f"(json_type(abstract_inverted_index) = 'OBJECT' AND regexp_full_match("
        f"abstract_inverted_index::VARCHAR, '{_INDEX}') AND len(words) = len(list_distinct(words)) "
        "AND list_bool_and(list_transform(places, lambda p: p IS NOT NULL)) IS NOT false))",
    ]
)  # fmt: skip
# A first pass reads the IDs and the abstract index's words and places of every kept work.
_IDS = (
    f"regexp_extract(json_extract_string(id, '$'), '^{_OPENALEX_URL}$', 1) AS openalex_id, "
    f"lower(regexp_extract(json_extract_string(doi, '$'), '^{_DOI_URL}$', 1)) AS doi_value, "
    "list_filter(CASE WHEN json_type(locations) = 'ARRAY' THEN json_extract(locations, '$[*]') "
    "END, lambda x: json_type(x) = 'OBJECT' AND json_type(x, '$.source') = 'OBJECT' "
    "AND json_type(x, '$.source.id') = 'VARCHAR' "
    f"AND ends_with(json_extract_string(x, '$.source.id'), '{openalex.ARXIV_SOURCE}'))[1] "
    "AS arxiv_place, "
    "CASE WHEN json_type(abstract_inverted_index) = 'OBJECT' "
    "THEN json_keys(abstract_inverted_index) END AS words, "
    "CASE WHEN json_type(abstract_inverted_index) = 'OBJECT' "
    "THEN list_transform(json_extract(abstract_inverted_index, '$.*'), "
    "lambda v: TRY_CAST(v AS BIGINT[])) END AS places"
)
_ARXIV = (
    "CASE WHEN starts_with(doi_value, $arxiv_doi) "
    "THEN bulk_arxiv_new(doi_value[length($arxiv_doi) + 1:]) END AS arxiv_from_doi, "
    "bulk_arxiv_new(regexp_extract(CASE WHEN json_type(arxiv_place, '$.landing_page_url') = "
    "'VARCHAR' THEN json_extract_string(arxiv_place, '$.landing_page_url') END, "
    f"'^{_ARXIV_URL}$', 1)) AS arxiv_from_place"
)
# The strings at a path of a list (others dropped, as parse drops them): read by the path at
# once where all of them are strings, item by item where some are not.
_STRINGS = (
    "CASE WHEN list_bool_and(list_transform(json_type({0}, '{1}'), lambda t: t = 'VARCHAR')) "
    "IS NOT false THEN coalesce(json_extract_string({0}, '{1}'), []) "
    "ELSE list_transform(list_filter(json_extract({0}, '{1}'), "
    "lambda x: json_type(x) = 'VARCHAR'), lambda x: json_extract_string(x, '$')) END"
)
_TOPIC = "json_extract_string(primary_topic, '$.field.display_name')"
_VENUE = "json_extract_string(primary_location, '$.source.display_name')"
_COUNT = _INTEGER.format("referenced_works_count")
_YEAR = _INTEGER.format("publication_year")
# The words in the order of their places (pyalex's invert_abstract: a stable sort by place).
_ABSTRACT = (
    "nullif(array_to_string(list_transform(list_sort(flatten(list_transform(words, "
    "lambda w, k: list_transform(places[k], lambda p: {'p': p, 'k': k, 'w': w})))), "
    "lambda x: x.w), ' '), '')"
)
# The values of a regular work's Paper fields (`topics` in the order parse meets them).
_VALUES = (
    "coalesce(nullif(json_extract_string(title, '$'), ''), "
    "nullif(json_extract_string(display_name, '$'), '')) AS v_title, "
    f"{_ABSTRACT} AS v_abstract, "
    f"CASE WHEN {_YEAR} BETWEEN 1000 AND 2100 THEN {_YEAR} END AS v_year, "
    f"CASE WHEN {_DAY} <> '' THEN TRY_CAST({_DAY} AS DATE) END AS published, "
    "nullif(CASE WHEN json_type(primary_location, '$.source.display_name') = 'VARCHAR' "
    f"THEN {_VENUE} END, '') AS v_venue, "
    f"{_STRINGS.format('authorships', '$[*].author.display_name')} AS v_authors, "
    "CASE WHEN json_type(primary_topic, '$.field.display_name') = 'VARCHAR' "
    f"THEN [{_TOPIC}] ELSE [] END || {_STRINGS.format('topics', '$[*].field.display_name')} "
    "AS v_topics, "
    "replace(referenced_works::VARCHAR, '\"https://openalex.org/', '\"openalex:')::JSON "
    "AS v_cited, "
    f"CASE WHEN {_COUNT} >= 0 THEN {_COUNT} "
    "ELSE nullif(json_array_length(referenced_works), 0) END AS listed_references, "
    "CASE WHEN arxiv_from_doi IS NULL THEN doi_value END AS doi_id, "
    "coalesce(arxiv_from_doi, arxiv_from_place) AS arxiv_id"
)
# A Paper's JSON, its fields in the model's order (Paper.model_dump_json).
_PAPER = (
    "json_object('source', 'openalex', 'ids', json_object('openalex', openalex_id, "
    "'doi', doi_id, 'arxiv', arxiv_id, 's2', NULL, 'corpus_id', NULL), 'title', v_title, "
    "'abstract', v_abstract, 'year', v_year, 'publication_date', published, "
    "'date_precision', CASE WHEN published IS NOT NULL THEN 'day' END, 'venue', v_venue, "
    "'authors', v_authors, "
    "'fields', list_filter(v_topics, lambda f, i: list_position(v_topics, f) = i), "
    "'reference_count', listed_references, 'referenced_works', v_cited, 'versions', NULL, "
    "'problems', []::VARCHAR[])"
)
_IDS_OF = (
    "list_filter([['openalex', openalex_id], ['doi', doi_id], ['arxiv', arxiv_id]], "
    "lambda i: i[2] IS NOT NULL)"
)
# Built from this module's constants: the kept works with their IDs, abstract index and whether
# they are regular, read once for what follows.
KEPT = (
    f"CREATE OR REPLACE TEMP TABLE works_kept AS SELECT *, {_REGULAR} AS regular FROM "  # noqa: S608
    f"(SELECT *, {_ARXIV} FROM (SELECT *, {_IDS} FROM works_scan WHERE keep))"
)
_WHOLE = "json_object(" + ", ".join(f"'{name}', {name}" for name in _WORKS) + ")::VARCHAR"
# The staged rows (bulk_records' and bulk_ids' columns) of the kept regular works; the other
# kept works whole; and every kept work in the file's order (for tests).
STAGE = (
    "CREATE OR REPLACE TEMP TABLE staged AS SELECT 'openalex' AS source, openalex_id AS record_id, "  # noqa: S608
    f"{_PAPER} AS paper, {_IDS_OF} AS ids, primary_field, on_arxiv, published, listed_references "
    f"FROM (SELECT *, {_VALUES} FROM works_kept WHERE regular)"
)
IRREGULAR = f"SELECT primary_field, on_arxiv, {_WHOLE} AS work FROM works_kept WHERE NOT regular"  # noqa: S608
PAPERS = (
    f"SELECT primary_field, on_arxiv, CASE WHEN regular THEN {_PAPER} END AS paper, "  # noqa: S608
    f"CASE WHEN NOT regular THEN {_WHOLE} END AS work FROM (SELECT *, {_VALUES} FROM works_kept)"
)
_BOUND = {"arxiv_doi": _ARXIV_DOI}


def scan(
    con: duckdb.DuckDBPyConnection, path: Path, fields: Sequence[int] | None
) -> tuple[int, int]:
    """Test every work of ``path`` (JSON Lines, not compressed) and hold the kept ones (every
    one when ``fields`` is None): returns (works filtered out, works read)."""
    con.execute(MACROS)
    con.execute(SCAN, {"path": str(path), "keep_all": fields is None, "fields": list(fields or [])})
    row = con.execute(FILTERED).fetchone()
    con.execute(KEPT, _BOUND)
    con.execute("DROP TABLE works_scan")
    return (int(row[0]), int(row[1])) if row else (0, 0)


def stage(con: duckdb.DuckDBPyConnection) -> None:
    """The last ``scan``'s kept regular works, as rows of the temporary table ``staged``."""
    con.execute(STAGE)


def irregular(con: duckdb.DuckDBPyConnection, batch: int = 10_000) -> Iterator[dict[str, Any]]:
    """The last ``scan``'s kept works that are not regular: ``primary_field``, ``on_arxiv`` and
    the ``work`` whole (JSON text of the columns read), ``batch`` at a time."""
    yield from rows_of(con, IRREGULAR, ("primary_field", "on_arxiv", "work"), batch)


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the last ``scan``'s kept works (the rows ``stage`` wrote stay in ``staged``)."""
    con.execute("DROP TABLE IF EXISTS works_kept")


def papers(con: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    """Every kept work of the last ``scan``, in order: ``primary_field``, ``on_arxiv``, and
    ``paper`` (the Paper JSON ``stage`` writes) for a regular work, else ``work`` (what
    ``irregular`` gives)."""
    yield from rows_of(con, PAPERS, ("primary_field", "on_arxiv", "paper", "work"), 10_000)
