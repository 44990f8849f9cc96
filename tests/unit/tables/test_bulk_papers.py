"""tables/bulk_papers.py: the S2 papers SQL reads give the Paper ``bulk.s2_paper`` gives for
the same line, field by field; a paper in a form SQL does not read goes to that parser whole;
and the staged rows say which papers are on arXiv."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inspire_build import bulk
from inspire_build.models import Paper
from inspire_build.tables import bulk_papers

SHA = "0123456789abcdef0123456789ABCDEF01234567"


def _line(**changes: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "corpusid": 101, "externalids": {"DOI": "10.1145/3292500.3330701", "ArXiv": "1905.01234",
                                         "CorpusId": "101", "MAG": "2947"},
        "url": f"https://www.semanticscholar.org/paper/{SHA}", "title": "A Title",
        "authors": [{"authorId": "1", "name": "Ada Lovelace"}, {"authorId": None, "name": "B. C"}],
        "venue": "KDD", "year": 2019, "referencecount": 31,
        "s2fieldsofstudy": [{"category": "Computer Science", "source": "external"},
                            {"category": "Mathematics", "source": "s2-fos-model"},
                            {"category": "Computer Science", "source": "s2-fos-model"}],
        "publicationdate": "2019-07-25",
    }  # fmt: skip
    line.update(changes)
    return {k: v for k, v in line.items() if v is not ...}  # ...: the key left out


REGULAR = [
    _line(),
    _line(externalids={"DOI": "10.1145/ABC.Def-1", "ArXiv": "0801.1234v3"}),
    _line(
        externalids=None,
        url=None,
        title=None,
        venue=None,
        year=None,
        authors=None,
        s2fieldsofstudy=None,
        publicationdate=None,
        referencecount=None,
    ),  # fmt: skip
    _line(externalids=..., url=..., title=..., venue=..., publicationdate=...),
    _line(title="", venue="", publicationdate="", authors=[], s2fieldsofstudy=[]),
    _line(year=999, referencecount=-1),  # out of range: no year, no count
    _line(year=2101, publicationdate="1999-12-31"),
    _line(url="https://www.semanticscholar.org/author/12"),  # no /paper/: no paperId
    _line(authors=["Plain Name", {"name": 3}, {"authorId": "9"}, 7, {"name": "Kept"}]),
    _line(title='caf\u00e9 "quoted" \\ and \u2603', authors=[{"name": "J\u00f6rg"}]),
    _line(s2fieldsofstudy=[{"category": "Physics"}, {"category": None}, "Biology"]),
    _line(externalids={"ArXiv": None, "DOI": None}),
]
IRREGULAR = [
    _line(corpusid="101"),  # a string
    _line(corpusid=0),
    _line(externalids={"ArXiv": "hep-th/9901001"}),  # old style: parse normalises it
    _line(externalids={"ArXiv": " 1905.01234"}),
    _line(externalids={"ArXiv": "1913.01234"}),  # no month 13: dropped by parse
    _line(externalids={"DOI": "10.48550/arXiv.1905.01234"}),  # arXiv's DOI: an arXiv ID
    _line(externalids={"DOI": "10.1000/a%20b"}),
    _line(externalids={"DOI": "doi:10.1000/x"}),
    _line(externalids={"ArXiv": 1905.01234}),
    _line(externalids=["1905.01234"]),
    _line(url=f"https://www.semanticscholar.org/paper/{SHA[:39]}"),
    _line(year=True),
    _line(year="2019"),
    _line(referencecount=3.5),
    _line(publicationdate="2019-02-30"),
    _line(publicationdate="2019-07-25T00:00:00"),
    _line(publicationdate=20190725),
    _line(title=["A", "list"]),
    _line(authors={"name": "not a list"}),
]


def _scan(tmp_path: Path, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = tmp_path / "papers.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    con = duckdb.connect()
    assert bulk_papers.scan(con, data) == len(lines)
    return list(bulk_papers.papers(con))


@pytest.mark.parametrize("line", REGULAR, ids=range(len(REGULAR)))
def test_a_regular_paper_read_by_sql_is_the_paper_the_parser_gives(
    tmp_path: Path, line: dict[str, Any]
) -> None:
    [row] = _scan(tmp_path, [line])
    assert row["paper"] is not None, "SQL should read this one"
    columns = {k: v for k, v in row.items() if k != "paper"}
    assert Paper.model_validate_json(row["paper"]) == bulk.s2_paper(columns)


@pytest.mark.parametrize("line", IRREGULAR, ids=range(len(IRREGULAR)))
def test_a_paper_in_a_form_sql_does_not_read_goes_to_the_parser(
    tmp_path: Path, line: dict[str, Any]
) -> None:
    [row] = _scan(tmp_path, [line])
    assert row["paper"] is None
    assert json.loads(row["corpusid"]) == line["corpusid"]  # the columns as the parser reads


def test_the_staged_rows_carry_the_ids_and_whether_the_paper_is_on_arxiv(tmp_path: Path) -> None:
    data = tmp_path / "papers.jsonl"
    lines = [_line(), _line(corpusid=102, externalids={"DOI": "10.1000/y"}), IRREGULAR[0]]
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    con = duckdb.connect()
    bulk_papers.scan(con, data)
    bulk_papers.stage(con)
    assert [r["corpusid"] for r in bulk_papers.irregular(con)] == ['"101"']
    rows = con.execute("SELECT record_id, ids, on_arxiv FROM staged ORDER BY 1").fetchall()
    assert rows == [
        ("101", [["doi", "10.1145/3292500.3330701"], ["arxiv", "1905.01234"],
                 ["s2", SHA.lower()], ["corpusid", "101"]], True),
        ("102", [["doi", "10.1000/y"], ["s2", SHA.lower()], ["corpusid", "102"]], False),
    ]  # fmt: skip
