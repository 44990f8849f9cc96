"""Which decisions stand, and what applying them does to a version's records, by hand."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from inspire_build.review.decisions import (
    Action,
    Figures,
    Graded,
    Review,
    State,
    Stored,
    apply,
    brief_failures,
    check_curator,
    check_grade,
    describe,
    edited_brief_id,
    leak_failures,
    standing,
)

DAY = dt.date(2025, 1, 1)


def review(rid: int, target: str, action: Action, paper: str | None = None, **after: Any) -> Review:
    return Review(rid, target, action, after, paper_id=paper, curator="ada")


def record(target: str, brief: str, *grades: tuple[str, int, str | None]) -> Stored:
    graded = tuple(Graded(p, t, r, f"why {p}") for p, t, r in grades)
    findings = ({"check": "lexical", "passed": True, "level": "none", "detail": "ok"},)
    return Stored(target, DAY, f"b-{target}", brief, graded, findings)


def test_the_latest_review_of_each_kind_stands_per_target_and_reference() -> None:
    decided = standing(
        [
            review(3, "A", Action.ACCEPT),
            review(1, "A", Action.REJECT, reason="off topic"),  # older than the accept
            review(2, "A", Action.GRADE, "p1", tier=3, role="component"),
            review(4, "A", Action.GRADE, "p1", tier=2, role="component"),
            review(5, "A", Action.GRADE, "p2", tier=0, role=None),
            review(6, "B", Action.LEAK, leaking=True, note="names it", brief="b"),
        ]
    )
    a, b = decided["A"], decided["B"]
    assert a.state is State.ACCEPTED and not a.rejected and a.corrected
    assert {p: r.review_id for p, r in a.grades.items()} == {"p1": 4, "p2": 5}
    assert [r.review_id for r in a.reviews] == [3, 4, 5]  # the superseded 1 and 2 left out
    assert b.state is State.REVIEWED and b.leaking and not b.corrected
    assert "C" not in decided


def test_a_grade_keeps_a_role_above_tier_zero_only() -> None:
    assert check_grade(0, "component") is None
    assert check_grade(2, "baseline") == "baseline"
    with pytest.raises(ValueError, match="needs a role"):
        check_grade(1, None)
    with pytest.raises(ValueError, match="tier must be"):
        check_grade(4, "baseline")


def test_apply_drops_the_rejected_regrades_and_replaces_edited_briefs() -> None:
    records = [
        record("A", "brief a", ("p1", 1, "background"), ("p2", 2, "component"), ("p3", 0, None)),
        record("B", "brief b", ("q1", 3, "method-foundation")),
        record("C", "brief c", ("r1", 1, "problem")),
        record("D", "brief d", ("s1", 2, "baseline")),
    ]
    findings = [{"check": "lexical", "passed": False, "level": "full", "detail": "contains: x"}]
    decided = standing(
        [
            review(1, "A", Action.GRADE, "p1", tier=3, role="background", note="central"),
            review(2, "A", Action.GRADE, "p2", tier=2, role="baseline"),  # the role alone
            review(3, "A", Action.GRADE, "p3", tier=1, role="problem"),  # tier 0 made a qrel
            review(4, "B", Action.REJECT, reason="not CS"),
            review(5, "C", Action.BRIEF, text="new brief c", findings=findings),
            review(6, "C", Action.LEAK, leaking=True, note="x", brief="brief c"),
            review(7, "D", Action.GRADE, "s1", tier=0, role=None),  # no antecedent left
            review(8, "E", Action.ACCEPT),  # a target not in these records
        ]
    )
    kept, figures, applied = apply(records, decided)
    assert [r.target_id for r in kept] == ["A", "C"]
    a, c = kept
    assert a.antecedents == [("p1", 3, "background"), ("p2", 2, "baseline"), ("p3", 1, "problem")]
    assert a.grades[0].rationale == "why p1 | curator ada (review 1): T1 -> T3: central"
    assert a.brief == "brief a" and a.findings == records[0].findings
    assert c.brief == "new brief c" and c.brief_id == edited_brief_id("C", "new brief c")
    assert list(c.findings) == findings and c.antecedents == records[2].antecedents
    assert figures == Figures(
        reviewed=4, rejected=1, corrected=2, tier_changes=3, role_changes=1, briefs_edited=1,
        marked_leaking=0, emptied=1,
    )  # fmt: skip
    assert applied == [1, 2, 3, 4, 5, 6, 7]  # 8 is about no record here


def test_apply_without_decisions_changes_nothing() -> None:
    records = [record("A", "brief a", ("p1", 1, "background"))]
    assert apply(records, {}) == (records, Figures(), [])


def test_a_leak_mark_holds_on_the_text_it_was_made_on_only() -> None:
    decided = standing(
        [
            review(1, "A", Action.LEAK, leaking=True, note="names GNN", brief="brief a"),
            review(2, "B", Action.LEAK, leaking=True, note="", brief="old brief b"),
            review(3, "C", Action.LEAK, leaking=True, note="n", brief="brief c"),
            review(4, "C", Action.LEAK, leaking=False, note="", brief="brief c"),  # taken back
        ]
    )
    instances = [("i1", "A", "brief a"), ("i2", "B", "brief b"), ("i3", "C", "brief c")]
    assert leak_failures(instances, decided) == [
        ("i1", "curator: marked leaking by ada: names GNN")
    ]
    kept, figures, _ = apply([record("A", "brief a", ("p1", 1, "problem"))], decided)
    assert figures.marked_leaking == 1 and figures.corrected == 0 and kept[0].brief == "brief a"


def test_each_review_is_described_in_one_line_of_its_history() -> None:
    from inspire_build.review.decisions import describe

    grade = Review(
        1, "A", Action.GRADE, {"tier": 3, "role": "component", "note": "core"}, paper_id="p1",
        before={"tier": 1, "role": "background"},
    )  # fmt: skip
    assert describe(grade) == "T1 background -> T3 component: core"
    assert describe(review(2, "A", Action.GRADE, "p2", tier=0, role=None)) == "? -> T0"
    rejected = Review(3, "A", Action.REJECT, {"reason": "off topic"}, before={"state": "accepted"})
    assert describe(rejected) == "rejected (was accepted): off topic"
    assert describe(review(4, "A", Action.ACCEPT, reason="")) == "accepted"
    assert describe(review(5, "A", Action.LEAK, leaking=True, note="names it", brief="b")) == (
        "marked the brief leaking: names it"
    )
    assert describe(review(6, "A", Action.LEAK, leaking=False, note="", brief="b")) == (
        "took the leak mark back"
    )
    findings = [{"check": "lexical", "passed": False}, {"check": "identity", "passed": True}]
    brief = Review(7, "A", Action.BRIEF, {"text": "one two three", "findings": findings},
                   before={"text": "one two"})  # fmt: skip
    assert describe(brief) == "rewrote the brief (2 -> 3 words; re-audit failed lexical)"


def test_a_brief_keeps_the_build_rules_within_its_length_and_lexical_bounds() -> None:
    def words(n: int) -> str:
        return " ".join(["load"] * n)

    assert brief_failures(words(120), [], []) == []
    assert brief_failures(words(250), [], []) == []
    assert brief_failures(words(119), [], []) == ["length: 119 words, outside 120-250"]
    assert brief_failures(words(251), [], []) == ["length: 251 words, outside 120-250"]
    leaky = words(130) + " with Widget Nets at 92.3% and 15"
    assert brief_failures(leaky, ["widget nets", "routing"], ["92.3%", "15%"]) == [
        "lexical: contains: 92.3%; widget nets"
    ]  # "15" is not "15%"; "routing" is not there


def test_a_new_decision_replaces_the_standing_one_of_its_kind() -> None:
    decided = standing(
        [
            review(1, "A", Action.REJECT, reason="x"),
            review(2, "A", Action.GRADE, "p1", tier=3, role="component"),
            review(3, "A", Action.BRIEF, text="t", findings=[]),
        ]
    )["A"]
    assert [getattr(decided.latest(a, p), "review_id", None) for a, p in [
        (Action.ACCEPT, None), (Action.REJECT, None), (Action.GRADE, "p1"), (Action.GRADE, "p2"),
        (Action.LEAK, None), (Action.BRIEF, None),
    ]] == [1, 1, 2, None, None, 3]  # fmt: skip
    assert decided.corrected and not decided.drafted
    draft = Review(4, "A", Action.BRIEF, {"text": "t2", "failed": ["length: 1 words"]}, draft=True)
    redrafted = standing([*decided.reviews, draft])["A"]
    assert redrafted.drafted and redrafted.corrected  # the regrade still stands
    assert not standing([draft])["A"].corrected
    assert describe(draft) == "kept a draft of the brief (0 -> 1 words; breaks length: 1 words)"


@pytest.mark.parametrize(
    ("name", "kept"),
    [(" Ada ", "Ada"), ("Zoë O'Brien-Łukasz", "Zoë O'Brien-Łukasz"), ("a" * 80, "a" * 80)],
)
def test_a_curator_name_is_trimmed_and_kept(name: str, kept: str) -> None:
    assert check_curator(name) == kept


@pytest.mark.parametrize(
    "name", ["", "   ", "a" * 81, "ada\nbo", "ada\tbo", "ada\x00", "ada\u200b", "ada\u2029bo"]
)
def test_a_curator_name_that_could_break_a_header_or_a_line_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="curator"):
        check_curator(name)
