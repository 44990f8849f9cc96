"""A hand-planted split version for the review tests: two instances of eval-planted.

Target A's brief and abstract hold a <script> (untrusted text); A has antecedents p1 (T1) and
p2 (T2), tier-0 p3 and an excluded x1; target B has one antecedent q1 (T3), and its brief's
mechanism finding is partial. ``GOOD_A`` and ``GOOD_B`` are rewritten briefs that keep the
build's rules (146 and 144 words, no redaction term or result number of their target);
:func:`decide` records a decision as a freshly loaded page would make it."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import duckdb
import pytest

from inspire_build import warehouse
from inspire_build.review.curation import Curation

VERSION = "eval-planted"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SCRIPT_BRIEF = "<script>alert('brief')</script>"
SCRIPT_ABSTRACT = "<script>alert('abstract')</script>"
BRIEF_A = (
    f"{SCRIPT_BRIEF} Routing requests fast across a large cluster stays hard when loads shift."
    "\n\ngraph widget networks reach 92.3% and a solution must keep latency low."
)
BRIEF_B = "Ranking documents under drift is fragile; a solution must stay reliable."
IA, IB = "a" * 16, "b" * 16
GOOD_A = (
    "Requests that arrive at a large shared cluster must each be sent to one of many machines, "
    "and the choice has to be made quickly while the load on every machine keeps shifting. "
    "Simple rules such as sending each request to a random machine or to the next one in turn "
    "ignore how busy the machines are, so some queues grow long while others sit idle. Measuring "
    "every queue before each choice costs time and network traffic, and the measurements are "
    "stale by the time they arrive. The open question is how a dispatcher can keep waiting "
    "times low and even across machines when it sees only partial and delayed information about "
    "their state. A solution should scale to thousands of machines, react within milliseconds "
    "when demand changes, stay stable when many dispatchers act at once, and avoid herding "
    "requests onto whichever machine last looked free."
)
GOOD_B = (
    "Search engines order documents by how well they answer a query, but the topics people ask "
    "about and the documents they want keep changing over months and years. A ranking model "
    "trained on last year's judgements slowly loses quality as vocabulary, interests and writing "
    "styles move on, and nobody notices until users complain. Collecting fresh relevance labels "
    "is slow and costly, so the model cannot simply be retrained from scratch every week. The "
    "open question is how a ranking system can notice that it is becoming unreliable and adapt "
    "with little new supervision, while never becoming worse on the queries it already served "
    "well. A solution must work with the signals a running engine already records, cope with "
    "sudden as well as gradual change, and keep its answers stable enough that users can trust "
    "the ordering they see from one day to the next."
)


def over(curation: Curation, iid: str, action: str, paper: str | None = None) -> str:
    """The ``based_on`` that ``iid``'s page, loaded now, puts in the form of ``action``."""
    page = curation.page(iid)
    if action == "grade":
        found = [
            g["based_on"] for gs in page["graded"].values() for g in gs if g["paper_id"] == paper
        ]
        return str(found[0]) if found else "0"
    return str(page["based_on"].get(action, 0))


def decide(
    curation: Curation, iid: str, action: str, form: dict[str, str], curator: str = "ada"
) -> int:
    """Record a decision of ``curator`` as a fresh page's form makes it (``form`` may name
    another ``based_on``)."""
    based = over(curation, iid, action, form.get("paper_id"))
    return curation.record(iid, action, {"based_on": based, **form}, curator)


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


class Reviewer:
    """One curator's browser session on the review app (Starlette's test client): named on its
    first visit, then posting each form as the page it loaded made it."""

    def __init__(self, app: Any, name: str | None = "ada") -> None:
        from fastapi.testclient import TestClient

        self.client = TestClient(app)
        if name is not None:
            named = self.name(name)
            assert named.status_code == 303, named.text

    def name(self, name: str, follow: str = "/") -> Any:
        page = self.client.get("/curator")
        fields = form_fields(page.text, 'id="name-form"')
        return self.client.post(
            "/curator", data={**fields, "curator": name, "next": follow}, follow_redirects=False
        )

    def post(self, iid: str, action: str, form: dict[str, str], page: str | None = None) -> Any:
        """Post ``form`` as ``iid``'s page (loaded now, or the given ``page``) makes it."""
        html = page if page is not None else self.client.get(f"/i/{iid}").text
        if action == "grade":
            marker = f'class="inline regrade" data-paper="{form["paper_id"]}"'
        elif action == "leak":
            marker = 'id="unleak-form"' if form.get("leaking") == "false" else 'id="leak-form"'
        else:
            marker = f'id="{action}-form"'
        fields = form_fields(html, marker)
        return self.client.post(
            f"/i/{iid}/{action}", data={**fields, **form}, follow_redirects=False
        )


def form_fields(html: str, marker: str) -> dict[str, str]:
    """The hidden fields of the form whose opening tag holds ``marker``."""
    start = html.rindex("<form", 0, html.index(marker))
    end = html.index("</form>", start)
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html[start:end]))
