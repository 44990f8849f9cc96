"""The sandbox's payloads have the real APIs' field names and JSON types.

Each comparison prints the fields that are missing or extra. Every allowed difference is listed
with its justification; any other difference fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest
import yaml

from inspire_build.sandbox import server as S
from inspire_build.sandbox import world as W
from tests.conformance.test_real_recordings import REAL

# Differences we keep on purpose, with why.
ALLOWED_OPENALEX: dict[str, str] = {}
ALLOWED_S2_PAPER: dict[str, str] = {}
ALLOWED_ARXIV: dict[str, str] = {
    "{http://arxiv.org/schemas/atom}doi": "optional in real entries: only works with a DOI have it",
    "{http://arxiv.org/schemas/atom}journal_ref": "optional in real entries; the sandbox omits it",
}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def compare(
    name: str, real: Mapping[str, Any], ours: Mapping[str, Any], allowed: Mapping[str, str]
) -> None:
    missing = sorted(set(real) - set(ours))
    extra = sorted(set(ours) - set(real))
    print(f"{name}: missing {missing or 'none'}, extra {extra or 'none'}")
    assert set(missing + extra) <= set(allowed), f"{name}: unjustified {missing + extra}"
    wrong = {
        key: (json_type(real[key]), json_type(ours[key]))
        for key in set(real) & set(ours)
        if "null" not in (json_type(real[key]), json_type(ours[key]))
        and json_type(real[key]) != json_type(ours[key])
    }
    print(f"{name}: type differences {wrong or 'none'}")
    assert not wrong


@pytest.fixture(scope="module")
def sandbox() -> Iterator[tuple[str, W.World]]:
    world = W.generate(W.WorldConfig(seed=2, papers=300))
    with S.running(world, S.SandboxConfig(time_scale=1000)) as url:
        yield url, world


def test_openalex_work(sandbox: tuple[str, W.World]) -> None:
    url, world = sandbox
    recording = yaml.safe_load((REAL / "openalex" / "oa_snowball.yml").read_text())
    page = json.loads(recording["http_interactions"][5]["response"]["body"]["string"])
    real = max(page["results"], key=len)
    record = next(r for r in world.records if r.references and r.arxiv)
    ours = httpx.get(f"{url}/works/{record.openalex}").json()
    compare("openalex work", real, ours, ALLOWED_OPENALEX)
    compare("openalex primary_topic", real["primary_topic"], ours["primary_topic"], {})
    compare("openalex authorship", real["authorships"][0], ours["authorships"][0], {})
    compare("openalex location", real["locations"][0], ours["locations"][0], {})


def _s2_recording(name: str) -> tuple[str, Any]:
    interaction = yaml.safe_load((REAL / "semanticscholar" / name).read_text())["interactions"][0]
    return interaction["request"]["uri"], json.loads(interaction["response"]["content"])


def test_s2_reference(sandbox: tuple[str, W.World]) -> None:
    url, world = sandbox
    uri, page = _s2_recording("references_gpt1_corpusid_49313245.yaml")
    fields = uri.split("fields=", 1)[1].split("&", 1)[0]
    real = next(item for item in page["data"] if item["citedPaper"]["paperId"] and item["contexts"])
    record = next(r for r in world.records if len(r.references) > 10)
    ours_page = httpx.get(
        f"{url}/graph/v1/paper/CorpusId:{record.corpus_id}/references", params={"fields": fields}
    ).json()
    ours = next(item for item in ours_page["data"] if item["citedPaper"]["paperId"])
    compare("s2 reference", real, ours, {})
    compare("s2 cited paper", real["citedPaper"], ours["citedPaper"], ALLOWED_S2_PAPER)
    compare(
        "s2 context with intent",
        real["contextsWithIntent"][0],
        next(i for i in ours_page["data"] if i["contexts"])["contextsWithIntent"][0],
        {},
    )
    unresolved_real = next(i for i in page["data"] if i["citedPaper"]["paperId"] is None)
    unresolved_ours = next((i for i in ours_page["data"] if not i["citedPaper"]["paperId"]), None)
    if unresolved_ours is not None:
        compare("s2 unresolved", unresolved_real["citedPaper"], unresolved_ours["citedPaper"], {})


def test_s2_batch_entry(sandbox: tuple[str, W.World]) -> None:
    url, world = sandbox
    uri, entries = _s2_recording("paper_batch_3ids.yaml")
    fields = uri.split("fields=", 1)[1]
    ours = httpx.post(
        f"{url}/graph/v1/paper/batch",
        params={"fields": fields},
        json={"ids": [world.records[0].s2, "CorpusId:1"]},
    ).json()
    assert ours[1] is None  # an unknown ID is a null entry, as in paper_batch_not_found.yaml
    compare("s2 batch entry", entries[0], ours[0], ALLOWED_S2_PAPER)


def _entry_tags(body: bytes) -> dict[str, str]:
    root = ElementTree.fromstring(body)
    entry = root.find("{http://www.w3.org/2005/Atom}entry")
    assert entry is not None
    return {child.tag: (child.text or "") for child in entry}


def test_arxiv_entry(sandbox: tuple[str, W.World]) -> None:
    url, world = sandbox
    fixture = json.loads((REAL / "arxiv" / "id_1707.08567_s0_m100_6a1afebfc6a3.json").read_text())
    real = _entry_tags(fixture["body"].encode("latin-1"))
    record = next(r for r in world.records if r.arxiv and r.kind == "preprint")
    ours = _entry_tags(httpx.get(f"{url}/api/query", params={"id_list": record.arxiv}).content)
    compare("arxiv entry", real, ours, ALLOWED_ARXIV)
