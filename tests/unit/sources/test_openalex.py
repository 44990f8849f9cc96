"""Source modules against a local server: batching limits, paging, call counts; describe()."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from inspire_build.http import HttpClient
from inspire_build.sources import CODECS, arxiv, openalex, semanticscholar
from tests.localserver import LocalServer, Reply, Seen
from tests.unit.test_http import settings_for


def openalex_world(seen: Seen) -> Reply:
    """Answers OR-filter lookups with one minimal work per requested ID."""
    query = dict(seen.query)
    key, _, values = query["filter"].partition(":")
    works = []
    for value in values.split("|"):
        if key == "openalex":
            works.append({"id": f"https://openalex.org/{value}", "title": value})
        else:
            works.append(
                {
                    "id": f"https://openalex.org/W{abs(hash(value)) % 10**9}",
                    "doi": f"https://doi.org/{value}",
                    "title": value,
                }
            )
    body = {"meta": {"count": len(works), "page": None, "next_cursor": None}, "results": works}
    return Reply(200, json.dumps(body).encode())


def test_250_openalex_ids_make_3_calls() -> None:
    server = LocalServer(openalex_world)
    wanted = [f"W{1000 + i}" for i in range(250)]
    with server.running():
        client = HttpClient(settings_for(server), CODECS, None, mode="live")
        found = openalex.fetch_works(client, wanted)
    assert len(server.seen) == 3
    assert all(found[w] is not None for w in wanted)
    sizes = [len(dict(s.query)["filter"].split("|")) for s in server.seen]
    assert sizes == [100, 100, 50]


def test_long_dois_keep_every_url_under_4096_characters() -> None:
    server = LocalServer(openalex_world)
    dois = [f"10.1234/{'long-suffix-' * 6}{i:04d}" for i in range(120)]
    with server.running():
        client = HttpClient(
            settings_for(server, openalex_api_key="k" * 40, contact_email="someone@example.org"),
            CODECS,
            None,
            mode="live",
        )
        found = openalex.fetch_works(client, dois)
    assert all(found[d] is not None for d in dois)
    lengths = [len("https://api.openalex.org") + len(s.raw_target) for s in server.seen]
    assert max(lengths) < 4096
    assert len(server.seen) >= 3  # 120 long DOIs do not fit in 2 URLs
    assert sum(len(dict(s.query)["filter"].split("|")) for s in server.seen) == 120


def test_openalex_cursor_paging_follows_next_cursor() -> None:
    def pages(seen: Seen) -> Reply:
        cursor = dict(seen.query)["cursor"]
        index = 0 if cursor == "*" else int(cursor)
        works = [{"id": f"https://openalex.org/W{index * 100 + i + 1}"} for i in range(100)]
        works = works[: 250 - index * 100]
        meta = {"count": 250, "next_cursor": str(index + 1) if index < 2 else None}
        return Reply(200, json.dumps({"meta": meta, "results": works}).encode())

    server = LocalServer(pages)
    with server.running():
        client = HttpClient(settings_for(server), CODECS, None, mode="live")
        works = openalex.list_works(client, "cites:W1")
    assert len(works) == 250 and len({w.ids.openalex for w in works}) == 250
    assert [dict(s.query)["cursor"] for s in server.seen] == ["*", "1", "2"]


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


def test_arxiv_lookups_take_at_most_100_ids_per_request() -> None:
    def feed(seen: Seen) -> Reply:
        return Reply(
            200,
            b"<feed xmlns='http://www.w3.org/2005/Atom'/>",
            {"Content-Type": "application/atom+xml"},
        )

    server = LocalServer(feed)
    wanted = [f"2301.{i:05d}" for i in range(1, 251)]
    with server.running():
        client = HttpClient(settings_for(server), CODECS, None, mode="live")
        found = arxiv.fetch_records(client, wanted)
    sizes = [len(dict(s.query)["id_list"].split(",")) for s in server.seen]
    assert sizes == [100, 100, 50]
    assert found == dict.fromkeys(wanted)  # none found, every one reported


# --- describe(): one resource, however it is spelled ---------------------------------------------


def test_openalex_describe_ignores_presentation_and_order() -> None:
    a = openalex.describe(
        "GET",
        "/works",
        parse_qsl(
            "filter=cites:W2|https://openalex.org/W1,publication_year:2020&select=id,title&per-page=5"
            "&mailto=x%40y.org&api_key=K"
        ),
        None,
    )
    b = openalex.describe(
        "GET",
        "/works",
        parse_qsl("filter=publication_year:2020,cites:W1|W2&select=title,id&per_page=5&cursor=*"),
        None,
    )
    assert a == b
    assert a.resource == "works filter=cites:W1|W2,publication_year:2020 page=first"
    assert a.fields == ("id", "title") and a.page_size == 5


def test_openalex_single_work_resources() -> None:
    def resource(path: str) -> str:
        return openalex.describe("GET", path, [], None).resource

    assert resource("/works/https://doi.org/10.1371/X") == resource("/works/doi:10.1371/x")
    assert resource("/works/W123") == resource("/works/https://openalex.org/w123") == "works/W123"


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


def test_candidate_filter_for_the_eval_split() -> None:
    from inspire_build.config import Settings

    split = Settings().split("eval")
    assert openalex.candidate_filter(split) == (
        "primary_topic.field.id:17,from_publication_date:2025-01-01,"
        "to_publication_date:2026-12-31,locations.source.id:S4306400194,"
        "referenced_works_count:>9"
    )


def test_candidate_filter_refuses_unknown_fields() -> None:
    import pytest

    from inspire_build.config import SplitConfig
    from inspire_build.errors import InputError

    split = SplitConfig(start="2025-01-01", end="2025-12-31", fields=("Alchemy",))
    with pytest.raises(InputError, match="unknown OpenAlex field 'Alchemy'; known fields: Agri"):
        openalex.candidate_filter(split)
