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
from inspire_build.models import Paper
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
    """(works filtered out, every kept work in order: its SQL Paper JSON or the work whole)."""
    con = duckdb.connect()
    filtered, read = bulk_works.scan(con, path, fields)
    rows = list(bulk_works.papers(con))
    assert read == filtered + len(rows)
    bulk_works.stage(con)  # the staged rows are the regular works' Paper JSON, as papers gives
    staged = con.execute("SELECT paper::VARCHAR, record_id, ids FROM staged").fetchall()
    assert sorted(p for p, _, _ in staged) == sorted(r["paper"] for r in rows if r["paper"])
    for paper, record_id, ids in staged:
        typed = Paper.model_validate_json(paper).ids.typed()
        assert (record_id, ids) == (typed[0].value, [[i.scheme.value, i.value] for i in typed])
    irregular = [r["work"] for r in bulk_works.irregular(con)]
    assert irregular == [r["work"] for r in rows if not r["paper"]]
    return filtered, rows


def _paper(row: dict[str, Any]) -> Paper:
    """A kept work's Paper: what SQL built, or what the ingest's Python path gives."""
    return Paper.model_validate_json(row["paper"]) if row["paper"] else bulk.openalex_work(row)


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
    papers = [_paper(r) for r in rows]
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


def _places(*places: Any) -> dict[str, Any]:
    """Locations, and no DOI: the arXiv ID comes from the locations if from anywhere."""
    return {"doi": None, "locations": list(places)}


def _at(url: str | None, pdf: str | None = None, **more: Any) -> dict[str, Any]:
    """An arXiv location with these URLs (a location ``parse`` reads the arXiv ID from)."""
    return {**ARXIV, "landing_page_url": url, "pdf_url": pdf, **more}


# Changes to a work, each with whether SQL reads it (True), Python does (False), or either.
REGULAR: list[tuple[dict[str, Any], bool | None]] = [
    ({"publication_date": "2023-02-29"}, False), ({"publication_date": ""}, True),
    ({"publication_date": "20230105"}, False), ({"publication_date": 20230105}, False),
    ({"publication_year": True}, False), ({"publication_year": 2020.0}, False),
    ({"publication_year": 99999999999999999999}, False), ({"publication_year": 3000}, True),
    ({"referenced_works_count": -1}, True), ({"referenced_works_count": None}, True),
    ({"referenced_works_count": "12"}, False),
    ({"referenced_works": ["W12", "https://openalex.org/W0", 5]}, False),
    ({"referenced_works": []}, True), ({"referenced_works": None}, True),
    ({"referenced_works": "W1 W2"}, False),
    ({"abstract_inverted_index": {"b": [1, 0], "a": [1], "c": []}}, True),
    ({"abstract_inverted_index": {"b": [3, -1, 0], "a": [0, 2], "": [5]}}, True),
    ({"abstract_inverted_index": {"x": [0], "y": [10 ** 17]}}, True),
    ({"abstract_inverted_index": {"x": [0], "y": [2 ** 64]}}, False),
    ({"abstract_inverted_index": {}}, True), ({"abstract_inverted_index": {"": [0]}}, True),
    ({"abstract_inverted_index": {"a": ["1"]}}, False),
    ({"abstract_inverted_index": {"a": [1.0]}}, False),
    ({"abstract_inverted_index": {"a": [1], "b": None}}, False),
    ({"abstract_inverted_index": ["a"]}, False),
    ({"abstract_inverted_index": {'a"\\é\u2028 x\n': [0], "[1]": [1]}}, True),
    ({"title": "", "display_name": "D"}, True), ({"title": None, "display_name": None}, True),
    ({"title": ["T"]}, False), ({"title": "", "display_name": {"text": "D"}}, False),
    ({"authorships": [{"author": {"display_name": "A"}}, 3, {"author": "x"},
                      {"author": {"display_name": None}}, {"author": {"display_name": "A"}}]},
     True),
    ({"authorships": {"first": {}}}, False),
    ({"primary_location": {"source": {"display_name": ""}}}, True),
    ({"primary_location": {"source": "S"}}, True), ({"primary_location": []}, False),
    ({"topics": [{"field": {"display_name": "X"}}, {"field": {"display_name": "X"}}, "z",
                 {"field": {"display_name": 7}}],
      "primary_topic": {"field": {"display_name": "Y"}}}, True),
    ({"topics": {"field": "Computer Science"}}, False), ({"primary_topic": "CS"}, False),
    # IDs: the work's, its DOI, and its arXiv ID from an arXiv DOI or an arXiv location
    ({"id": 5}, False), ({"id": "https://openalex.org/w12"}, False), ({"id": "W12"}, False),
    ({"doi": None}, True), ({"doi": "https://doi.org/10.1000/ABC.Def(1)"}, True),
    ({"doi": "https://doi.org/10.1000/a%2Fb"}, False), ({"doi": "http://dx.doi.org/10.1/x"}, False),
    ({"doi": "https://doi.org/10.1000/a b"}, False), ({"doi": "https://doi.org/10.1000/é"}, False),
    ({"doi": "nonsense"}, False), ({"doi": ""}, False), ({"doi": 10.1}, False),
    ({"doi": "https://doi.org/10.48550/arXiv.2301.00001"}, True),
    ({"doi": "https://doi.org/10.48550/arxiv.0704.0001v3"}, True),
    ({"doi": "https://doi.org/10.48550/arXiv.hep-th/9901001"}, False),
    (_places(JOURNAL, _at("https://arxiv.org/abs/2301.00001v2")), True),
    (_places(_at("http://arxiv.org/pdf/1412.1234v1.pdf"), _at("x")), True),
    (_places(_at("https://arxiv.org/abs/1501.1234")), False),  # 4 digits from 2015
    (_places(_at("https://arxiv.org/abs/1412.12345")), False),
    (_places(_at("https://arxiv.org/abs/0703.1234")), False),  # before new style
    (_places(_at("https://arxiv.org/abs/2313.00001")), False),  # no month 13
    (_places(_at("https://arxiv.org/abs/2301.00001/")), False),
    (_places(_at(None, "https://arxiv.org/pdf/2301.00001")), True),  # None: no ID
    (_places(_at("https://example.org/2301.00001", "https://arxiv.org/pdf/2301.00002")),
     False),
    (_places(_at("nonsense"), _at("https://arxiv.org/abs/2301.00003")), False),
    (_places(3, {"source": None}, {"source": {"id": 4306400194}},
                    _at("https://arxiv.org/abs/2301.00004")), True),
    ({"doi": None, "locations": {"source": {"id": openalex.ARXIV_SOURCE}}}, True),
    ({"doi": "https://doi.org/10.48550/arxiv.2302.00001",
      "locations": [_at("https://arxiv.org/abs/2301.00005")]}, True),
    ({"doi": "https://doi.org/10.1000/x", "locations": [_at("https://arxiv.org/abs/2301.00006")]},
     True),
]  # fmt: skip


def _odd(base: dict[str, Any]) -> list[tuple[str, bool | None]]:
    """Lines of works that are irregular in one field each, and of regular ones at the edges,
    each with whether SQL reads it; and lines whose JSON repeats a key."""
    bare = {k: v for k, v in base.items() if k not in ("title", "referenced_works")}
    lines = [(json.dumps({**base, **change}), regular) for change, regular in REGULAR]
    twice = json.dumps({**base, "abstract_inverted_index": {"a": [0]}})
    twice = twice.replace('{"a": [0]}', '{"a": [0], "b": [1], "a": [2]}')
    return [*lines, (json.dumps(bare), True), (twice, False)]


@pytest.mark.parametrize("hostile", [False, True])
def test_every_kept_work_is_the_paper_parse_gives(tmp_path: Path, hostile: bool) -> None:
    generated = world.generate(world.WorldConfig(seed=2, papers=1200, hostile=hostile))
    sandbox = server.Sandbox(generated, server.SandboxConfig())
    works = [sandbox.work(r) for r in generated.records if r.hostile != "malformed_json"]
    lines = [(json.dumps(w), None) for w in works] + _odd(works[0])
    path = tmp_path / "works.jsonl"
    path.write_text("".join(line + "\n" for line, _ in lines))
    _, rows = _kept(path, None)
    assert len(rows) == len(lines)
    regular = [r["paper"] is not None for r in rows]
    assert sum(regular) > 0.9 * len(lines) and not all(regular)  # both paths are taken
    for (line, expected), row, sql in zip(lines, rows, regular, strict=True):
        assert _paper(row) == openalex.parse(json.loads(line)), line[:200]
        assert expected in (None, sql), line[:200]
