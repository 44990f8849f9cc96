"""Replay answers a page of one size from stored pages of another: OpenAlex cursor pages of 2
joined into pages of 4, and every case where joining would be wrong refused (None), never cut."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import duckdb

from inspire_build import http
from inspire_build.sources import openalex, semanticscholar

PATH = "/works"
FILTER = ("filter", "publication_year:2025")
WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def store_page(
    con: duckdb.DuckDBPyConnection,
    cursor: str,
    ids: list[int],
    following: str | None,
    count: int = 5,
    *,
    per_page: int = 2,
) -> None:
    meta = {"count": count, "page": None, "per_page": per_page, "next_cursor": following}
    body = {"meta": meta, "results": [{"id": f"https://openalex.org/W{i}"} for i in ids]}
    save(con, [FILTER, ("per_page", str(per_page)), ("cursor", cursor)], body)


def save(con: duckdb.DuckDBPyConnection, params: list[tuple[str, str]], body: object) -> None:
    """One stored 200 answer of OpenAlex's /works for ``params``."""
    row = http.store_row(
        openalex.CODEC,
        openalex.CODEC.describe("GET", PATH, params, None),
        method="GET",
        url=f"https://api.openalex.org/works?{params[-1][0]}={params[-1][1]}",
        request_body=None,
        status=200,
        headers={},
        body=json.dumps(body).encode(),
        origin="test",
        fetched_at=WHEN,
    )
    http.ResponseStore(con).save([row])


def ask(con: duckdb.DuckDBPyConnection, cursor: str, per_page: int = 4) -> Any:
    params = [FILTER, ("per_page", str(per_page)), ("cursor", cursor)]
    described = openalex.CODEC.describe("GET", PATH, params, None)
    found = http.ResponseStore(con).lookup("openalex", described, openalex.PAGING)
    return None if found is None else found.json()


def five_in_pages_of_two(con: duckdb.DuckDBPyConnection) -> None:
    store_page(con, "*", [1, 2], "c2")
    store_page(con, "c2", [3, 4], "c4")
    store_page(con, "c4", [5], None)


def ids(page: Any) -> list[str]:
    return [r["id"].rsplit("W", 1)[1] for r in page["results"]]


def test_cursor_pages_of_two_answer_pages_of_four(con: duckdb.DuckDBPyConnection) -> None:
    five_in_pages_of_two(con)
    first = ask(con, "*")
    assert ids(first) == ["1", "2", "3", "4"] and first["meta"]["next_cursor"] == "c4"
    last = ask(con, "c4")
    assert ids(last) == ["5"] and last["meta"]["next_cursor"] is None
    assert first["meta"]["count"] == 5


def test_a_missing_page_or_an_overshoot_is_no_answer(con: duckdb.DuckDBPyConnection) -> None:
    store_page(con, "*", [1, 2], "c2")
    assert ask(con, "*") is None  # page c2 was never stored
    store_page(con, "c2", [3, 4], "c4")
    assert ask(con, "*", per_page=3) is None  # 4 items gathered; page 3 would start inside c2


def test_page_numbered_pages_never_end_a_list_early(con: duckdb.DuckDBPyConnection) -> None:
    body = {"meta": {"count": 5, "page": 1, "per_page": 2}, "results": [{"id": "W1"}, {"id": "W2"}]}
    save(con, [FILTER, ("per_page", "2"), ("page", "1")], body)
    assert ask(con, "*") is None  # 2 of 5 results and no cursor: not the whole list


def test_s2_pages_join_with_offset_and_next_by_hand() -> None:
    first = json.dumps({"offset": 20, "next": 40, "data": [1, 2]}).encode()
    assert semanticscholar.PAGING.split(first) == ([1, 2], "offset=40")
    joined = json.loads(semanticscholar.PAGING.join(first, [1, 2, 3], "offset=60"))
    assert joined == {"offset": 20, "data": [1, 2, 3], "next": 60}
    assert "next" not in json.loads(semanticscholar.PAGING.join(first, [1], None))
