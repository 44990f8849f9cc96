"""The client libraries' records on real recordings (REAL: tests/conftest.py says where).

arXiv: every recorded feed read into the arxiv client's ``arxiv.Result``; its timestamps are UTC
(``...Z``), and each paper's v1 date and version dates are their UTC days. S2: real records read
through semanticscholar's typed ``Paper`` and ``Reference`` give what the client itself reads
from the untouched JSON, so checking each field's type first changes nothing on real answers."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from xml.etree import ElementTree

import arxiv as arxiv_client
import yaml
from semanticscholar.Paper import Paper as S2Paper
from semanticscholar.Reference import Reference as S2Reference

from inspire_build.sources import arxiv, semanticscholar
from tests.conformance.conftest import REAL

_ATOM = "{http://www.w3.org/2005/Atom}"


def _feed(name: str) -> bytes:
    return str(json.loads((REAL / "arxiv" / name).read_text())["body"]).encode("latin-1")


def _s2_answers(name: str) -> list[Any]:
    cassette = yaml.safe_load((REAL / "semanticscholar" / name).read_text())
    return [json.loads(i["response"]["content"]) for i in cassette["interactions"]]


def test_every_recorded_arxiv_feed_is_dated_by_its_utc_days() -> None:
    names = sorted(p.name for p in (REAL / "arxiv").glob("*.json"))
    assert len(names) == 18
    counts = {}
    for name in names:
        body = _feed(name)
        entries = [
            e
            for e in ElementTree.fromstring(body).iter(_ATOM + "entry")
            if e.find(_ATOM + "published") is not None
        ]
        results = arxiv.read_results(arxiv.check_body(body))
        papers = arxiv.parse_feed(body)
        assert len(results) == len(papers) == len(entries)
        for entry, result, paper in zip(entries, results, papers, strict=True):
            assert isinstance(result, arxiv_client.Result)
            published = entry.findtext(_ATOM + "published") or ""
            updated = entry.findtext(_ATOM + "updated") or ""
            assert published.endswith("Z") and updated.endswith("Z")
            assert result.published.utcoffset() == dt.timedelta(0)
            assert result.published.isoformat() == published.replace("Z", "+00:00")
            assert result.updated.isoformat() == updated.replace("Z", "+00:00")
            version = int(result.get_short_id().rsplit("v", 1)[1])
            expected = [(1, published[:10])] + ([(version, updated[:10])] if version > 1 else [])
            assert [(v.version, str(v.date)) for v in paper.versions or ()] == expected
            assert str(paper.publication_date) == published[:10]
        counts[name] = len(papers)
    assert sum(counts.values()) == 120
    # The invalid ID's feed holds only arXiv's error entry, which has no <published>.
    assert counts["id_abc_s0_m100_b79c8dcf6bc3.json"] == 0
    (old,) = arxiv.read_results(
        arxiv.check_body(_feed("id_quant-ph_0201082v1_s0_m100_86989fe779ef.json"))
    )
    assert old.get_short_id() == "quant-ph/0201082v1" and old.categories == ["quant-ph", "cs.PL"]
    assert old.published == dt.datetime(2002, 1, 18, 15, 8, 5, tzinfo=dt.UTC)


def test_real_s2_references_read_as_the_client_reads_them() -> None:
    (page,) = _s2_answers("references_gpt1_corpusid_49313245.yaml")
    items = page["data"]
    assert len(items) == 73
    dated = unresolved = 0
    for position, item in enumerate(items):
        typed = S2Reference(item)  # the client's reading of the untouched JSON
        ours = semanticscholar.parse_reference(item, "corpusid:49313245", position)
        assert ours.contexts == tuple(typed.contexts)
        assert ours.intents == tuple(dict.fromkeys(typed.intents))
        assert ours.is_influential is typed.isInfluential
        assert (ours.title, ours.year) == (typed.paper.title, typed.paper.year)
        day = typed.paper.publicationDate
        assert ours.publication_date == (day.date() if day else None)
        assert ours.ids.s2 == typed.paper.paperId
        dated += day is not None
        unresolved += typed.paper.paperId is None
    assert (dated, unresolved) == (61, 3)


def test_real_s2_papers_read_as_the_client_reads_them() -> None:
    (batch,) = _s2_answers("paper_batch_3ids.yaml")
    cited = json.loads((REAL / "semanticscholar" / "paper_with_1000_citations.json").read_text())
    records = [*batch, cited, *cited["citations"]]
    assert len(records) == 1004
    for record in records:
        typed = S2Paper(record)
        ours = semanticscholar.parse_paper(record)
        assert ours.problems == ()
        assert (ours.title, ours.year, ours.reference_count) == (
            typed.title,
            typed.year,
            typed.referenceCount,
        )
        day = typed.publicationDate
        assert ours.publication_date == (day.date() if day else None)
        assert ours.authors == tuple(a.name for a in typed.authors)
        assert ours.ids.s2 == typed.paperId and ours.ids.corpus_id == str(typed.corpusId)
        assert ours.venue == (typed.venue or None)
    assert semanticscholar.parse_paper(batch[0]).title == (
        "How Much Should We Trust Differences-in-Differences Estimates?"
    )
