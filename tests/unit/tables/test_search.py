"""tables/search.py: the bm25 index over papers, its search, and how many papers hold a word."""

from __future__ import annotations

import datetime as dt

import duckdb

from inspire_build import warehouse
from inspire_build.tables import search

NOW = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _papers(
    con: duckdb.DuckDBPyConnection, texts: list[tuple[str, str | None, str | None]]
) -> None:
    rows = [
        {"paper_id": p, "title": t, "abstract": a, "sources": ["openalex"], "updated_at": NOW}
        for p, t, a in texts
    ]
    warehouse.upsert(con, "papers", rows, ["paper_id"])


def test_search_ranks_by_bm25_and_breaks_ties_by_id(con: duckdb.DuckDBPyConnection) -> None:
    _papers(
        con,
        [
            ("p3", "Graph caches", "A cache over graph neighbourhoods."),
            ("p1", "Sharded indexes", "An index in shards."),
            ("p2", "Sharded indexes", "An index in shards."),
            ("p4", "Token pruning", None),
        ],
    )
    search.build_search_index(con)
    found = search.search(con, "sharded index", 10)
    assert [p for p, _ in found] == ["p1", "p2"]  # equal scores: in ID order
    assert found[0][1] == found[1][1] > 0
    assert search.search(con, "sharded index", 1) == found[:1]
    assert search.search(con, "quasar", 10) == []


def test_the_index_is_rebuilt_only_when_papers_changed(con: duckdb.DuckDBPyConnection) -> None:
    _papers(con, [("p1", "Sharded indexes", None)])
    search.build_search_index(con)
    assert [p for p, _ in search.search(con, "graph", 10)] == []
    signature = search._indexed[con]
    search.build_search_index(con)  # unchanged: the index stands
    assert search._indexed[con] == signature
    _papers(con, [("p2", "Graph caches", None)])
    search.build_search_index(con)
    assert search._indexed[con] != signature
    assert [p for p, _ in search.search(con, "graph", 10)] == ["p2"]


def test_document_counts_counts_papers_holding_each_word_whole(
    con: duckdb.DuckDBPyConnection,
) -> None:
    texts = [
        ("p1", "Sparse Retrieval", "Sparse-retrieval indexes."),
        ("p2", "Dense retrieval", None),
        ("p3", None, "Retrievals of graphs"),
    ]
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    rows = [
        {"paper_id": p, "title": t, "abstract": a, "sources": ["openalex"], "updated_at": now}
        for p, t, a in texts
    ]
    warehouse.upsert(con, "papers", rows, ["paper_id"])
    words = ["retrieval", "sparse", "graphs", "index", "sparse-retrieval", "zzz", "a b"]
    assert search.document_counts(con, [*words, "retrieval"]) == {
        "retrieval": 2,  # case folded; "Retrievals" is another word
        "sparse": 1,
        "graphs": 1,
        "index": 0,  # "indexes" is not it
        "sparse-retrieval": 1,
        "zzz": 0,
    }  # a repeated word counts once; one that is not a content word is left out
    assert search.document_counts(con, ["a b"]) == {}
