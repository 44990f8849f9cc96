"""What the review pages read of a planted version, and each decision recorded as a row: under
its curator's name, over the standing decision its page showed (a stale one refused), a brief
that breaks the build's rules kept as a draft, a decision that changes nothing refused."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import pytest

from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.review import decisions
from inspire_build.review.curation import (
    Curation,
    Stale,
    UnknownInstance,
    check_filters,
    progress,
)
from inspire_build.review.decisions import State
from tests.unit.review.conftest import BRIEF_A, GOOD_A, IA, IB, decide


@pytest.fixture
def curation(con: duckdb.DuckDBPyConnection, planted: str) -> Curation:
    # Replay: the unit tests reach no source, so a new brief's search is reported as not run.
    return Curation(con, Settings(llm_backend="rules", source_mode="replay"), planted)


def _reviews(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        'SELECT review_id, instance_id, target_id, paper_id, action, curator, "before", "after", '
        "based_on, draft FROM reviews ORDER BY review_id"
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
        "instances": 2, "reviewed": 0, "accepted": 0, "rejected": 0, "corrected": 0, "leaking": 0,
        "drafts": 0,
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
    assert decide(curation, IA, "reject", {"reason": "not about routing"}) == 1
    assert decide(curation, IA, "accept", {"reason": ""}, curator="bo") == 2
    grade = {"paper_id": "p1", "tier": "3", "role": "background", "note": "central"}
    assert decide(curation, IA, "grade", grade) == 3
    assert decide(curation, IB, "leak", {"leaking": "true", "note": "names the method"}) == 4
    rows = _reviews(con)
    assert [(r[0], r[1], r[2], r[3], r[4], r[5], r[8], r[9]) for r in rows] == [
        (1, IA, "tA", None, "reject", "ada", None, False),
        (2, IA, "tA", None, "accept", "bo", 1, False),  # over the rejection it replaced
        (3, IA, "tA", "p1", "grade", "ada", None, False),  # p1's first regrade: over none
        (4, IB, "tB", None, "leak", "ada", None, False),
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
        ("leak", {"leaking": "false", "note": ""}, "carries no leak mark: nothing changes"),
        ("accept", {"based_on": ""}, r"does not say which decision it was made over"),
        ("accept", {"based_on": "x1"}, r"does not say which decision it was made over"),
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
        decide(curation, IA, action, form)
    assert _reviews(con) == []


def test_a_brief_that_keeps_the_build_rules_is_re_audited_at_once(
    curation: Curation, con: duckdb.DuckDBPyConnection
) -> None:
    decide(curation, IA, "brief", {"text": f"  {GOOD_A}\n"})
    [row] = _reviews(con)
    after = json.loads(str(row[7]))
    assert after["text"] == GOOD_A and after["words"] == 146 and row[9] is False
    assert json.loads(str(row[6])) == {"text": BRIEF_A}
    checks = {f["check"]: f for f in after["findings"]}
    assert set(checks) == {"lexical", "identity", "retrieval", "mechanism", "search"}
    assert checks["lexical"]["passed"]
    assert not checks["search"]["passed"] and checks["search"]["detail"].startswith("not run")
    edited = curation.page(IA)["edited"]
    assert edited["findings"] == after["findings"] and edited["fits"] and not edited["draft"]
    assert curation.rows()[0].decided.corrected


@pytest.mark.parametrize(
    ("text", "broken"),
    [
        ("Routing.", ["length: 1 words, outside 120-250"]),
        (
            "We ask how Graph Widget Networks (GWN) route requests, reaching 92.3% accuracy.",
            [
                "length: 12 words, outside 120-250",
                "lexical: contains: 92.3%; GWN; Graph Widget Networks",
            ],
        ),
        (f"{GOOD_A} It reaches 92.3%.", ["lexical: contains: 92.3%"]),  # 149 words
    ],
)
def test_a_brief_that_breaks_a_build_rule_is_kept_as_a_draft_not_re_audited(
    curation: Curation, con: duckdb.DuckDBPyConnection, text: str, broken: list[str]
) -> None:
    decide(curation, IA, "brief", {"text": text})
    [row] = _reviews(con)
    assert row[9] is True  # draft
    assert json.loads(str(row[7])) == {"text": text, "words": len(text.split()), "failed": broken}
    assert con.execute("SELECT count(*) FROM llm_calls").fetchone() == (0,)  # no re-audit
    edited = curation.page(IA)["edited"]
    assert edited["draft"] and edited["failed"] == broken and edited["findings"] == []
    [row_a, _] = curation.rows()
    assert row_a.decided.drafted and not row_a.decided.corrected
    assert [r.instance_id for r in curation.rows() if r.shown("draft", "")] == [IA]
    assert progress(curation.rows())["drafts"] == 1
    # discarding it: the version's own brief saved back, with the version's own findings; as
    # a browser sends a textarea (CRLF line ends), its paragraphs kept byte for byte
    decide(curation, IA, "brief", {"text": BRIEF_A.replace("\n", "\r\n") + " "})
    restored = json.loads(str(_reviews(con)[1][7]))
    assert restored["text"] == BRIEF_A and [f["check"] for f in restored["findings"]] == [
        "identity", "lexical", "mechanism", "retrieval"
    ]  # fmt: skip
    assert _reviews(con)[1][8:] == (1, False)
    assert not curation.rows()[0].decided.drafted
    # put back, it is no correction, and its history says what happened (no re-audit ran)
    assert not curation.rows()[0].decided.corrected and progress(curation.rows())["corrected"] == 0
    put_back = curation.rows()[0].decided.brief
    assert put_back is not None
    assert decisions.describe(put_back).startswith("put the version's own brief back (")


def test_a_leak_mark_made_after_a_rewrite_marks_the_rewrite(
    curation: Curation, con: duckdb.DuckDBPyConnection
) -> None:
    """The mark went on the version's brief while the page showed the curator's rewrite, so
    the applied version shipped the rewrite with no mark, and its audit passed it."""
    decide(curation, IA, "brief", {"text": GOOD_A})
    decide(curation, IA, "leak", {"leaking": "true", "note": "the setting names it"})
    marked = json.loads(str(_reviews(con)[1][7]))
    assert marked["brief"] == GOOD_A
    decided = curation.rows()[0].decided
    assert decisions.leak_holds(decided, GOOD_A) and not decisions.leak_holds(decided, BRIEF_A)


def test_a_decision_made_over_a_replaced_one_is_refused_as_stale(
    curation: Curation, con: duckdb.DuckDBPyConnection
) -> None:
    """Ada and Bo load A's page at once (nothing stands); Bo rewrites the brief first."""
    seen = {"based_on": "0"}
    assert curation.record(IA, "brief", {**seen, "text": GOOD_A}, "bo") == 1
    with pytest.raises(Stale, match=r"showed no decision, but review #1 by bo stands now") as got:
        curation.record(IA, "brief", {**seen, "text": f"{GOOD_A} Also cheaply."}, "ada")
    assert got.value.newer is not None and got.value.newer.review_id == 1
    assert "rewrote the brief (25 -> 146 words" in str(got.value)
    # only the kind the page showed must be current: a verdict over none is still fresh
    assert curation.record(IA, "reject", {**seen, "reason": "off topic"}, "ada") == 2
    with pytest.raises(Stale, match="review #2 by ada stands now"):
        curation.record(IA, "accept", {**seen}, "bo")
    with pytest.raises(Stale, match="showed review #7, and none stands now"):
        curation.record(IB, "accept", {"based_on": "7"}, "bo")
    assert [r[0] for r in _reviews(con)] == [1, 2]
    assert curation.record(IA, "accept", {"based_on": "2"}, "bo") == 3  # reloaded: fresh


def test_a_verdict_that_repeats_the_standing_one_is_refused(
    curation: Curation, con: duckdb.DuckDBPyConnection
) -> None:
    assert decide(curation, IA, "accept", {}) == 1
    with pytest.raises(InputError, match=r"already accepted \(review #1 by ada\): nothing changes"):
        decide(curation, IA, "accept", {"reason": "still fine"}, curator="bo")
    assert decide(curation, IA, "reject", {"reason": "off topic"}) == 2
    with pytest.raises(InputError, match="already rejected"):
        decide(curation, IA, "reject", {"reason": "really off topic"})
    assert decide(curation, IB, "leak", {"leaking": "true", "note": "names it"}) == 3
    with pytest.raises(InputError, match="already marked leaking: nothing changes"):
        decide(curation, IB, "leak", {"leaking": "true", "note": "names it twice"})
    assert len(_reviews(con)) == 3


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("  ", "needs a name"),
        ("a" * 81, "at most 80 characters"),
        ("ada\r\nSet-Cookie: x=1", "control character"),
        ("ada\u202e", "control character"),  # a bidi override
        ("ada\u2028bo", "line break"),
    ],
)
def test_a_decision_needs_a_curator_with_a_valid_name(
    curation: Curation, con: duckdb.DuckDBPyConnection, name: str, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        decide(curation, IA, "accept", {}, curator=name)
    assert _reviews(con) == []
    assert decide(curation, IA, "accept", {}, curator=" Ada Lovelace-Byron ") == 1
    assert _reviews(con)[0][5] == "Ada Lovelace-Byron"


def test_a_curation_needs_a_known_version(con: duckdb.DuckDBPyConnection, planted: str) -> None:
    with pytest.raises(InputError, match="unknown version"):
        Curation(con, Settings(), "eval-nothing")
