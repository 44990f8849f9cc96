"""`make record-fixtures` asks what the recordings hold: for every file it renews, the same
requests (method, endpoint, query, body; keys and the contact email aside) in the same order,
in the file's own layout. Each arXiv file is named as the recorder names it."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import yaml

from inspire_build.snapshot import read_cassette
from inspire_build.sources import CODECS
from tests.conformance import record as R
from tests.conformance.conftest import REAL

PERSONAL = ("api_key", "mailto")


def _asked(url: str, method: str, body: bytes | None, follows: bool = False) -> tuple[object, ...]:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in PERSONAL]
    if follows:  # a cursor the page before named: its value is that day's
        query = [(k, "<the page before's>" if k == "cursor" else v) for k, v in query]
    return method, parts.path, sorted(query), json.loads(body) if body else None


def _planned(recording: R.Recording) -> list[tuple[object, ...]]:
    asked: list[tuple[object, ...]] = []
    for ask in recording.asks:
        base = urlsplit(CODECS[ask.source].default_base_url).path
        params = [*ask.params, *([("cursor", "<the page before's>")] if ask.follows else [])]
        query = sorted((k, v) for k, v in params if k not in PERSONAL)
        asked.append((ask.method, base + ask.path, query, ask.json_body))
    return asked


def test_every_renewed_file_is_asked_as_it_was_recorded() -> None:
    for recording in R.plan():
        if recording.name is None:  # an arXiv file, named by its URL: below
            continue
        path = REAL / recording.folder / recording.name
        recorded = list(read_cassette(path))
        follows = [ask.follows for ask in recording.asks]
        assert len(recorded) == len(follows), path
        pairs = zip(recorded, follows, strict=True)
        assert [_asked(i.url, i.method, i.request_body, f) for i, f in pairs] == _planned(
            recording
        ), path
        data = yaml.safe_load(path.read_text())
        response = (data.get("interactions") or data["http_interactions"])[0]["response"]
        layout = "vcrpy-old" if "content" in response else "vcrpy"
        assert recording.layout == ("r-vcr" if "http_interactions" in data else layout), path


def test_every_arxiv_file_is_asked_and_named_as_recorded() -> None:
    files = sorted((REAL / "arxiv").glob("*.json"))
    assert len(files) == 18
    recorded = {}
    for path in files:
        [interaction] = read_cassette(path)
        assert R.arxiv_file_name(interaction.url) == path.name
        recorded[path.name] = _asked(interaction.url, "GET", None)
    planned = [_planned(r)[0] for r in R.plan() if r.folder == "arxiv"]
    assert sorted(planned, key=repr) == sorted(recorded.values(), key=repr)


def test_what_is_not_recorded_is_what_holds_no_request() -> None:
    renewed = {Path(r.folder) / r.name for r in R.plan() if r.name} | {Path("arxiv")}
    held = {p.relative_to(REAL) for p in REAL.rglob("*") if p.is_file()}
    left = sorted(str(p) for p in held if p not in renewed and Path("arxiv") not in p.parents)
    assert left[:1] == ["s2-datasets/abstracts/README.txt"]
    assert [p for p in left if not p.startswith(("s2-datasets/", "unarxive/"))] == [
        "semanticscholar/citation_record.json",
        "semanticscholar/paper_with_1000_citations.json",
        "semanticscholar/reference_record.json",
    ]  # bodies without their requests, as R.NOT_RECORDED says
