"""What the review pages read of a planted version, and each decision recorded as a row."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import pytest

from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.review.curation import Curation, UnknownInstance, check_filters, progress
from inspire_build.review.decisions import State
from tests.unit.review.conftest import BRIEF_A, IA, IB


@pytest.fixture
def curation(con: duckdb.DuckDBPyConnection, planted: str) -> Curation:
    # Replay: the unit tests reach no source, so a new brief's search is reported as not run.
    return Curation(con, Settings(llm_backend="rules", source_mode="replay"), planted, "ada")


def _reviews(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        'SELECT review_id, instance_id, target_id, paper_id, action, curator, "before", "after" '
        "FROM reviews ORDER BY review_id"
    ).fetchall()


def test_the_version_page_rows_and_their_filters(curation: Curation) -> None:
    rows = curation.rows()
    assert [(r.number, r.instance_id, r.antecedents) for r in rows] == [(1, IA, 2), (2, IB, 1)]
    assert rows[0].tiers == {1: 1, 2: 1} and rows[1].tiers == {3: 1}
    assert [r.result("mechanism") for r in rows] == ["passed", "partial"]
    assert [r.instance_id for r in rows if r.shown("", "mechanism:partial")] == [IB]
    assert [r.instance_id for r in rows if r.shown("", "any:failed")] == []
    assert [r.instance_id for r in rows if r.shown("unreviewed", "")] == [IA, IB]
    assert progress(rows) == {
        "instances": 2, "reviewed": 0, "accepted": 0, "rejected": 0, "corrected": 0, "leaking": 0
    }  # fmt: skip
    check_filters("rejected", "lexical:failed")
    with pytest.raises(InputError, match="unknown review state"):
        check_filters("done", "")
    with pytest.raises(InputError, match="unknown finding filter"):
        check_filters("", "lexical:maybe")


def test_the_instance_page_holds_every_section(curation: Curation) -> None:
    page = curation.page(IA)
    assert "".join(s.text for s in page["brief"]) == BRIEF_A
    marked = {s.text: s.kind for s in page["brief"] if s.kind}
    assert marked == {"graph widget networks": "term", "92.3%": "number"}
    assert "92.3%" in page["hits"]
    assert [f["check"] for f in page["findings"]] == [
        "identity", "lexical", "mechanism", "retrieval"
    ]  # fmt: skip
    assert page["target"]["title"] == "Graph Widget Networks for fast routing"
    graded = page["graded"]
    assert [g["paper_id"] for g in graded[1]] == ["p1"] and graded[1][0]["contexts"]
    assert [g["paper_id"] for g in graded[2]] == ["p2"] and graded[3] == []
    assert [g["paper_id"] for g in graded[0]] == ["p3"]
    assert [(r["paper_id"], r["status"]) for r in page["excluded"]] == [("x1", "after_cutoff")]
    assert page["completeness"]["eligible"] == 3
    assert curation.neighbours(IA, "", "") == (None, IB)
    assert curation.neighbours(IA, "", "mechanism:partial") == (None, IB)
    with pytest.raises(UnknownInstance):
        curation.page("f" * 16)


def test_each_decision_is_a_row_and_none_is_overwritten(
    curation: Curation, con: duckdb.DuckDBPyConnection
) -> None:
    assert curation.record(IA, "reject", {"reason": "not about routing"}) == 1
    assert curation.record(IA, "accept", {"reason": ""}) == 2
    grade = {"paper_id": "p1", "tier": "3", "role": "background", "note": "central"}
    assert curation.record(IA, "grade", grade) == 3
    assert curation.record(IB, "leak", {"leaking": "true", "note": "names the method"}) == 4
    rows = _reviews(con)
    assert [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows] == [
        (1, IA, "tA", None, "reject", "ada"),
        (2, IA, "tA", None, "accept", "ada"),
        (3, IA, "tA", "p1", "grade", "ada"),
        (4, IB, "tB", None, "leak", "ada"),
    ]
    assert json.loads(str(rows[0][7])) == {"reason": "not about routing"}
    assert json.loads(str(rows[1][6])) == {"state": "rejected"}  # what the curator saw
    assert json.loads(str(rows[2][6])) == {"tier": 1, "role": "background"}
    assert json.loads(str(rows[2][7])) == {"tier": 3, "role": "background", "note": "central"}
    leak = json.loads(str(rows[3][7]))
    assert leak["leaking"] is True and leak["brief"].startswith("Ranking documents")
    states = {r.instance_id: r.decided for r in curation.rows()}
    assert states[IA].state is State.ACCEPTED and states[IA].corrected
    assert states[IB].state is State.REVIEWED and states[IB].leaking
    assert curation.page(IA)["graded"][1][0]["regrade"]["tier"] == 3
    history = curation.page(IA)["history"]
    assert [r.review_id for r in history] == [3, 2, 1]  # newest first, this target's only
    assert all(r.created_at.tzinfo is dt.UTC for r in history)  # shown as UTC


@pytest.mark.parametrize(
    ("action", "form", "message"),
    [
        ("reject", {"reason": "  "}, "needs a reason"),
        ("grade", {"paper_id": "p9", "tier": "1", "role": "problem"}, "not a graded reference"),
        ("grade", {"paper_id": "p1", "tier": "2", "role": ""}, "needs a role"),
        ("grade", {"paper_id": "p1", "tier": "x", "role": ""}, "invalid literal"),
        ("grade", {"paper_id": "p1", "tier": "1", "role": "background"}, "nothing changes"),
        ("leak", {"leaking": "true", "note": ""}, "needs a note"),
        ("brief", {"text": "   "}, "needs its text"),
        ("brief", {"text": BRIEF_A}, "unchanged"),
        ("delete", {}, "unknown action"),
    ],
)
def test_a_decision_that_is_wrong_is_refused_and_records_nothing(
    curation: Curation, con: duckdb.DuckDBPyConnection, action: str, form: dict[str, str],
    message: str,
) -> None:  # fmt: skip
    with pytest.raises(InputError, match=message):
        curation.record(IA, action, form)
    assert _reviews(con) == []


def test_an_edited_brief_is_re_audited_at_once(
    curation: Curation, con: duckdb.DuckDBPyConnection
) -> None:
    leaky = "We ask how Graph Widget Networks (GWN) route requests, reaching 92.3% accuracy."
    curation.record(IA, "brief", {"text": f"  {leaky}\n"})
    [row] = _reviews(con)
    after = json.loads(str(row[7]))
    assert after["text"] == leaky and after["words"] == len(leaky.split())
    assert json.loads(str(row[6])) == {"text": BRIEF_A}
    checks = {f["check"]: f for f in after["findings"]}
    assert set(checks) == {"lexical", "identity", "retrieval", "mechanism", "search"}
    assert not checks["lexical"]["passed"] and "92.3%" in checks["lexical"]["detail"]
    assert not checks["search"]["passed"] and checks["search"]["detail"].startswith("not run")
    edited = curation.page(IA)["edited"]
    assert edited["findings"] == after["findings"] and not edited["fits"]  # 14 words
    assert {s.text for s in edited["segments"] if s.kind} >= {"GWN", "92.3%"}


def test_a_curator_needs_a_name_and_a_known_version(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    with pytest.raises(InputError, match="needs a name"):
        Curation(con, Settings(), planted, "  ")
    with pytest.raises(InputError, match="unknown version"):
        Curation(con, Settings(), "eval-nothing", "ada")
