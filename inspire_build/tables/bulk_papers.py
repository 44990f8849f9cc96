"""The S2 Datasets' ``papers`` read in DuckDB: the Paper records of the papers regular enough
for SQL to read them exactly as ``semanticscholar.parse_paper`` does (through
``bulk.s2_paper``), built set-based; the others go whole to that parser.

A paper is *regular* when each field it reads holds the type ``parse_paper`` expects, in the
form SQL reads as it does (``_REGULAR``): a positive integer ``corpusid``; a ``url`` whose
``/paper/`` part ends in a 40-hex paperId; ``externalids`` an object whose ``ArXiv`` is a valid
new-style arXiv ID and whose ``DOI`` is a bare DOI of printable ASCII without ``%``, not
arXiv's; integers for ``year`` and ``referencecount``; a ``YYYY-MM-DD`` date; and so on. The
rules are ``ids.py``'s and ``parse_paper``'s narrowed to forms on which both give the same
value; tests hold them equal (tests/unit/tables/test_bulk_papers.py). The staged rows say
whether the paper is on arXiv (has an arXiv ID): the citations of those are the ones a filtered
ingest keeps (``tables.bulk.load_citations``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import ids
from inspire_build.tables.bulk import COLUMNS, reader, rows_of
from inspire_build.tables.bulk_works import MACROS

_PAPERS = list(COLUMNS["s2-papers"])
_READ = reader(COLUMNS["s2-papers"], "$path")

_TEXT = "json_extract_string({0}, '$')"
_EXTERNAL = "json_extract_string(externalids, '$.{0}')"
_INTEGER = "TRY_CAST(json_extract_string({0}, '$') AS BIGINT)"
_ABSENT = "({0} IS NULL OR json_type({0}) = 'NULL')"
_DAY = _TEXT.format("publicationdate")
# A list of names, or of objects naming it under a key: _names in semanticscholar.py (other
# items are dropped there too). Where every item is an object naming it (the Datasets' own
# form), one JSON path reads them all: a third of the CPU of reading item by item.
_EACH_NAME = (
    "coalesce(list_transform(list_filter(json_extract({0}, '$[*]'), lambda x: json_type(x) = "
    "'VARCHAR' OR (json_type(x) = 'OBJECT' AND json_type(x, '$.{1}') = 'VARCHAR')), lambda x: "
    "CASE WHEN json_type(x) = 'VARCHAR' THEN json_extract_string(x, '$') "
    "ELSE json_extract_string(x, '$.{1}') END), [])"
)
_NAMES = (
    "CASE WHEN len(list_filter(json_type({0}, '$[*].{1}'), lambda t: t = 'VARCHAR')) "
    "= json_array_length({0}) THEN json_extract_string({0}, '$[*].{1}') "
    f"ELSE {_EACH_NAME} END"
)
# The IDs as the Datasets give them: the corpus ID, the paperId (the url's last part), the
# external arXiv ID and DOI.
_IDS = (
    f"CASE WHEN json_type(corpusid) IN ('BIGINT', 'UBIGINT') THEN {_INTEGER.format('corpusid')} "
    "END AS v_corpus, "
    f"CASE WHEN json_type(url) = 'VARCHAR' AND contains({_TEXT.format('url')}, '/paper/') "
    f"THEN regexp_extract({_TEXT.format('url')}, '[^/]*$') END AS url_tail, "
    f"CASE WHEN json_type(externalids, '$.ArXiv') = 'VARCHAR' THEN {_EXTERNAL.format('ArXiv')} "
    "END AS arxiv_raw, "
    f"CASE WHEN json_type(externalids, '$.DOI') = 'VARCHAR' THEN {_EXTERNAL.format('DOI')} "
    "END AS doi_raw"
)
_TYPE = "({0} IS NULL OR json_type({0}) IN ({1}))"
# Each field parse_paper reads holds the type it expects, in the form SQL reads as it does.
_REGULAR = " AND ".join(
    [
        "coalesce(v_corpus > 0, false)",
        f"({_ABSENT.format('url')} OR (json_type(url) = 'VARCHAR' AND (url_tail IS NULL OR "
        "regexp_full_match(url_tail, '[0-9a-fA-F]{40}'))))",
        _TYPE.format("externalids", "'NULL', 'OBJECT'"),
        "(coalesce(json_type(externalids, '$.ArXiv'), 'NULL') = 'NULL' "
        "OR bulk_arxiv_new(arxiv_raw) IS NOT NULL)",
        "(coalesce(json_type(externalids, '$.DOI'), 'NULL') = 'NULL' OR "
        "(regexp_full_match(doi_raw, '10\\.[0-9]{4,9}/[!-$&-~]+') "
        f"AND NOT starts_with(lower(doi_raw), '{ids.ARXIV_DOI_PREFIX}')))",
        *(_TYPE.format(c, "'NULL', 'VARCHAR'") for c in ("title", "venue")),
        *(_TYPE.format(c, "'NULL', 'ARRAY'") for c in ("authors", "s2fieldsofstudy")),
        *(f"({_ABSENT.format(c)} OR (json_type({c}) IN ('BIGINT', 'UBIGINT') "
          f"AND {_INTEGER.format(c)} IS NOT NULL))" for c in ("year", "referencecount")),
        f"({_ABSENT.format('publicationdate')} OR (json_type(publicationdate) = 'VARCHAR' "
        f"AND ({_DAY} = '' OR (regexp_full_match({_DAY}, '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}') "
        f"AND NOT starts_with({_DAY}, '0000') AND TRY_CAST({_DAY} AS DATE) IS NOT NULL))))",
    ]
)  # fmt: skip
_YEAR = _INTEGER.format("year")
_COUNT = _INTEGER.format("referencecount")
# The values of a regular paper's Paper fields.
_VALUES = (
    f"nullif({_TEXT.format('title')}, '') AS v_title, "
    f"nullif({_TEXT.format('venue')}, '') AS v_venue, "
    f"CASE WHEN {_YEAR} BETWEEN 1000 AND 2100 THEN {_YEAR} END AS v_year, "
    f"CASE WHEN {_DAY} <> '' THEN TRY_CAST({_DAY} AS DATE) END AS v_day, "
    f"CASE WHEN {_COUNT} >= 0 THEN {_COUNT} END AS v_count, "
    f"{_NAMES.format('authors', 'name')} AS v_authors, "
    f"{_NAMES.format('s2fieldsofstudy', 'category')} AS v_fields, "
    "lower(doi_raw) AS doi_id, bulk_arxiv_new(arxiv_raw) AS arxiv_id, "
    "CASE WHEN regexp_full_match(url_tail, '[0-9a-fA-F]{40}') THEN lower(url_tail) END AS s2_id, "
    "v_corpus::VARCHAR AS corpus_id"
)
# A Paper's JSON, its fields in the model's order (Paper.model_dump_json).
_PAPER = (
    "json_object('source', 's2', 'ids', json_object('openalex', NULL, 'doi', doi_id, "
    "'arxiv', arxiv_id, 's2', s2_id, 'corpus_id', corpus_id), 'title', v_title, "
    "'abstract', NULL, 'year', v_year, 'publication_date', v_day, 'date_precision', "
    "CASE WHEN v_day IS NOT NULL THEN 'day' WHEN v_year IS NOT NULL THEN 'year' END, "
    "'venue', v_venue, 'authors', v_authors, "
    "'fields', list_filter(v_fields, lambda f, i: list_position(v_fields, f) = i), "
    "'reference_count', v_count, 'referenced_works', NULL, 'versions', NULL, "
    "'problems', []::VARCHAR[])"
)
_IDS_OF = (
    "list_filter([['doi', doi_id], ['arxiv', arxiv_id], ['s2', s2_id], ['corpusid', corpus_id]], "
    "lambda i: i[2] IS NOT NULL)"
)
# Built from this module's constants; the file's path is bound.
SCAN = (
    "CREATE OR REPLACE TEMP TABLE papers_read AS SELECT *, "  # noqa: S608
    f"{_REGULAR} AS regular FROM (SELECT *, {_IDS} FROM {_READ})"
)
STAGE = (
    "CREATE OR REPLACE TEMP TABLE staged AS SELECT 's2' AS source, corpus_id AS record_id, "  # noqa: S608
    f"{_PAPER} AS paper, {_IDS_OF} AS ids, NULL::INTEGER AS primary_field, "
    "arxiv_id IS NOT NULL AS on_arxiv, NULL::DATE AS published, "
    f"NULL::INTEGER AS listed_references FROM (SELECT *, {_VALUES} FROM papers_read WHERE regular)"
)
_AS_TEXT = ", ".join(f"{name}::VARCHAR AS {name}" for name in _PAPERS)
IRREGULAR = f"SELECT {_AS_TEXT} FROM papers_read WHERE NOT regular"  # noqa: S608
PAPERS = (
    f"SELECT CASE WHEN regular THEN {_PAPER} END AS paper, {_AS_TEXT} "  # noqa: S608
    f"FROM (SELECT *, {_VALUES} FROM papers_read)"
)


def scan(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Read the papers of ``path`` (JSON Lines, not compressed) and tell the regular ones;
    returns the papers read."""
    con.execute(MACROS)
    con.execute(SCAN, {"path": str(path)})
    row = con.execute("SELECT count(*) FROM papers_read").fetchone()
    return int(row[0]) if row else 0


def stage(con: duckdb.DuckDBPyConnection) -> None:
    """The last ``scan``'s regular papers, as rows of the temporary table ``staged``."""
    con.execute(STAGE)


def irregular(con: duckdb.DuckDBPyConnection, batch: int = 10_000) -> Iterator[dict[str, Any]]:
    """The last ``scan``'s papers that are not regular, their columns as JSON text (None where
    the line has no such key), ``batch`` at a time."""
    yield from rows_of(con, IRREGULAR, _PAPERS, batch)


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the last ``scan``'s papers (the rows ``stage`` wrote stay in ``staged``)."""
    con.execute("DROP TABLE IF EXISTS papers_read")


def papers(con: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    """Every paper of the last ``scan``, in order: ``paper`` (the Paper JSON ``stage`` writes,
    None for an irregular one) and the columns as JSON text."""
    yield from rows_of(con, PAPERS, ["paper", *_PAPERS], 10_000)
