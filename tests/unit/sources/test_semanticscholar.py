"""sources/semanticscholar.py against a local server: 500 IDs a batch call, references paged by
offset; its describe(); and its parsers on bad input, hand-computed: a field of the wrong type is
read as missing and named in ``Paper.problems``; nothing raises. Records are read through the
semanticscholar client's typed ``Paper`` and ``Reference``."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from semanticscholar.Paper import Paper as S2Paper
from semanticscholar.Reference import Reference as S2Reference

from inspire_build.http import HttpClient
from inspire_build.models import DatePrecision, ReferenceStatus
from inspire_build.sources import CODECS, semanticscholar
from tests.localserver import LocalServer, Reply, Seen
from tests.unit.test_http import settings_for


def test_1200_s2_ids_make_3_batch_calls() -> None:
    def batch(seen: Seen) -> Reply:
        requested = json.loads(seen.body)["ids"]
        records = [
            None if i.endswith("7") else {"paperId": f"{n:040x}", "corpusId": int(i.split(":")[1])}
            for n, i in enumerate(requested)
        ]
        return Reply(200, json.dumps(records).encode())

    server = LocalServer(batch)
    wanted = [f"CorpusId:{i}" for i in range(1, 1201)]
    with server.running():
        client = HttpClient(settings_for(server), CODECS, None, mode="live")
        found = semanticscholar.fetch_papers(client, wanted)
    assert len(server.seen) == 3
    assert [len(json.loads(s.body)["ids"]) for s in server.seen] == [500, 500, 200]
    assert all(s.method == "POST" and s.path == "/graph/v1/paper/batch" for s in server.seen)
    missing = [w for w, paper in found.items() if paper is None]
    assert len(found) == 1200 and len(missing) == 120  # every 10th ID is unknown, and kept
    assert found["CorpusId:12"] is not None and found["CorpusId:12"].ids.corpus_id == "12"


def test_s2_references_page_by_offset_until_no_next() -> None:
    def refs(seen: Seen) -> Reply:
        offset = int(dict(seen.query)["offset"])
        data = [
            {
                "citedPaper": {"paperId": None, "title": f"R{offset + i}"},
                "contexts": [],
                "intents": [],
                "isInfluential": False,
            }
            for i in range(1000 if offset == 0 else 5)
        ]
        page = {"offset": offset, "data": data, **({"next": 1000} if offset == 0 else {})}
        return Reply(200, json.dumps(page).encode())

    server = LocalServer(refs)
    with server.running():
        client = HttpClient(settings_for(server), CODECS, None, mode="live")
        references = semanticscholar.fetch_references(client, "CorpusId:5")
    assert len(references) == 1005
    assert [dict(s.query)["offset"] for s in server.seen] == ["0", "1000"]
    assert all(dict(s.query)["limit"] == "1000" for s in server.seen)
    assert references[-1].title == "R1004" and references[-1].ref_key == "s2:1004"


# --- describe(): one resource, however it is spelled ---------------------------------------------


def test_s2_describe_canonicalises_ids() -> None:
    a = semanticscholar.describe(
        "GET",
        "/paper/CorpusID:49313245/references",
        [("fields", "title,contexts"), ("limit", "100")],
        None,
    )
    b = semanticscholar.describe(
        "GET",
        "/paper/CorpusId:49313245/references",
        [("fields", "contexts,title"), ("offset", "0")],
        None,
    )
    assert a.resource == b.resource == "paper/corpusid:49313245/references offset=0"
    assert a.page_size == 100 and b.page_size == 100
    assert semanticscholar.describe("GET", "/paper/DOI:10.1/X", [], None).fields == (
        "paperId",
        "title",
    )


# --- bad input: a field of the wrong type is read as missing and named, nothing raises -----------


def test_s2_reads_wrong_types_as_missing_and_names_them() -> None:
    paper = semanticscholar.parse_paper(
        {
            "paperId": "a" * 40,
            "title": ["A title"],
            "year": "circa 2019",
            "publicationDate": 20200101,
            "externalIds": [["DOI", "10.1/x"]],
            "authors": {"first": {"name": "Ada Abe"}},
            "fieldsOfStudy": "Computer Science",
            "referenceCount": "many",
            "venue": 7,
        }
    )
    assert paper.ids.s2 == "a" * 40 and paper.ids.doi is None
    assert (paper.title, paper.year, paper.publication_date, paper.venue) == (None,) * 4
    assert paper.authors == () and paper.fields == () and paper.reference_count is None
    assert set(paper.problems) == {
        "title: list, not str",
        "year: str, not int",
        "publicationDate: int, not str",
        "externalIds: list, not dict",
        "authors: dict, not list",
        "fieldsOfStudy: str, not list",
        "referenceCount: str, not int",
        "venue: int, not str",
    }


def test_s2_reference_with_wrong_types_and_nulls() -> None:
    reference = semanticscholar.parse_reference(
        {"contexts": "one context", "intents": [None, "methodology"], "isInfluential": "yes",
         "citedPaper": {"paperId": None, "title": None, "year": 3000}},
        "arxiv:2501.00001",
        4,
    )  # fmt: skip
    assert reference.ref_key == "s2:4" and reference.ids.is_empty()
    assert reference.contexts == () and reference.intents == ("methodology",)
    assert reference.is_influential is None and reference.year is None
    assert reference.status is ReferenceStatus.UNRESOLVED


# --- the semanticscholar client's typed records ---------------------------------------------------


def test_s2_asks_only_for_fields_the_clients_records_read() -> None:
    assert set(semanticscholar.PAPER_FIELDS) <= set(S2Paper.FIELDS)
    signals = set(S2Reference.FIELDS)
    assert {"contexts", "intents", "isInfluential"} <= signals
    assert set(semanticscholar.REFERENCE_FIELDS) <= signals | set(S2Paper.FIELDS)


def test_s2_records_the_client_cannot_read_still_parse() -> None:
    record = {
        "paperId": "b" * 40,
        "title": "T",
        "publicationDate": "2020-02-30",
        "authors": ["Ada Abe", {"name": "Bo Bell"}, {"name": None}, 5],
    }
    # The client's own record takes the JSON on trust: it raises on this date, and this author.
    with pytest.raises(ValueError):
        S2Paper({"publicationDate": record["publicationDate"]})
    with pytest.raises(TypeError):
        S2Paper({"authors": [5]})
    paper = semanticscholar.parse_paper(record)
    assert paper.authors == ("Ada Abe", "Bo Bell") and paper.publication_date is None
    assert paper.problems == ("publicationDate: '2020-02-30' is not a date",)
    # A date-time keeps its day, which the client's strict '%Y-%m-%d' would refuse.
    stamped = semanticscholar.parse_paper({"year": 2021, "publicationDate": "2021-03-04T05:06:07"})
    assert (stamped.publication_date, stamped.date_precision) == (
        dt.date(2021, 3, 4),
        DatePrecision.DAY,
    )
    assert semanticscholar.parse_paper({"year": 2021}).date_precision is DatePrecision.YEAR


def test_s2_reference_signals_read_as_the_client_reads_them() -> None:
    item = {
        "contexts": ["one", "two"],
        "intents": ["methodology", "methodology", "background"],
        "isInfluential": True,
        "citedPaper": {
            "paperId": "C" * 40,
            "externalIds": {"ArXiv": "1707.08567", "CorpusId": 7},
            "title": "Cited",
            "year": 2017,
            "publicationDate": "2017-07-27",
        },
    }
    typed = S2Reference(item)  # well-formed: the client's own reading is ours
    reference = semanticscholar.parse_reference(item, "s2:" + "a" * 40, 0)
    assert reference.contexts == tuple(typed.contexts) == ("one", "two")
    assert reference.intents == ("methodology", "background")
    assert reference.is_influential is typed.isInfluential is True
    assert reference.ids.s2 == typed.paper.paperId.lower() == "c" * 40
    assert (reference.ids.arxiv, reference.ids.corpus_id) == ("1707.08567", "7")
    assert reference.publication_date == typed.paper.publicationDate.date()
    # Absent signals stay unknown (None); a list of the wrong type was given, but is empty.
    bare = semanticscholar.parse_reference({"citedPaper": {"paperId": None}}, "t", 1)
    assert (bare.contexts, bare.intents, bare.is_influential) == (None, None, None)
