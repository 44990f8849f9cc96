"""The sandbox served for real (uvicorn on 127.0.0.1), driven by the product's own clients
with only their base URLs changed: paging, batch limits, every rate-limit answer, every fault."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from inspire_build import http
from inspire_build.config import Settings
from inspire_build.http import HttpClient
from inspire_build.sandbox import server as S
from inspire_build.sandbox import world as W
from inspire_build.sources import CODECS, arxiv, openalex, semanticscholar


@pytest.fixture(scope="module")
def world() -> W.World:
    return W.generate(W.WorldConfig(seed=11, papers=1400, giant_papers=1))


def client(base: str, **overrides: object) -> HttpClient:
    values: dict[str, object] = {
        "openalex_url": base,
        "s2_url": base + "/graph/v1",
        "arxiv_url": base + "/api/query",
        "openalex_rps": 100,
        "s2_rps": 100,
        "arxiv_interval_s": 0,
        "http_backoff_s": 0.01,
        "http_timeout_s": 5,
    }
    values.update(overrides)
    return HttpClient(Settings.model_validate(values), CODECS, None, mode="live")


FAST = S.SandboxConfig(time_scale=1000)  # limits 1000x: out of the way unless a test wants them


@pytest.fixture(scope="module")
def base(world: W.World) -> Iterator[str]:
    with S.running(world, FAST) as url:
        yield url


def stats(base: str) -> dict[str, int]:
    counts: dict[str, int] = httpx.get(base + "/_sandbox/stats").json()["counts"]
    return counts


# --- OpenAlex -----------------------------------------------------------------------------------


def test_openalex_or_batches_of_100(world: W.World, base: str) -> None:
    wanted = [r.openalex for r in world.records[:250]]
    c = client(base)
    found = openalex.fetch_works(c, wanted)
    assert all(found[w] is not None for w in wanted)
    assert c.stats["openalex"].network == 3
    record = world.records[0]
    paper = found[record.openalex]
    assert paper is not None and paper.title == record.title
    assert paper.abstract == record.abstract  # rebuilt from the inverted index


def test_openalex_lookup_by_doi_and_arxiv(world: W.World, base: str) -> None:
    single = next(r for r in world.records if r.kind == "single" and r.arxiv)
    c = client(base)
    by_doi = openalex.fetch_work(c, single.doi)
    assert by_doi.ids.openalex == single.openalex and by_doi.ids.arxiv == single.arxiv
    preprint = next(r for r in world.records if r.kind == "preprint")
    assert openalex.fetch_work(c, f"arXiv:{preprint.arxiv}").ids.openalex == preprint.openalex


def test_openalex_cursor_paging_of_a_giant_reference_list(world: W.World, base: str) -> None:
    giant = max(world.records, key=lambda r: len(r.references))
    c = client(base)
    works = openalex.list_works(c, f"cited_by:{giant.openalex}")
    assert len(works) == len({x.cites for x in giant.references}) > 1000
    assert c.stats["openalex"].network == -(-len(works) // 100)


def test_openalex_page_paging_and_limits(base: str) -> None:
    c = client(base)
    first = c.get("openalex", "/works", [("per_page", "5"), ("page", "2")]).json()
    assert first["meta"]["page"] == 2 and len(first["results"]) == 5
    with pytest.raises(http.BadRequest, match="between 1 and 200"):
        c.get("openalex", "/works", [("per_page", "201")])
    with pytest.raises(http.BadRequest, match="primary_location.source"):
        c.get("openalex", "/works", [("select", "id,primary_location.source")])
    with pytest.raises(http.BadRequest, match="10,000"):
        c.get("openalex", "/works", [("per_page", "100"), ("page", "101")])
    with pytest.raises(http.NotFound):
        c.get("openalex", "/works/W1")


@pytest.mark.parametrize("name", ["per_page", "per-page"])
def test_openalex_pages_hold_up_to_200_as_the_real_api(base: str, name: str) -> None:
    page = client(base).get("openalex", "/works", [(name, "200")]).json()
    assert page["meta"]["per_page"] == 200 and len(page["results"]) == 200


# A real OpenAlex next_cursor (../shared/fixtures/real/openalex/oa_snowball.yml): a cursor that
# this sandbox never issued.
FOREIGN_CURSOR = "IlsnLUluZmluaXR5JywgMCwgJ2h0dHBzOi8vb3BlbmFsZXgub3JnL1czMDQ1OTIxODkxJ10i"
MALFORMED = [
    ("openalex", "/works", [("per-page", "abc")], "per-page parameter must be between 1 and 200"),
    ("openalex", "/works", [("per_page", "0")], "per-page parameter must be between 1 and 200"),
    ("openalex", "/works", [("page", "abc")], "page parameter must be a positive integer"),
    ("openalex", "/works", [("page", "0")], "page parameter must be a positive integer"),
    ("openalex", "/works", [("cursor", FOREIGN_CURSOR)], "is not valid: start with cursor=\\*"),
    ("openalex", "/works", [("cursor", "%%%")], "is not valid"),
    ("openalex", "/works", [("filter", "referenced_works_count:abc")], "must be a number"),
    ("openalex", "/works", [("filter", "referenced_works_count:>")], "must be a number"),
    ("openalex", "/works", [("filter", "publication_year:2020|20x0")], "must be a number"),
    ("openalex", "/works", [("filter", "from_publication_date:2020-13-01")], "YYYY-MM-DD"),
    ("openalex", "/works", [("filter", "to_publication_date:abc")], "YYYY-MM-DD"),
    ("s2", "/references", [("limit", "abc")], "limit parameter must be between 1 and 1000"),
    ("s2", "/references", [("offset", "-5")], "offset parameter must be an integer"),
    ("s2", "/references", [("offset", "abc")], "offset parameter must be an integer"),
    ("arxiv", "", [("search_query", "all:x"), ("start", "abc")], "start must be an integer"),
    ("arxiv", "", [("search_query", "all:x"), ("start", "-1")], "start must be non-negative"),
    ("arxiv", "", [("id_list", "1"), ("max_results", "x")], "max_results must be an integer"),
]


@pytest.mark.parametrize(("source", "path", "params", "message"), MALFORMED)
def test_malformed_parameters_are_a_400_never_a_500(
    world: W.World, base: str, source: str, path: str, params: list[tuple[str, str]], message: str
) -> None:
    """As the real APIs answer: the client's mistake is final (http.py never retries a 400)."""
    prefix = {"openalex": "", "s2": "/graph/v1", "arxiv": "/api/query"}[source]
    if path == "/references":
        path = f"/paper/{world.records[0].s2}/references"
    answer = httpx.get(base + prefix + path, params=params)
    assert answer.status_code == 400
    assert re.search(message, CODECS[source].error_message(answer.content))


def test_well_formed_filter_values_still_match(world: W.World, base: str) -> None:
    year = world.records[0].publication_date[:4]
    c = client(base)
    for clause in (
        f"publication_year:{year}",
        "referenced_works_count:>0",
        "from_publication_date:2012-01-01",
    ):
        assert c.get("openalex", "/works", [("filter", clause)]).json()["meta"]["count"] > 0


def test_openalex_candidate_filter_selects_cs_arxiv_works(world: W.World, base: str) -> None:
    from inspire_build.config import SplitConfig

    split = SplitConfig(start="2025-01-01", end="2025-06-30", min_references=10)
    works = openalex.list_works(client(base), openalex.candidate_filter(split))
    expected = [
        r
        for r in world.records
        if r.field == "Computer Science"
        and r.arxiv
        and "2025-01-01" <= r.publication_date <= "2025-06-30"
        and not r.openalex_references_empty
        and len(r.references) >= 10
    ]
    assert sorted(w.ids.openalex or "" for w in works) == sorted(r.openalex for r in expected)
    assert len(works) > 20


def test_openalex_search(world: W.World, base: str) -> None:
    word = world.records[10].title.split()[1]
    works = openalex.list_works(client(base), "from_publication_date:2012-01-01")
    assert works
    found = client(base).get("openalex", "/works", [("search", word)]).json()
    assert found["meta"]["count"] >= 1
    assert (
        word.lower()
        in (found["results"][0]["title"] + " ").lower()
        + str(found["results"][0]["abstract_inverted_index"]).lower()
    )


# --- S2 -----------------------------------------------------------------------------------------


def test_s2_references_page_past_1000_and_keep_null_ids(world: W.World, base: str) -> None:
    giant = max(world.records, key=lambda r: len(r.references))
    c = client(base)
    references = semanticscholar.fetch_references(c, f"CorpusId:{giant.corpus_id}")
    assert len(references) == len(giant.references) > 1000
    assert c.stats["s2"].network == 2
    unresolved = [r for r in references if r.ids.s2 is None]
    assert len(unresolved) == sum(x.null_ids for x in giant.references)
    assert all(r.title for r in unresolved)
    with_contexts = sum(1 for r in references if r.contexts)
    assert with_contexts == sum(1 for x in giant.references if x.contexts)


def test_s2_every_id_form(world: W.World, base: str) -> None:
    single = next(r for r in world.records if r.kind == "single" and r.arxiv)
    c = client(base)
    for form in (single.s2, f"CorpusId:{single.corpus_id}", single.doi, f"arXiv:{single.arxiv}"):
        assert semanticscholar.fetch_paper(c, form).ids.s2 == single.s2, form


def test_s2_batch_limits(world: W.World, base: str) -> None:
    c = client(base)
    wanted = [f"CorpusId:{r.corpus_id}" for r in world.records[:600]] + ["CorpusId:1"]
    found = semanticscholar.fetch_papers(c, wanted)
    assert c.stats["s2"].network == 2
    assert found["CorpusId:1"] is None and sum(p is not None for p in found.values()) == 600
    too_many = {"ids": [f"CorpusId:{i}" for i in range(501)]}
    with pytest.raises(http.BadRequest, match="500"):
        c.get("s2", "/paper/batch", json_body=too_many, method="POST")


# --- arXiv --------------------------------------------------------------------------------------


def test_arxiv_lookups_and_errors(world: W.World, base: str) -> None:
    with_versions = next(r for r in world.records if r.arxiv and len(r.arxiv_versions) > 1)
    c = client(base)
    paper = arxiv.fetch_record(c, with_versions.arxiv or "")
    assert paper.versions is not None
    assert str(arxiv.v1_date(paper)) == with_versions.arxiv_versions[0][1]
    assert paper.versions[-1].version == len(with_versions.arxiv_versions)
    with pytest.raises(http.BadRequest, match="incorrect id format for abc"):
        arxiv.query(c, ["abc"])
    with pytest.raises(http.NotFound):
        arxiv.lookup(c, "2601.99999")
    many = [r.arxiv or "" for r in world.records if r.arxiv][:150]
    assert sum(p is not None for p in arxiv.fetch_records(c, many).values()) == 150


# --- rate limits: every answer ------------------------------------------------------------------


def test_openalex_403_above_its_rate(world: W.World) -> None:
    config = S.SandboxConfig(openalex_rps=5, time_scale=1)
    with S.running(world, config) as url:
        c = client(url, openalex_rps=100, http_max_retries=8, http_backoff_s=0.05)
        for record in world.records[:12]:
            assert openalex.fetch_work(c, record.openalex).ids.openalex == record.openalex
        assert stats(url).get("openalex 403", 0) > 0
    assert c.stats["openalex"].retries > 0


def test_openalex_429_when_the_daily_budget_is_spent(world: W.World) -> None:
    config = S.SandboxConfig(openalex_daily_list_calls=2, time_scale=1000)
    with S.running(world, config) as url:
        # The Retry-After is the scaled time to midnight UTC, never under 1 s: with a longest
        # honoured wait under 1 s the answer fails at once, whatever the hour (with 5 s it was
        # honoured, and retried, in the last 83 minutes of each UTC day).
        c = client(url, http_max_wait_s=0.5)
        for _ in range(2):
            c.get("openalex", "/works", [("per_page", "1")])
        with pytest.raises(http.RetriesExhausted, match="asks to wait"):
            c.get("openalex", "/works", [("per_page", "2")])
        assert stats(url)["openalex 429"] == 1


def test_s2_429_and_arxiv_503_above_their_rates(world: W.World) -> None:
    config = S.SandboxConfig(s2_rps=1, arxiv_interval_s=3, time_scale=20)
    with S.running(world, config) as url:
        # A second request within a window (45 ms for S2, 135 ms for arXiv) is refused. S2's
        # go four at a time, 11 ms apart: one after another, a loaded machine's round trips
        # could space five of them past 45 ms. arXiv's go one at a time (its client's rule),
        # up to 50, so that a few slow round trips cannot space them all apart.
        greedy = client(url, http_max_retries=0, concurrency=4)
        with pytest.raises(http.RetriesExhausted, match="status 429"):
            greedy.at_once(lambda r: semanticscholar.fetch_paper(greedy, r.s2), world.records[:50])
        with pytest.raises(http.RetriesExhausted, match="status 503"):
            for record in [r for r in world.records if r.arxiv][:50]:
                arxiv.fetch_record(greedy, record.arxiv or "")
        time.sleep(0.3)  # let the greedy client's last accepted calls leave the windows
        # Half the allowed rate: arrival jitter on a loaded machine must not look like a burst.
        polite = client(url, s2_rps=10, arxiv_interval_s=0.3)
        for record in [r for r in world.records if r.arxiv][:4]:
            semanticscholar.fetch_paper(polite, record.s2)
            arxiv.fetch_record(polite, record.arxiv or "")
        assert polite.stats["s2"].retries == 0 and polite.stats["arxiv"].retries == 0


# --- faults: every kind -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", S.FAULT_KINDS)
def test_each_fault_kind_is_survived_by_retries(world: W.World, kind: str) -> None:
    config = S.SandboxConfig(
        fault_rate=0.3, fault_kinds=(kind,), slow_s=1.0, time_scale=1000, seed=5
    )
    wanted = [r.openalex for r in world.records[:30]]
    with S.running(world, config) as url:
        c = client(url, http_timeout_s=0.5 if kind == "slow" else 5, http_max_retries=8)
        papers = [openalex.fetch_work(c, w) for w in wanted]
        counts = stats(url)
    assert [p.ids.openalex for p in papers] == wanted
    assert counts.get(f"fault {kind}", 0) > 0
    if kind != "slow":  # a slow answer may still arrive in time
        assert c.stats["openalex"].retries == counts[f"fault {kind}"]


def test_faults_are_deterministic_by_seed(world: W.World) -> None:
    def fault_sequence(seed: int) -> list[object]:
        sandbox = S.Sandbox(world, S.SandboxConfig(fault_rate=0.5, seed=seed))
        return [sandbox.fault() for _ in range(40)]

    assert fault_sequence(1) == fault_sequence(1) != fault_sequence(2)


def test_stats_can_be_reset(base: str) -> None:
    client(base).get("openalex", "/works", [("per_page", "1")])
    assert stats(base)["openalex 200"] >= 1
    httpx.post(base + "/_sandbox/reset")
    assert stats(base) == {}


def test_every_answer_says_it_is_a_sandbox(world: W.World, base: str) -> None:
    record = world.records[0]
    work = httpx.get(f"{base}/works/{record.openalex}")
    assert work.headers["X-Inspire-Sandbox"] == "1"
    assert work.json()["indexed_in"] == ["inspire-sandbox"]
    paper = httpx.get(f"{base}/graph/v1/paper/{record.s2}", params={"fields": "url"}).json()
    assert "inspire-sandbox" in paper["url"]
    models = httpx.get(f"{base}/v1/models").json()["data"]
    assert all("sandbox" in m["id"] for m in models)


def test_env_lines_point_every_source_at_the_sandbox() -> None:
    lines = S.env_lines("http://127.0.0.1:9", time_scale=10)
    assert "INSPIRE_OPENALEX_URL=http://127.0.0.1:9" in lines
    assert "INSPIRE_S2_URL=http://127.0.0.1:9/graph/v1" in lines
    assert "INSPIRE_ARXIV_INTERVAL_S=0.3" in lines and "INSPIRE_S2_RPS=10" in lines
