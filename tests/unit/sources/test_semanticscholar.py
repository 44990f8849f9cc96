"""Hand-computed cases of the sources' parsers on bad input: a field of the wrong type is read
as missing and named in ``Paper.problems``; nothing raises. And an arXiv feed that stays
unreadable costs only its bad ID."""

from __future__ import annotations

import datetime as dt

from inspire_build import warehouse
from inspire_build.models import ReferenceStatus
from inspire_build.sandbox import server, world
from inspire_build.sources import arxiv, make_client, openalex, semanticscholar


def test_openalex_reads_wrong_types_as_missing_and_names_them() -> None:
    paper = openalex.parse(
        {
            "id": "https://openalex.org/W4100000038",
            "title": ["A title in a list"],
            "display_name": {"text": "A title in a dict"},
            "publication_date": 20160227,
            "publication_year": "2016",
            "referenced_works": "https://openalex.org/W1 https://openalex.org/W2",
            "referenced_works_count": "2",
            "authorships": {"first": {"author": {"display_name": "Ada Abe"}}},
            "abstract_inverted_index": ["We", "study"],
            "topics": {"field": "Computer Science"},
        }
    )
    assert paper.ids.openalex == "W4100000038"
    assert (paper.title, paper.publication_date, paper.year) == (None, None, None)
    assert (paper.referenced_works, paper.reference_count, paper.authors) == (None, None, ())
    assert paper.abstract is None and paper.fields == ()
    assert set(paper.problems) == {
        "publication_date: int, not str",
        "topics: dict, not list",
        "referenced_works: str, not list",
        "authorships: dict, not list",
        "referenced_works_count: str, not int",
        "abstract_inverted_index: list, not dict",
        "publication_year: str, not int",
        "title: list, not str",
        "display_name: dict, not str",
    }


def test_openalex_with_every_optional_field_null() -> None:
    paper = openalex.parse(
        {"id": "https://openalex.org/W7", **dict.fromkeys(openalex.WORK_FIELDS[1:])}
    )
    assert paper.ids.openalex == "W7" and paper.ids.doi is None and paper.ids.arxiv is None
    assert (paper.title, paper.abstract, paper.publication_date, paper.year) == (None,) * 4
    assert paper.referenced_works is None and paper.authors == () and paper.problems == ()


def test_openalex_keeps_good_ids_and_names_bad_ones() -> None:
    paper = openalex.parse(
        {"id": "W7", "publication_date": "2099-05-01", "referenced_works": ["W1", 5, "not-an-id"]}
    )
    assert paper.publication_date == dt.date(2099, 5, 1)
    assert paper.referenced_works == ("openalex:W1",)
    assert paper.problems == (
        "referenced_works: '5' is not an OpenAlex ID",
        "referenced_works: 'not-an-id' is not an OpenAlex ID",
    )


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


def test_an_unreadable_arxiv_feed_is_halved_down_to_the_bad_id() -> None:
    generated = world.generate(world.WorldConfig(seed=3, papers=600, hostile=True))
    bad = next(r.arxiv for r in generated.records if r.hostile == "malformed_json")
    good = [r.arxiv for r in generated.records if r.arxiv and not r.hostile][:7]
    assert bad
    # arXiv's limit scaled far past the client's pace, so every request counted is answered.
    with server.running(generated, server.SandboxConfig(time_scale=100_000)) as base:
        settings = server.settings_for(base, http_backoff_s=0.001, http_max_retries=1)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        failed: dict[str, str] = {}
        found = arxiv.fetch_records(client, [*good[:3], bad, *good[3:]], failed)
        requests = client.stats["arxiv"].network
    assert [i for i, paper in found.items() if paper is None] == [bad]
    assert list(failed) == [bad] and "stays malformed" in failed[bad]
    # 8 IDs: the whole feed, then halves 4+4, 2+2, 1+1 on the bad side; each unreadable
    # answer is asked twice (one retry) before it counts as unreadable.
    assert requests == 2 + (2 + 1) + (2 + 1) + (2 + 1)
