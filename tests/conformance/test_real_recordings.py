"""Real recorded API responses (REAL: tests/conftest.py says where), imported with `inspire
snapshot import` and replayed through the real fetch code. Every assertion names a fact of the
recording."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from inspire_build import http, warehouse
from inspire_build.config import Settings
from inspire_build.http import HttpClient
from inspire_build.sources import arxiv, make_client, openalex, semanticscholar
from tests.conformance.conftest import REAL
from tests.conftest import run_inspire


def inspire(*args: str) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args)


@pytest.fixture(scope="session")
def imported(tmp_path_factory: pytest.TempPathFactory, real_recordings: Path) -> Path:
    path = tmp_path_factory.mktemp("conformance") / "real.duckdb"
    assert inspire("warehouse", "init", "--warehouse", str(path)).returncode == 0
    result = inspire("snapshot", "import", str(REAL), "--warehouse", str(path))
    assert result.returncode == 0, result.stderr
    assert "arxiv 18, openalex 40, s2 7" in result.stdout
    return path


@pytest.fixture
def replay(imported: Path) -> Iterator[HttpClient]:
    con = duckdb.connect(str(imported), read_only=True)
    yield make_client(Settings(), con, mode="replay")
    con.close()


def test_gpt1_references_through_the_cli(imported: Path) -> None:
    result = inspire(
        "fetch",
        "references",
        "CorpusID:49313245",
        "--source",
        "s2",
        "--offline",
        "--json",
        "--warehouse",
        str(imported),
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 73
    assert sum(1 for line in lines if line["contexts"]) == 61
    assert sum(1 for line in lines if line["is_influential"]) == 7
    assert sum(1 for line in lines if not line["resolved"]) == 3
    assert sum(1 for line in lines if "arxiv" in line["ids"]) == 38
    for line in lines:
        assert {
            "title",
            "year",
            "publication_date",
            "ids",
            "resolved",
            "contexts",
            "intents",
            "is_influential",
        } <= set(line)
        assert "" not in (line["title"], line["publication_date"])
    first = lines[0]
    assert first["title"] == "Constituency Parsing with a Self-Attentive Encoder"
    assert first["ids"]["arxiv"] == "1805.01052" and first["publication_date"] == "2018-05-02"
    unresolved = [line for line in lines if not line["resolved"]]
    assert all(line["ids"].get("s2") is None and line["title"] for line in unresolved)


def test_cited_by_query_yields_its_38_works(replay: HttpClient) -> None:
    works = openalex.list_works(replay, "cited_by:W3046863325|W3045921891")
    assert len(works) == 38
    assert sum(1 for w in works if w.abstract) == 30
    assert sum(1 for w in works if w.referenced_works) == 33
    late = [w for w in works if w.publication_date and w.publication_date.year == 2025]
    assert [(w.ids.openalex, str(w.publication_date)) for w in late] == [
        ("W2153579005", "2025-01-01")  # cited by 2020 papers, and kept as recorded
    ]
    assert replay.stats["openalex"].network == 0 and replay.stats["openalex"].from_store == 1


def _single_works() -> list[Any]:
    """One case per recording; without them one case, which the recordings' gate skips (or
    fails under CI) naming what is missing, as it does every test here."""
    found = sorted((REAL / "openalex" / "single_works").glob("*.yaml"))
    return [pytest.param(p, id=p.stem) for p in found] or [pytest.param(None, id="none")]


@pytest.mark.parametrize("cassette", _single_works())
def test_single_work_replays_through_the_cli(imported: Path, cassette: Path) -> None:
    from typer.testing import CliRunner

    from inspire_build.cli import app

    interaction = yaml.safe_load(cassette.read_text())["interactions"][0]
    doi = interaction["request"]["uri"].split("/works/", 1)[1]
    recorded = json.loads(interaction["response"]["body"]["string"])
    result = CliRunner().invoke(
        app,
        [
            "fetch",
            "paper",
            doi,
            "--source",
            "openalex",
            "--offline",
            "--json",
            "--warehouse",
            str(imported),
        ],
    )
    assert result.exit_code == 0, result.output
    line = json.loads(result.stdout)
    assert line["title"] == (recorded["title"] or None)  # an empty title is reported as null
    assert line["publication_date"] == recorded["publication_date"]
    assert len(line["referenced_works"]) == len(recorded["referenced_works"])
    assert line["ids"]["openalex"] == recorded["id"].rsplit("/", 1)[1]


def test_doi_url_and_doi_prefix_name_one_resource(replay: HttpClient) -> None:
    by_url = openalex.fetch_work(replay, "https://doi.org/10.1371/journal.pone.0000030")
    by_prefix = replay.get("openalex", "/works/doi:10.1371/journal.pone.0000030")
    assert by_url.ids.openalex == "W1982728624"
    assert by_prefix.from_store and by_prefix.json()["id"] == "https://openalex.org/W1982728624"


def test_arxiv_version_dates_are_parsed() -> None:
    fixture = json.loads((REAL / "arxiv" / "q_testing_s0_m10_bc5a6c384fe9.json").read_text())
    papers = {p.ids.arxiv: p for p in arxiv.parse_feed(fixture["body"].encode("latin-1"))}
    assert len(papers) == 10
    versions = papers["2005.14124"].versions
    assert versions is not None
    assert [(v.version, str(v.date)) for v in versions] == [(1, "2020-05-28"), (2, "2020-07-16")]
    assert [(v.version, str(v.date)) for v in papers["2204.08348"].versions or ()] == [
        (1, "2022-04-18"),
        (3, "2022-07-06"),
    ]


def test_arxiv_lookup_by_id_replays(replay: HttpClient) -> None:
    paper = arxiv.fetch_record(replay, "arXiv:1707.08567v1")
    assert (
        paper.title
        == "Proceedings of Workshop AEW10: Concepts in Information Theory and Communications"
    )
    assert str(arxiv.v1_date(paper)) == "2017-07-27" and paper.fields == ("cs.IT",)
    assert len(paper.authors) == 34 and paper.authors[-1] == "Hirosuke Yamamoto"
    old = arxiv.fetch_record(replay, "astro-ph/0601001")
    assert str(old.publication_date) == "2006-01-02" and old.venue == "ActaAstron.56:1-50,2006"


def test_arxiv_invalid_id_is_a_clear_error(replay: HttpClient) -> None:
    with pytest.raises(http.BadRequest, match="incorrect id format for abc"):
        arxiv.query(replay, ["abc"])


def test_arxiv_empty_result_is_not_found(replay: HttpClient) -> None:
    assert arxiv.query(replay, ["0000.0000"]) == []
    with pytest.raises(http.NotFound, match="not found"):
        arxiv.lookup(replay, "0000.0000")


def test_openalex_400_and_401_bodies_become_typed_errors(replay: HttpClient) -> None:
    with pytest.raises(http.BadRequest) as bad_filter:
        openalex.list_works(replay, "DOESNTEXIST:1")
    assert bad_filter.value.status == 400
    assert bad_filter.value.server_message.startswith(
        "Invalid query parameters error.: DOESNTEXIST is not a valid field."
    )
    with pytest.raises(http.BadRequest, match="DOESNTEXIST"):
        replay.get("openalex", "/works/W1775749144", [("select", "DOESNTEXIST")])
    with pytest.raises(http.Unauthorized) as unauthorized:
        replay.get("openalex", "/rate-limit")
    assert unauthorized.value.server_message == "Invalid or missing API key: API key not found"


def test_s2_error_bodies_become_typed_errors(replay: HttpClient) -> None:
    with pytest.raises(http.NotFound, match="Author with id 0 not found"):
        replay.get("s2", "/author/0", [("fields", _fields_of("test_not_found.yaml"))])
    with pytest.raises(http.BadRequest, match=r"Unrecognized or unsupported fields: \[unknown\]"):
        replay.get("s2", "/paper/10.1093/mind/lix.236.433", [("fields", "unknown")])


def _fields_of(cassette: str) -> str:
    data = yaml.safe_load((REAL / "semanticscholar" / cassette).read_text())
    uri = data["interactions"][0]["request"]["uri"]
    return uri.split("fields=", 1)[1].split("&", 1)[0]


def test_s2_batch_replays_with_a_not_found_entry(replay: HttpClient) -> None:
    data = yaml.safe_load((REAL / "semanticscholar" / "paper_batch_not_found.yaml").read_text())
    requested = json.loads(data["interactions"][0]["request"]["body"])["ids"]
    found = semanticscholar.fetch_papers(replay, requested)
    assert len(found) == 4
    assert sum(1 for paper in found.values() if paper is None) == 1


def test_reimport_is_idempotent(imported: Path) -> None:
    before = duckdb.connect(str(imported), read_only=True)
    count = before.execute("SELECT count(*), sum(hash(body)) FROM raw_http").fetchone()
    before.close()
    assert inspire("snapshot", "import", str(REAL), "--warehouse", str(imported)).returncode == 0
    after = warehouse.connect(imported, read_only=True)
    assert after.execute("SELECT count(*), sum(hash(body)) FROM raw_http").fetchone() == count
    after.close()


def test_gpt1_lineage_with_a_given_target_date(imported: Path) -> None:
    """Replaying the S2 list with the target date 2018-06-11, so the cutoff is 2018-03-11.

    Counted by hand from references_gpt1_corpusid_49313245.yaml:
    - 2 unresolved: null paperId, null corpusId, null externalIds ("Corpus of linguistic
      acceptability", "Opportunities and challenges in working with low-resource languages");
    - 1 no_date: "and P", which has a corpusId but neither publicationDate nor year;
    - 7 after_cutoff, dated 2018-03-15, 03-24, 04-17, 04-20, 04-21, 04-27 and 05-02, all on or
      after the cutoff and none after the target;
    - 63 eligible: the remaining 61 - 7 = 54 with a publicationDate before 2018-03-11, and 9
      with a year only, all 2017 or earlier.
    """
    result = inspire(
        "lineage",
        "show",
        "CorpusID:49313245",
        "--target-date",
        "2018-06-11",
        "--sources",
        "s2",
        "--offline",
        "--json",
        "--warehouse",
        str(imported),
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 73
    statuses: dict[str, int] = {}
    for line in lines:
        statuses[line["status"]] = statuses.get(line["status"], 0) + 1
    assert statuses == {"eligible": 63, "after_cutoff": 7, "unresolved": 2, "no_date": 1}
    assert sum(statuses.values()) == 73
    late = sorted(line["first_public_date"] for line in lines if line["status"] == "after_cutoff")
    assert late == [
        "2018-03-15",
        "2018-03-24",
        "2018-04-17",
        "2018-04-20",
        "2018-04-21",
        "2018-04-27",
        "2018-05-02",
    ]
    year_only = [line for line in lines if line["date_precision"] == "year"]
    assert len(year_only) == 9 and all(line["status"] == "eligible" for line in year_only)
    # --json keeps standard output to JSON lines: the heading is on standard error
    assert "# corpusid:49313245: first public 2018-06-11, cutoff 2018-03-11" in result.stderr
    assert all(line.startswith("{") for line in result.stdout.splitlines())


def _gpt1_in_pages(folder: Path, size: int) -> Path:
    """The real GPT-1 reference list, re-cut into pages of ``size`` chained by offset and next,
    as a client that pages by ``size`` would have recorded it."""
    source = REAL / "semanticscholar" / "references_gpt1_corpusid_49313245.yaml"
    cassette = yaml.safe_load(source.read_text(encoding="utf-8"))
    [interaction] = cassette["interactions"]
    items = json.loads(interaction["response"]["content"])["data"]
    uri = str(interaction["request"]["uri"]).replace("&offset=0&limit=100", "")
    pages = []
    for offset in range(0, len(items), size):
        page: dict[str, object] = {"offset": offset, "data": items[offset : offset + size]}
        if offset + size < len(items):
            page["next"] = offset + size
        pages.append(
            {
                "request": {**interaction["request"], "uri": f"{uri}&offset={offset}&limit={size}"},
                "response": {**interaction["response"], "content": json.dumps(page)},
            }
        )
    path = folder / f"references_gpt1_pages_of_{size}.yaml"
    path.write_text(yaml.safe_dump({**cassette, "interactions": pages}), encoding="utf-8")
    return path


def test_a_reference_list_recorded_in_pages_of_20_replays_for_a_client_asking_1000(
    tmp_path: Path, imported: Path
) -> None:
    path = tmp_path / "paged.duckdb"
    assert inspire("warehouse", "init", "--warehouse", str(path)).returncode == 0
    result = inspire(
        "snapshot", "import", str(_gpt1_in_pages(tmp_path, 20)), "--warehouse", str(path)
    )
    assert result.returncode == 0, result.stderr
    fetched = [
        inspire(
            "fetch", "references", "CorpusID:49313245", "--source", "s2", "--offline", "--json",
            "--warehouse", str(where),
        )
        for where in (path, imported)
    ]  # fmt: skip
    for done in fetched:
        assert done.returncode == 0, done.stderr
    paged, whole = (done.stdout.splitlines() for done in fetched)
    assert len(paged) == 73 and paged == whole  # the same 73 references, in the same order
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT count(*), max(page_size) FROM raw_http").fetchone() == (4, 20)
    con.close()
