"""The snapshot works read in DuckDB (tables/bulk_works.py): the filter keeps the works on arXiv
or of the build's fields and counts the rest, and every kept work is the Paper
``openalex.parse`` gives, whether SQL read its fields or the work was irregular and went to
``parse`` whole."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inspire_build import bulk
from inspire_build.config import SplitConfig
from inspire_build.sandbox import server, world
from inspire_build.sources import openalex
from inspire_build.tables import bulk_works

ARXIV = {"source": {"id": f"https://openalex.org/{openalex.ARXIV_SOURCE}"},
         "landing_page_url": "https://arxiv.org/abs/2301.00001v2"}  # fmt: skip
JOURNAL = {"source": {"id": "https://openalex.org/S1", "display_name": "J"}}


def _work(number: int, field: int, places: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"https://openalex.org/W{number}",
        "primary_topic": {"field": {"id": f"https://openalex.org/fields/{field}",
                                    "display_name": str(field)}},
        "locations": places,
        "publication_date": "2025-03-04",
    }  # fmt: skip


def _kept(path: Path, fields: tuple[int, ...] | None) -> tuple[int, list[dict[str, Any]]]:
    con = duckdb.connect()
    filtered, read = bulk_works.scan(con, path, fields)
    rows = list(bulk_works.kept(con))
    assert read == filtered + len(rows)
    return filtered, rows


def test_the_filter_keeps_arxiv_and_the_builds_fields_and_counts_the_rest(tmp_path: Path) -> None:
    works = [
        _work(1, 17, [JOURNAL, ARXIV]),  # a candidate: Computer Science, on arXiv
        _work(2, 17, [JOURNAL]),  # Computer Science, not on arXiv
        _work(3, 27, [ARXIV]),  # Medicine, on arXiv
        _work(4, 27, [JOURNAL]),  # Medicine, not on arXiv: no build asks for it
        {"id": "https://openalex.org/W5", "locations": "not a list"},  # nothing to keep it
    ]
    path = tmp_path / "part_000.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(w) + "\n" for w in works).encode()))
    filtered, rows = _kept(path, (17,))
    assert filtered == 2
    papers = [bulk.openalex_work(r) for r in rows]
    assert [p.ids.openalex for p in papers] == ["W1", "W2", "W3"]
    assert [(r["primary_field"], r["on_arxiv"]) for r in rows] == [
        (17, True), (17, False), (27, True)
    ]  # fmt: skip
    assert _kept(path, (27,))[0] == 2  # W2 and W5 go, W4 stays
    everything = _kept(path, None)
    assert everything[0] == 0 and len(everything[1]) == 5


def test_the_filter_takes_the_fields_of_every_split() -> None:
    splits = [
        SplitConfig(start="2025-01-01", end="2025-12-31"),  # type: ignore[arg-type]
        SplitConfig(start="2024-01-01", end="2024-12-31", fields=("Mathematics", "17")),  # type: ignore[arg-type]
    ]
    assert bulk.WorkFilter.of(splits).fields == (17, 26)
    assert bulk.WorkFilter.of(splits, keep_all=True).fields is None


def _odd(base: dict[str, Any]) -> list[dict[str, Any]]:
    """Works that are irregular in one field each, and regular ones at the edges."""
    changes: list[dict[str, Any]] = [
        {"publication_date": "2023-02-29"}, {"publication_date": ""},
        {"publication_date": "20230105"}, {"publication_date": 20230105},
        {"publication_year": True}, {"publication_year": 2020.0},
        {"publication_year": 99999999999999999999}, {"publication_year": 3000},
        {"referenced_works_count": -1}, {"referenced_works_count": None},
        {"referenced_works_count": "12"},
        {"referenced_works": ["W12", "https://openalex.org/W0", 5]}, {"referenced_works": []},
        {"referenced_works": None}, {"referenced_works": "W1 W2"},
        {"abstract_inverted_index": {"b": [1, 0], "a": [1], "c": []}},
        {"abstract_inverted_index": {}}, {"abstract_inverted_index": {"a": ["1"]}},
        {"abstract_inverted_index": ["a"]}, {"abstract_inverted_index": {'a"\\é x': [0]}},
        {"title": "", "display_name": "D"}, {"title": None, "display_name": None},
        {"title": ["T"]}, {"title": "", "display_name": {"text": "D"}},
        {"authorships": [{"author": {"display_name": "A"}}, 3, {"author": "x"},
                         {"author": {"display_name": None}}, {"author": {"display_name": "A"}}]},
        {"authorships": {"first": {}}},
        {"primary_location": {"source": {"display_name": ""}}},
        {"primary_location": {"source": "S"}}, {"primary_location": []},
        {"topics": [{"field": {"display_name": "X"}}, {"field": {"display_name": "X"}}, "z",
                    {"field": {"display_name": 7}}],
         "primary_topic": {"field": {"display_name": "Y"}}},
        {"topics": {"field": "Computer Science"}}, {"primary_topic": "CS"},
        {"doi": "https://doi.org/10.48550/arXiv.2301.00001"}, {"doi": "nonsense"}, {"id": 5},
    ]  # fmt: skip
    bare = {k: v for k, v in base.items() if k not in ("title", "referenced_works")}
    return [{**base, **change} for change in changes] + [bare]


@pytest.mark.parametrize("hostile", [False, True])
def test_every_kept_work_is_the_paper_parse_gives(tmp_path: Path, hostile: bool) -> None:
    generated = world.generate(world.WorldConfig(seed=2, papers=1200, hostile=hostile))
    sandbox = server.Sandbox(generated, server.SandboxConfig())
    works = [sandbox.work(r) for r in generated.records if r.hostile != "malformed_json"]
    works += _odd(works[0])
    path = tmp_path / "works.jsonl"
    path.write_text("".join(json.dumps(w) + "\n" for w in works))
    _, rows = _kept(path, None)
    assert len(rows) == len(works)
    regular = [r["fields"] is not None for r in rows]
    assert sum(regular) > 0.9 * len(works) and not all(regular)  # both paths are taken
    for work, row in zip(works, rows, strict=True):
        assert bulk.openalex_work(row) == openalex.parse(json.loads(json.dumps(work))), work["id"]
