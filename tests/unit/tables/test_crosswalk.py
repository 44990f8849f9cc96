"""tables/crosswalk.py: the ID crosswalk as typed IDs, and one scheme's values looked up."""

from __future__ import annotations

import duckdb

from inspire_build import warehouse
from inspire_build.ids import PaperId, Scheme
from inspire_build.tables import crosswalk


def _ids(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, str]]) -> None:
    warehouse.upsert(
        con,
        "paper_ids",
        [{"scheme": s, "value": v, "paper_id": p, "source": "openalex"} for s, v, p in rows],
        ["scheme", "value"],
    )


def test_the_crosswalk_types_every_id_and_skips_an_unknown_scheme(
    con: duckdb.DuckDBPyConnection,
) -> None:
    assert crosswalk.crosswalk(con) == {}
    _ids(
        con,
        [
            ("openalex", "W1", "arxiv:2001.00001"),
            ("arxiv", "2001.00001", "arxiv:2001.00001"),
            ("doi", "10.1/x", "openalex:W2"),
            ("isbn", "978-0", "openalex:W2"),  # no such scheme: left out, not an error
        ],
    )
    assert crosswalk.crosswalk(con) == {
        PaperId(Scheme.OPENALEX, "W1"): "arxiv:2001.00001",
        PaperId(Scheme.ARXIV, "2001.00001"): "arxiv:2001.00001",
        PaperId(Scheme.DOI, "10.1/x"): "openalex:W2",
    }


def test_lookup_ids_answers_the_values_of_one_scheme_it_holds(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _ids(con, [("openalex", "W1", "openalex:W1"), ("s2", "W3", "openalex:W3")])
    assert crosswalk.lookup_ids(con, "openalex", ["W1", "W3", "W9"]) == {"W1": "openalex:W1"}
    assert crosswalk.lookup_ids(con, "openalex", []) == {}
