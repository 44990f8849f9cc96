"""sources/openalex.py against a local server: batching limits, URL lengths, cursor paging; its
describe() and candidate filter; and its parser on bad input, hand-computed: a field of the wrong
type is read as missing and named in ``Paper.problems``; nothing raises."""

from __future__ import annotations

import datetime as dt
import json
import random
from urllib.parse import parse_qsl

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspire_build.http import HttpClient
from inspire_build.sources import CODECS, openalex
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
    # the batches are asked at once, so the server may see them in any order
    sizes = sorted(len(dict(s.query)["filter"].split("|")) for s in server.seen)
    assert sizes == [50, 100, 100]


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


# --- bad input: a field of the wrong type is read as missing and named, nothing raises -----------


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


def _batches_one_value_at_a_time(paper_ids: list[str]) -> list[tuple[str, list[str]]]:
    """The rule as first written: add IDs one by one, and start a new batch when the next would
    pass 100 values or the URL limit (building the whole URL again for every ID)."""
    by_key: dict[str, list[str]] = {"openalex": [], "doi": []}
    for raw in dict.fromkeys(paper_ids):
        entity = openalex._canonical_entity(raw)
        key = "openalex" if entity.startswith("W") else "doi"
        by_key[key].append(entity if key == "openalex" else entity[len("doi:") :])
    batches: list[tuple[str, list[str]]] = []
    for key, values in by_key.items():
        current: list[str] = []
        for value in values:
            trial = [*current, value]
            path, params = openalex._list_query({key: trial})
            limit = openalex.URL_MAX - openalex.URL_RESERVE
            if current and (
                len(trial) > openalex.OR_VALUES_MAX or openalex._url_length(path, params) > limit
            ):
                batches.append((key, current))
                trial = [value]
            current = trial
        if current:
            batches.append((key, current))
    return batches


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(1, 10**10).map(lambda n: f"W{n}"),
            st.text("abcdefghijklmnopqrstuvwxyz0123456789./-_()", min_size=1, max_size=120).map(
                lambda suffix: f"10.{len(suffix) + 1000}/{suffix}"
            ),
        ),
        max_size=260,
    )
)
def test_batches_are_the_longest_prefixes_that_fit_as_when_built_id_by_id(
    paper_ids: list[str],
) -> None:
    assert openalex.batch_queries(paper_ids) == _batches_one_value_at_a_time(paper_ids)


@pytest.mark.parametrize("seed", range(5))
def test_long_dois_batch_as_when_built_id_by_id(seed: int) -> None:
    """DOIs of 20 to 120 characters: batches end at the URL limit, not at 100 values."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789./-_()"
    dois = [
        f"10.{rng.randint(1000, 99999)}/{''.join(rng.choices(alphabet, k=rng.randint(20, 120)))}"
        for _ in range(300)
    ]
    ids = [*dois, *(f"W{rng.randint(1, 10**10)}" for _ in range(150))]
    batches = openalex.batch_queries(ids)
    assert batches == _batches_one_value_at_a_time(ids)
    assert any(len(values) < openalex.OR_VALUES_MAX for key, values in batches[:-2])
