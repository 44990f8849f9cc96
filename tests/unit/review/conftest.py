"""A hand-planted split version for the review tests: two instances of eval-planted.

Target A's brief and abstract hold a <script> (untrusted text); A has antecedents p1 (T1) and
p2 (T2), tier-0 p3 and an excluded x1; target B has one antecedent q1 (T3), and its brief's
mechanism finding is partial."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pytest

from inspire_build import warehouse

VERSION = "eval-planted"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SCRIPT_BRIEF = "<script>alert('brief')</script>"
SCRIPT_ABSTRACT = "<script>alert('abstract')</script>"
BRIEF_A = (
    f"{SCRIPT_BRIEF} Routing requests fast across a large cluster stays hard when loads shift; "
    "graph widget networks reach 92.3% and a solution must keep latency low."
)
BRIEF_B = "Ranking documents under drift is fragile; a solution must stay reliable."
IA, IB = "a" * 16, "b" * 16


def _paper(pid: str, title: str, abstract: str) -> dict[str, Any]:
    return {
        "paper_id": pid,
        "title": title,
        "abstract": abstract,
        "sources": ["openalex"],
        "updated_at": NOW,
    }


def _target(pid: str, title: str, abstract: str) -> dict[str, Any]:
    return {
        "split": "eval",
        "paper_id": pid,
        "title": title,
        "abstract": abstract,
        "first_public_date": dt.date(2025, 6, 1),
        "cutoff_date": dt.date(2025, 3, 1),
        "status": "accepted",
        "outcome": "accepted",
        "reason": "accepted",
        "updated_at": NOW,
    }


def _reference(
    target: str, pid: str, title: str, status: str = "eligible", **more: Any
) -> dict[str, Any]:
    return {
        "target_id": target,
        "ref_key": pid,
        "paper_id": pid,
        "title": title,
        "ids": "{}",
        "sources": ["s2"],
        "status": status,
        "reason": more.get("reason", "eligible"),
        "contexts": more.get("contexts", []),
        "intents": more.get("intents", []),
        "is_influential": False,
        "work_title": title,
        "work_abstract": f"{title} abstract",
    }


def _finding(iid: str, check: str, level: str = "none", passed: bool = True) -> dict[str, Any]:
    return {
        "version_id": VERSION,
        "instance_id": iid,
        "check": check,
        "passed": passed,
        "level": level,
        "detail": f"{check} detail",
    }


def plant(con: duckdb.DuckDBPyConnection) -> str:
    abstract_a = (
        f"{SCRIPT_ABSTRACT} We propose Graph Widget Networks (GWN). GWN reaches 92.3% accuracy."
    )
    warehouse.upsert(
        con,
        "papers",
        [
            _paper("tA", "Graph Widget Networks for fast routing", abstract_a),
            _paper("tB", "Another ranking study", "Ranking documents. Results improve by 15%."),
            _paper("p1", "Load balancing basics", "Balancing load on clusters."),
            _paper("p2", "Routing with graphs", "Graph routing methods."),
            _paper("p3", "A dataset of traces", "Traces of clusters."),
            _paper("q1", "Drift in ranking", "Ranking under drift."),
        ],
        ["paper_id"],
    )
    warehouse.upsert(
        con,
        "targets",
        [
            _target("tA", "Graph Widget Networks for fast routing", abstract_a),
            _target("tB", "Another ranking study", "Ranking documents. Results improve by 15%."),
        ],
        ["split", "paper_id"],
    )
    warehouse.upsert(
        con,
        "references",
        [
            _reference(
                "tA",
                "p1",
                "Load balancing basics",
                contexts=["We build on [3]."],
                intents=["methodology"],
            ),
            _reference("tA", "p2", "Routing with graphs"),
            _reference("tA", "p3", "A dataset of traces"),
            _reference(
                "tA",
                "x1",
                "A later paper",
                "after_cutoff",
                reason="first public 2025-05-01 is not before the cutoff",
            ),
            _reference("tB", "q1", "Drift in ranking"),
        ],
        ["target_id", "ref_key"],
    )
    counts = {
        "references_seen": 4,
        "resolved": 4,
        "dated": 4,
        "eligible": 3,
        "after_cutoff": 1,
        "dated_after_target": 0,
        "no_date": 0,
        "unresolved": 0,
        "self": 0,
        "sources": ["s2"],
        "updated_at": NOW,
        "not_antecedents": 1,
    }
    warehouse.upsert(con, "gold_completeness", [{"target_id": "tA", **counts}], ["target_id"])
    warehouse.upsert(
        con,
        "split_versions",
        [
            {
                "version_id": VERSION,
                "split": "eval",
                "label": None,
                "config_hash": "c" * 64,
                "code_version": "0.1.0",
                "prompt_hashes": {},
                "models": {"llm": "rules-v1"},
                "counts": {"instances": 2, "graded_antecedents": 3, "targets_accepted": 2},
                "created_at": NOW,
                "status": "complete",
                "cutoff_jitter_days": 0,
                "written_at": NOW,
            }
        ],
        ["version_id"],
    )
    warehouse.upsert(
        con,
        "instances",
        [
            {
                "version_id": VERSION,
                "instance_id": IA,
                "target_id": "tA",
                "brief_id": "bA",
                "brief": BRIEF_A,
                "cutoff_date": dt.date(2025, 3, 1),
                "n_antecedents": 2,
            },
            {
                "version_id": VERSION,
                "instance_id": IB,
                "target_id": "tB",
                "brief_id": "bB",
                "brief": BRIEF_B,
                "cutoff_date": dt.date(2025, 3, 1),
                "n_antecedents": 1,
            },
        ],
        ["version_id", "instance_id"],
    )
    warehouse.upsert(
        con,
        "qrels",
        [
            {
                "version_id": VERSION,
                "instance_id": IA,
                "paper_id": "p1",
                "tier": 1,
                "role": "background",
            },
            {
                "version_id": VERSION,
                "instance_id": IA,
                "paper_id": "p2",
                "tier": 2,
                "role": "component",
            },
            {
                "version_id": VERSION,
                "instance_id": IB,
                "paper_id": "q1",
                "tier": 3,
                "role": "method-foundation",
            },
        ],
        ["version_id", "instance_id", "paper_id"],
    )
    warehouse.upsert(
        con,
        "version_grades",
        [
            {
                "version_id": VERSION,
                "target_id": "tA",
                "paper_id": "p1",
                "tier": 1,
                "role": "background",
                "rationale": "shapes the problem",
            },
            {
                "version_id": VERSION,
                "target_id": "tA",
                "paper_id": "p2",
                "tier": 2,
                "role": "component",
                "rationale": "a component",
            },
            {
                "version_id": VERSION,
                "target_id": "tA",
                "paper_id": "p3",
                "tier": 0,
                "role": None,
                "rationale": "evaluation data only",
            },
            {
                "version_id": VERSION,
                "target_id": "tB",
                "paper_id": "q1",
                "tier": 3,
                "role": "method-foundation",
                "rationale": "the base",
            },
        ],
        ["version_id", "target_id", "paper_id"],
    )
    checks = ("lexical", "identity", "retrieval", "mechanism")
    findings = [_finding(IA, c) for c in checks]
    findings += [_finding(IB, c, "partial" if c == "mechanism" else "none") for c in checks]
    warehouse.upsert(con, "version_findings", findings, ["version_id", "instance_id", "check"])
    return VERSION


@pytest.fixture
def planted(con: duckdb.DuckDBPyConnection) -> str:
    return plant(con)
