"""`make record-fixtures`: the conformance tests' recordings, asked again of the live APIs.

The recordings that tests/conformance/ replays are answers that the real OpenAlex, Semantic
Scholar and arXiv APIs gave. They stay outside the repository, in the ``real/`` folder of the
folder that INSPIRE_SHARED_FIXTURES names (else the folder CI lays beside the clone:
tests/conftest.py). This asks the same requests again and writes each answer in the layout of
the file it renews, so the same tests and ``inspire snapshot import`` read them:

- ``semanticscholar/*.yaml``: vcrpy cassettes, old layout (``response.content``,
  ``status_code``); ``paper_batch_not_found.yaml`` and ``openalex/single_works/*.yaml`` in the
  new one (``response.body.string``, ``status.code``);
- ``openalex/*.yml``: R ``vcr`` cassettes (``http_interactions``, ``body.string``);
- ``arxiv/*.json``: ``{url, status_code, body}``, the body stored latin-1 decoded, each file named
  by its query, start, page size and the first 12 hex digits of its URL's SHA-256.

Not recorded: the published samples (``s2-datasets/``, ``unarxive/``) and the three S2 records
that are bodies without their requests; they are no API's answer to a request we can repeat.
The tests that ingest the S2 samples skip without them (fail under CI).

Keys come from the environment only, through Settings (INSPIRE_OPENALEX_API_KEY and
INSPIRE_S2_API_KEY, required; INSPIRE_CONTACT_EMAIL, sent as OpenAlex's ``mailto`` when set),
and every request goes through http.py, which keeps them out of URLs, logs and bodies written
here. Nothing is written unless every request was answered: the files go to ``real.partial``
and are moved to ``real`` at the end, and an existing ``real`` is never rewritten.

The live APIs' answers change (new citing works, re-dated records), so a fresh recording may
not hold the facts the tests pin, which are CI's recordings' facts.

Run: make record-fixtures [INTO=/a/folder/outside/the/clone]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import http as http_status
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import yaml

from inspire_build.config import Settings, get_settings
from inspire_build.errors import InputError, InspireError
from inspire_build.http import HttpClient, SourceError
from inspire_build.sources import CODECS, make_client

Layout = Literal["vcrpy-old", "vcrpy", "r-vcr", "arxiv"]
Params = tuple[tuple[str, str], ...]

# The fields the recorded S2 requests asked for, as they asked.
S2_PAPER_FIELDS = (
    "abstract,authors,citationCount,citationStyles,corpusId,externalIds,fieldsOfStudy,"
    "influentialCitationCount,isOpenAccess,journal,openAccessPdf,paperId,publicationDate,"
    "publicationTypes,publicationVenue,referenceCount,s2FieldsOfStudy,title,url,venue,year"
)
S2_REFERENCE_FIELDS = "contexts,intents,contextsWithIntent,isInfluential," + S2_PAPER_FIELDS
_AUTHOR = "affiliations,authorId,citationCount,externalIds,hIndex,homepage,name,paperCount"
# What test_not_found.yaml asked of an author (their papers without citation styles) and of a
# paper (everything, nested lists included), in the order it asked.
S2_AUTHOR_FIELDS = ",".join(
    [
        *_AUTHOR.split(","),
        "papers",
        *(f"papers.{f}" for f in S2_PAPER_FIELDS.split(",") if f != "citationStyles"),
        "url",
    ]
)
S2_FULL_PAPER_FIELDS = ",".join(
    sorted(
        {
            *S2_PAPER_FIELDS.split(","),
            *("citations", "references", "embedding", "tldr"),
            *(f"authors.{f}" for f in [*_AUTHOR.split(","), "aliases", "url"]),
            *(
                f"{nested}.{f}"
                for nested in ("citations", "references")
                for f in S2_PAPER_FIELDS.split(",")
            ),
        }
    )
)
SEEDS = "W3045921891|W3046863325"  # two OpenAlex works, each cited and citing
SEEDS_REVERSED = "W3046863325|W3045921891"
ARXIV_IDS = (
    ("0000.0000",),  # a well-formed ID of nothing: an empty feed
    ("0808.05394", "1707.08567"),
    ("0808.05394",),
    ("1605.08386",),
    ("1707.08567",),
    ("abc",),  # not an ID: a 400
    ("astro-ph/0601001",),  # an old-style ID
    ("quant-ph/0201082v1",),  # an old-style ID with its version
)
# The search "testing", (start, page size): pages that overlap, as a client paging by 10 or 15.
ARXIV_SEARCH_PAGES: tuple[tuple[int, int], ...] = (
    (0, 10), (0, 15), (10, 10), (20, 10), (30, 10), (40, 10), (50, 10), (5, 10), (5, 15), (9, 15),
)  # fmt: skip
# openalex/single_works/<name>.yaml: one lookup by DOI each (three are one book, asked thrice).
SINGLE_WORKS = {
    "test_another_book_chapter": "10.1007/978-3-319-75889-3_1",
    "test_blog_post": "10.53731/ybhah-9jy85",
    "test_book": "10.1017/9781108348843",
    "test_book_chapter": "10.1007/978-3-662-46370-3_13",
    "test_book_chapter_with_rdf_for_container": "10.1007/978-3-642-33191-6_49",
    "test_component": "10.1371/journal.pmed.0030277.g001",
    "test_dataset": "10.2210/pdb4hhb/pdb",
    "test_dataset_usda": "10.2737/rds-2018-0001",
    "test_dissertation": "10.14264/uql.2020.791",
    "test_doi_with_data_citation": "10.7554/elife.01567",
    "test_doi_with_orcid": "10.1155/2012/291294",
    "test_doi_with_sici": "10.1890/0012-9658(2006)87%5B2832:tiopma%5D2.0.co;2",
    "test_get_openalex": "10.1017/9781108348843",
    "test_journal_article": "10.1371/journal.pone.0000030",
    "test_journal_article_original_language": "10.7600/jspfsm.56.60",
    "test_journal_article_with_funding": "10.3389/fpls.2019.00816",
    "test_journal_article_with_rdf_for_container": "10.1163/1937240x-00002096",
    "test_missing_contributor": "10.3390/publications6020015",
    "test_missing_contributor_name": "10.14264/3e10f66",
    "test_multipe_titles": "10.1007/s00120-007-1345-2",
    "test_peer_review": "10.7554/elife.55167.sa2",
    "test_read_openalex": "10.1017/9781108348843",
    "test_too_many_contributor_names": "10.3934/nhm.2009.4.249",
    "test_vor_with_url": "10.1038/hdy.2013.26",
    "test_yet_another_book_chapter": "10.4018/978-1-4666-1891-6.ch004",
}
# A key that is no key: the recorded 401 is OpenAlex's answer to it.
NOT_A_KEY = "<api-key>"
# Keys a recording needs (Settings field -> its variable).
REQUIRED_KEYS = {
    "openalex_api_key": "INSPIRE_OPENALEX_API_KEY",
    "s2_api_key": "INSPIRE_S2_API_KEY",
}
BASE_URL_VARIABLES = {
    "openalex": ("openalex_url", "INSPIRE_OPENALEX_URL"),
    "s2": ("s2_url", "INSPIRE_S2_URL"),
    "arxiv": ("arxiv_url", "INSPIRE_ARXIV_URL"),
}
NOT_RECORDED = (
    "s2-datasets/ and unarxive/ (samples their providers published)",
    "semanticscholar/{reference,citation}_record.json, paper_with_1000_citations.json "
    "(bodies without their requests)",
)
# Answer headers that describe the bytes on the wire, not the decoded body written here.
WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


# --- what is asked ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Ask:
    """One request, as the sources' client takes it."""

    source: str
    path: str
    params: Params = ()
    method: str = "GET"
    json_body: Any = None
    # Sent with the user's keys; False: with none (the recorded 401 answers a key that is no key).
    keyed: bool = True
    # Asks for the page after the previous answer's (OpenAlex's ``meta.next_cursor``); not
    # asked when that answer names none.
    follows: bool = False


@dataclasses.dataclass(frozen=True)
class Recording:
    """One file of ``real/``: its path there (an arXiv file's name comes from its URL: None)."""

    folder: str
    name: str | None
    layout: Layout
    asks: tuple[Ask, ...]


def _works(*params: tuple[str, str], follows: bool = False) -> Ask:
    return Ask("openalex", "/works", tuple(params), follows=follows)


def _arxiv(search: str, ids: Sequence[str], start: int, size: int) -> Recording:
    params = (
        ("search_query", search), ("id_list", ",".join(ids)), ("sortBy", "relevance"),
        ("sortOrder", "descending"), ("start", str(start)), ("max_results", str(size)),
    )  # fmt: skip
    return Recording("arxiv", None, "arxiv", (Ask("arxiv", "", params),))


def _s2(name: str, layout: Layout, *asks: Ask) -> Recording:
    return Recording("semanticscholar", name, layout, asks)


def plan() -> list[Recording]:
    """Every recording the conformance tests replay, with the requests that made it."""
    snowball = tuple(
        ask
        for kind, seeds in (
            ("openalex", SEEDS),
            ("cites", SEEDS_REVERSED),
            ("cited_by", SEEDS_REVERSED),
        )
        for ask in (
            _works(("filter", f"{kind}:{seeds}"), ("per-page", "1")),
            _works(("filter", f"{kind}:{seeds}"), ("per-page", "200"), ("cursor", "*")),
        )
    )
    bad_select = Ask("openalex", "/works/W1775749144", (("select", "DOESNTEXIST"),))
    seeds_page = _works(("filter", f"openalex:{SEEDS}"), ("per_page", "200"), ("cursor", "*"))
    openalex = [
        Recording(
            "openalex", "api_call_200.yml", "r-vcr", (Ask("openalex", "/works/W4234567890"),)
        ),
        Recording("openalex", "oa_snowball.yml", "r-vcr", snowball),
        Recording(
            "openalex",
            "pro_rate_limit_status_401.yml",
            "r-vcr",
            (Ask("openalex", "/rate-limit", (("api_key", NOT_A_KEY),), keyed=False),),
        ),
        Recording(
            "openalex",
            "pro_request_single_identifier.yml",
            "r-vcr",
            (
                Ask("openalex", "/works/W2162348455", (("per_page", "200"), ("cursor", "*"))),
                bad_select,
            ),
        ),
        Recording(
            "openalex",
            "pro_snowball.yml",
            "r-vcr",
            (
                _works(("filter", "DOESNTEXIST:1")),
                bad_select,
                seeds_page,
                seeds_page,
                _works(("filter", f"openalex:{SEEDS}"), ("per_page", "200"), follows=True),
            ),
        ),
    ]
    openalex += [
        Recording(
            "openalex/single_works",
            f"{name}.yaml",
            "vcrpy",
            (Ask("openalex", f"/works/https://doi.org/{doi}"),),
        )
        for name, doi in SINGLE_WORKS.items()
    ]
    batch = (("fields", S2_PAPER_FIELDS),)
    three = ["CorpusId:470667", "10.2139/ssrn.2250500", "0f40b1f08821e22e859c6050916cec3667778613"]
    s2 = [
        _s2(
            "references_gpt1_corpusid_49313245.yaml",
            "vcrpy-old",
            Ask(
                "s2",
                "/paper/CorpusID:49313245/references",
                (("fields", S2_REFERENCE_FIELDS), ("offset", "0"), ("limit", "100")),
            ),
        ),
        _s2(
            "paper_batch_3ids.yaml",
            "vcrpy-old",
            Ask("s2", "/paper/batch", batch, "POST", {"ids": three}),
        ),
        _s2(
            "paper_batch_not_found.yaml",
            "vcrpy",
            Ask("s2", "/paper/batch", batch, "POST", {"ids": ["CorpusId:211530585", *three]}),
        ),
        _s2(
            "test_not_found.yaml",
            "vcrpy-old",
            Ask("s2", "/author/0", (("fields", S2_AUTHOR_FIELDS),)),
            Ask("s2", "/paper/0", (("fields", S2_FULL_PAPER_FIELDS),)),
        ),
        _s2(
            "test_bad_query_parameters.yaml",
            "vcrpy-old",
            Ask("s2", "/paper/10.1093/mind/lix.236.433", (("fields", "unknown"),)),
        ),
        _s2(
            "test_empty_paginated_results.yaml",
            "vcrpy-old",
            Ask(
                "s2",
                "/paper/search",
                (
                    ("query", "n0 r3sult s3arch t3rm"),
                    ("fields", S2_PAPER_FIELDS),
                    ("offset", "0"),
                    ("limit", "100"),
                ),
            ),
        ),
    ]
    arxiv = [_arxiv("", ids, 0, 100) for ids in ARXIV_IDS]
    arxiv += [_arxiv("testing", (), start, size) for start, size in ARXIV_SEARCH_PAGES]
    return [*openalex, *s2, *arxiv]


# --- what is written ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Answer:
    """One recorded interaction: the request as sent (keys left out) and the answer."""

    method: str
    url: str
    request_body: bytes | None
    status: int
    headers: dict[str, str]
    body: bytes
    recorded_at: dt.datetime


def arxiv_file_name(url: str) -> str:
    """``id_<ids>_s<start>_m<size>_<hash>.json`` or ``q_<query>_s..``: the IDs (a ``/`` as
    ``_``) or the search query, then the page, then the URL's SHA-256, 12 hex digits."""
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    ids = [i for i in query.get("id_list", "").split(",") if i]
    asked = (
        "id_" + "_".join(i.replace("/", "_") for i in ids) if ids else "q_" + query["search_query"]
    )
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return f"{asked}_s{query.get('start', '0')}_m{query.get('max_results', '10')}_{digest}.json"


def file_name(recording: Recording, answers: Sequence[Answer]) -> str:
    """Where ``recording`` goes under ``real/``."""
    name = recording.name or arxiv_file_name(answers[0].url)
    return f"{recording.folder}/{name}"


def _text(body: bytes, where: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InspireError(f"{where}: the answer is not UTF-8 text ({error.reason})") from error


def _headers(answer: Answer) -> dict[str, str]:
    return {k: v for k, v in answer.headers.items() if k.lower() not in WIRE_HEADERS}


def render(recording: Recording, answers: Sequence[Answer]) -> str:
    """The file's text, in the layout of the recording it renews."""
    where = file_name(recording, answers)
    if recording.layout == "arxiv":
        [answer] = answers
        document = {
            "url": answer.url,
            "status_code": answer.status,
            "body": answer.body.decode("latin-1"),
        }
        return json.dumps(document, indent=2) + "\n"
    if recording.layout == "r-vcr":
        data: dict[str, Any] = {
            "http_interactions": [
                {
                    "request": {
                        "method": a.method,
                        "uri": a.url,
                        **(
                            {"body": {"string": _text(a.request_body, where)}}
                            if a.request_body
                            else {}
                        ),
                    },
                    "response": {
                        "status": a.status,
                        "headers": _headers(a),
                        "body": {"string": _text(a.body, where)},
                    },
                    "recorded_at": a.recorded_at.strftime("%Y-%m-%d %H:%M:%S"),
                }
                for a in answers
            ],
            "recorded_with": "inspire-build record-fixtures",
        }
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    interactions = []
    for a in answers:
        request_body = _text(a.request_body, where) if a.request_body else None
        headers = {k: [v] for k, v in _headers(a).items()}
        if recording.layout == "vcrpy-old":
            response: dict[str, Any] = {
                "content": _text(a.body, where),
                "headers": headers,
                "http_version": "HTTP/1.1",
                "status_code": a.status,
            }
            request_body = request_body or ""
        else:
            response = {
                "body": {"string": _text(a.body, where)},
                "headers": headers,
                "status": {"code": a.status, "message": _phrase(a.status)},
            }
        request: dict[str, Any] = {"body": request_body, "headers": {}, "method": a.method}
        request["uri"] = a.url
        interactions.append({"request": request, "response": response})
    return yaml.safe_dump(
        {"interactions": interactions, "version": 1}, sort_keys=False, allow_unicode=True
    )


def _phrase(status: int) -> str:
    try:
        return http_status.HTTPStatus(status).phrase
    except ValueError:
        return ""


# --- asking -------------------------------------------------------------------------------------


def problems(settings: Settings, into: Path, repository: Path) -> list[str]:
    """Why a recording cannot start, each on a line; none: it can. Asks nothing of any API."""
    found = [
        f"{variable} is not set (a recording asks the live API with the user's own key)"
        for field, variable in REQUIRED_KEYS.items()
        if getattr(settings, field) is None
    ]
    for source, (field, variable) in BASE_URL_VARIABLES.items():
        configured, live = getattr(settings, field).rstrip("/"), CODECS[source].default_base_url
        if configured != live:
            found.append(f"{variable} points at {configured}, not the live API ({live}): unset it")
    where = into.resolve()
    if where == repository.resolve() or repository.resolve() in where.parents:
        found.append(f"{where} is inside the repository; the recordings stay outside it")
    if (into / "real").exists():
        found.append(
            f"{into / 'real'} exists; recordings are never rewritten in place: move it away, or "
            "record into another folder (INTO=...)"
        )
    return found


def keyless(settings: Settings) -> Settings:
    """The same settings without any key or contact email."""
    return settings.model_copy(
        update={"openalex_api_key": None, "s2_api_key": None, "contact_email": None}
    )


def record(
    clients: Callable[[bool], HttpClient],
    into: Path,
    recordings: Sequence[Recording],
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    said: Callable[[str], None] = lambda _line: None,
) -> list[Path]:
    """Ask every recording's requests (``clients(keyed)`` sends them) and write ``into/real``.

    Everything is written to ``real.partial`` first and moved to ``real`` once every request
    was answered; a failure leaves nothing behind and raises, naming the recording."""
    partial, real = into / "real.partial", into / "real"
    if real.exists():
        raise InputError(f"{real} exists; recordings are never rewritten in place")
    shutil.rmtree(partial, ignore_errors=True)
    written = []
    try:
        for recording in recordings:
            answers = _ask_all(clients, recording, now)
            name = file_name(recording, answers)
            path = partial / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(recording, answers), encoding="utf-8")
            written.append(real / name)
            statuses = ", ".join(str(a.status) for a in answers)
            said(f"{name}: {len(answers)} answered ({statuses})")
        os.replace(partial, real)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return written


def _ask_all(
    clients: Callable[[bool], HttpClient], recording: Recording, now: Callable[[], dt.datetime]
) -> list[Answer]:
    answers: list[Answer] = []
    for ask in recording.asks:
        params = ask.params
        if ask.follows:
            cursor = (json.loads(answers[-1].body).get("meta") or {}).get("next_cursor")
            if not cursor:  # the list ended on that page: there is no page after it to ask
                continue
            params = (*params, ("cursor", str(cursor)))
        try:
            response = clients(ask.keyed).request(
                ask.source, ask.method, ask.path, params, ask.json_body
            )
        except SourceError as error:
            raise InspireError(f"{recording.folder}/{recording.name or ''}: {error}") from error
        body = json.dumps(ask.json_body).encode() if ask.json_body is not None else None
        answers.append(
            Answer(ask.method, response.url, body, response.status, dict(response.headers),
                   response.body, now())
        )  # fmt: skip
    return answers


def live_clients(settings: Settings) -> Callable[[bool], HttpClient]:
    """``clients(keyed)`` for :func:`record`: one live client with the user's keys, one with
    none. The first request goes out once, unretried, so that a machine that cannot reach
    the APIs is told so at once rather than after minutes of backing off."""
    keyed = make_client(settings, None, mode="live")
    bare = make_client(keyless(settings), None, mode="live")
    probe = make_client(settings.model_copy(update={"http_max_retries": 0}), None, mode="live")
    asked = [False]

    def clients(with_keys: bool) -> HttpClient:
        if not asked[0]:
            asked[0] = True
            return probe if with_keys else bare
        return keyed if with_keys else bare

    return clients


def main(argv: Sequence[str] | None = None) -> int:
    from tests.conftest import PROJECT_ROOT, RECORDINGS_VARIABLE, SHARED_FIXTURES

    parser = argparse.ArgumentParser(
        prog="make record-fixtures", description=__doc__.split("\n\n", 1)[0]
    )
    parser.add_argument(
        "--into",
        type=Path,
        default=SHARED_FIXTURES,
        help=f"the folder to hold real/ (default: {RECORDINGS_VARIABLE}, else CI's folder "
        "beside the clone)",
    )
    into: Path = parser.parse_args(argv).into
    try:
        settings = get_settings()
        refused = problems(settings, into, PROJECT_ROOT)
        if refused:
            for line in refused:
                print(f"record-fixtures: {line}", file=sys.stderr)
            print("record-fixtures: nothing was asked or written", file=sys.stderr)
            return 2
        recordings = plan()
        print(f"record-fixtures: {len(recordings)} files into {into / 'real'}")
        written = record(live_clients(settings), into, recordings, said=print)
    except InspireError as error:
        print(f"record-fixtures: {error}; nothing was written", file=sys.stderr)
        return error.exit_code
    print(f"record-fixtures: wrote {len(written)} files into {into / 'real'}")
    for line in NOT_RECORDED:
        print(f"record-fixtures: not recorded: {line}")
    if into.resolve() != SHARED_FIXTURES.resolve():
        print(f"record-fixtures: the tests read them with {RECORDINGS_VARIABLE}={into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
