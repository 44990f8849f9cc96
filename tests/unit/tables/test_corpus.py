"""tables/corpus.py: the corpus replaced with its index, and searched as of a cutoff. (The
scores computed by hand are in tests/unit/env/test_backends.py.)"""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from inspire_build.errors import WarehouseError
from inspire_build.tables import corpus, search

ADDED = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _work(paper_id: str, title: str, public_by: dt.date) -> dict[str, object]:
    return {
        "paper_id": paper_id,
        "title": title,
        "abstract": None,
        "year": public_by.year,
        "authors": [],
        "first_public_date": public_by,
        "date_precision": "day",
        "first_public_source": "openalex",
        "public_by": public_by,
        "records": 1,
        "origin": "test",
        "added_at": ADDED,
    }


def _id(paper_id: str) -> dict[str, object]:
    scheme, value = paper_id.split(":")
    return {"scheme": scheme, "value": value, "paper_id": paper_id}


def test_replace_corpus_replaces_every_work_and_its_ids(con: duckdb.DuckDBPyConnection) -> None:
    old = _work("openalex:W1", "Quark gluon plasma", dt.date(2020, 1, 1))
    corpus.replace_corpus(con, [old], [_id("openalex:W1")])
    new = [
        _work("openalex:W2", "Quark lepton", dt.date(2021, 1, 1)),
        _work("openalex:W3", "Quark quarks", dt.date(2030, 1, 1)),
    ]
    corpus.replace_corpus(con, new, [_id("openalex:W2"), _id("openalex:W3")])
    assert con.execute("SELECT paper_id FROM corpus ORDER BY 1").fetchall() == [
        ("openalex:W2",),
        ("openalex:W3",),
    ]
    assert con.execute("SELECT paper_id FROM corpus_ids ORDER BY 1").fetchall() == [
        ("openalex:W2",),
        ("openalex:W3",),
    ]
    found = corpus.search_corpus(con, "quarks", 10, dt.date(2025, 1, 1))
    assert [(p, d, t, y) for p, _, d, t, y in found] == [
        ("openalex:W2", dt.date(2021, 1, 1), "Quark lepton", 2021)
    ]  # stemmed; W1 is gone, W3 is after the cutoff
    later = corpus.search_corpus(con, "quarks", 10, dt.date(2031, 1, 1))
    assert [p for p, *_ in later] == ["openalex:W3", "openalex:W2"]


def test_searching_a_corpus_with_no_index_says_how_to_fill_it(
    con: duckdb.DuckDBPyConnection,
) -> None:
    search.load_fts(con)
    with pytest.raises(WarehouseError, match="inspire corpus build"):
        corpus.search_corpus(con, "quark", 10, dt.date(2025, 1, 1))
