"""The openai backend end to end against the sandbox's truthful LLM: a 30-target eval build
writes instances, and every kind of planted brief leak is rejected with the matching finding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pytest
import requests

from inspire_build import gold, pipeline, splits
from inspire_build.lineage import normalise_title
from inspire_build.sandbox import server, world
from inspire_build.sandbox.llm_truth import TruthRates
from inspire_build.sandbox.openai_api import OpenAIConfig
from inspire_build.sources import make_client
from tests.conftest import new_warehouse

TARGETS = 30
LEAK_RATE = 0.15  # raised, so that a 30-target build plants every kind at least once
# The audit finding (or the length check) that must catch each planted kind.
CATCHES = {
    "leak_name": {"lexical", "identity"},
    "leak_acronym": {"lexical", "identity"},
    "leak_title": {"lexical", "identity"},
    "leak_mechanism": {"mechanism"},
    "leak_numbers": {"lexical", "mechanism"},
    "bad_length": {"length"},
}


class Built(NamedTuple):
    con: duckdb.DuckDBPyConnection
    version: str
    row: dict[str, Any]
    written: list[dict[str, Any]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    generated = world.generate(world.WorldConfig(seed=1, papers=2000))
    # No refusals: a refused audit call leaves its attempt without text, so unmatched.
    rates = TruthRates(refusal=0.0, **{kind: LEAK_RATE for kind in CATCHES})
    config = server.SandboxConfig(time_scale=1000, openai=OpenAIConfig(seed=1, truth=rates))
    path: Path = tmp_path_factory.mktemp("truthful") / "w.duckdb"
    with server.running(generated, config) as base:
        settings = server.settings_for(
            base, warehouse=path, llm_backend="openai", llm_model="sandbox-gpt"
        )
        con = new_warehouse(path)
        row = pipeline.build_split(con, make_client(settings, con), settings, "eval", TARGETS)
        written = requests.get(f"{base}/_sandbox/llm/briefs", timeout=30).json()
    yield Built(con, splits.latest_version(con, "eval"), row, written)
    con.close()


def test_the_build_writes_instances_with_briefs_findings_grades_and_qrels(built: Built) -> None:
    print(built.row)
    assert built.row["counts"]["instances"] >= 5
    counts = built.con.execute(
        "SELECT (SELECT count(*) FROM instances WHERE version_id = $v), "
        "(SELECT count(*) FROM qrels WHERE version_id = $v), "
        "(SELECT count(*) FROM briefs WHERE status = 'accepted'), "
        "(SELECT count(DISTINCT brief_id) FROM audit_findings), "
        "(SELECT count(*) FROM grades)",
        {"v": built.version},
    ).fetchone()
    assert counts is not None
    instances, qrels, accepted, audited, grades = counts
    assert instances == built.row["counts"]["instances"] and accepted >= instances
    assert qrels >= instances and grades >= qrels and audited >= accepted
    backends = built.con.execute("SELECT DISTINCT backend FROM llm_calls").fetchall()
    assert backends == [("openai",)]


def _failed_checks(con: duckdb.DuckDBPyConnection, text: str) -> set[str]:
    row = con.execute(
        "SELECT status, reason, brief_id FROM briefs WHERE text = ? LIMIT 1", [text]
    ).fetchone()
    if row is None or row[0] != "rejected":
        return set()
    found = {
        str(check)
        for (check,) in con.execute(
            'SELECT "check" FROM audit_findings WHERE brief_id = ? AND NOT passed', [row[2]]
        ).fetchall()
    }
    return found | ({"length"} if "length:" in str(row[1]) else set())


@pytest.mark.parametrize("kind", sorted(CATCHES))
def test_a_planted_leak_is_rejected_with_the_matching_finding(built: Built, kind: str) -> None:
    planted = [b for b in built.written if kind in b["plants"]]
    assert planted, f"no brief planted {kind}"
    matched = [b for b in planted if _failed_checks(built.con, b["text"]) & CATCHES[kind]]
    print(f"{kind}: {len(matched)} of {len(planted)} rejected by {sorted(CATCHES[kind])}")
    assert matched


def test_no_brief_prompt_shows_a_reference_title(built: Built) -> None:
    """SPEC §2.4: the writer is never shown its references' titles (checked after writing).
    The emulated endpoint logs every brief prompt it answered; none holds the title of any
    reference of its target that lineage recorded."""
    titles = {
        str(target): set()
        for (target,) in built.con.execute("SELECT DISTINCT target_id FROM briefs").fetchall()
    }
    for target, title in built.con.execute(
        'SELECT target_id, coalesce(work_title, title) FROM "references" WHERE title IS NOT NULL'
    ).fetchall():
        if str(target) in titles and len(str(title).split()) >= 3:
            titles[str(target)].add(normalise_title(str(title)))
    prompts = [(normalise_title(str(b["prompt"])), str(b["text"])) for b in built.written]
    assert len(prompts) >= 30 and sum(len(t) for t in titles.values()) > 300
    by_text = dict(
        built.con.execute("SELECT text, target_id FROM briefs WHERE text <> ''").fetchall()
    )
    checked = 0
    for prompt, text in prompts:
        target = by_text.get(text)
        if target is None:
            continue
        checked += 1
        assert not [t for t in titles[str(target)] if f" {t} " in f" {prompt} "], text[:80]
    assert checked >= 30
    # It can fail: the list the lexical check uses after writing holds the titles, and the
    # prompt used to list it.
    target = next(t for t, found in titles.items() if found)
    checked_terms = " | ".join(gold.redaction_terms(gold.load_inputs(built.con, target)))
    assert any(t in checked_terms for t in titles[target])
