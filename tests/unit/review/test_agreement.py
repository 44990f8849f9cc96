"""The review sample's draw and model-curator agreement, with figures computed by hand."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from inspire_build.review import agreement
from inspire_build.review.agreement import Candidate, Sampled
from inspire_build.review.decisions import Action, Review, standing


def _candidates() -> list[Candidate]:
    """2025-01: eight T3 and four T1 instances; 2025-02: four T2 (16 in all)."""
    found = [Candidate(f"a{k:02d}", "2025-01", 3) for k in range(8)]
    found += [Candidate(f"b{k:02d}", "2025-01", 1) for k in range(4)]
    return found + [Candidate(f"c{k:02d}", "2025-02", 2) for k in range(4)]


def test_a_draw_takes_each_stratum_in_proportion_and_is_seeded() -> None:
    drawn = agreement.draw(_candidates(), 8, seed=0)  # half of each stratum
    assert agreement.strata(drawn) == {"2025-01 T1": 2, "2025-01 T3": 4, "2025-02 T2": 2}
    assert drawn == agreement.draw(list(reversed(_candidates())), 8, seed=0)
    assert drawn != agreement.draw(_candidates(), 8, seed=1)
    assert set(agreement.draw(_candidates(), 4, seed=0)) <= set(drawn)  # nested


def test_a_draw_refuses_nothing_and_takes_all_when_asked_for_more() -> None:
    with pytest.raises(ValueError, match="at least one instance, not 0"):
        agreement.draw(_candidates(), 0, seed=0)
    everything = agreement.draw(_candidates(), 100, seed=0)
    assert Counter(c.instance_id for c in everything) == Counter(
        c.instance_id for c in _candidates()
    )


def _review(
    rid: int, target: str, action: Action, paper: str | None = None, **after: Any
) -> Review:
    return Review(rid, target, action, after, paper_id=paper, curator="ada")


SAMPLE = [
    Sampled("t1", "brief one", {"p1": 1, "p2": 2, "p3": 0}),
    Sampled("t2", "brief two", {"q1": 3}),
    Sampled("t3", "brief three", {"r1": 2}),
    Sampled("t4", "brief four", {"s1": 1}),
    Sampled("t5", "brief five", {"u1": 1}),
]
REVIEWS = [
    _review(1, "t1", Action.GRADE, "p3", tier=2, role="baseline", note=""),
    _review(2, "t1", Action.ACCEPT, reason=""),
    _review(3, "t2", Action.ACCEPT, reason=""),
    _review(4, "t2", Action.LEAK, leaking=True, note="names it", brief="brief two"),
    _review(5, "t3", Action.REJECT, reason="a survey"),
    _review(6, "t5", Action.LEAK, leaking=True, note="names it", brief="brief five"),
    _review(7, "t5", Action.LEAK, leaking=True, note="old text", brief="an older brief"),
]


def test_agreement_by_hand() -> None:
    """t4 is unreviewed; t3 rejected and t5 only leak-marked (its latest mark, on another text,
    does not hold), so tiers are compared on t1 and t2: (curator, model) = (1, 1), (2, 2),
    (2, 0) regraded, (3, 3). Exact: 3 of 4. Quadratic kappa, weights (i - j)^2 / 9: observed
    disagreement 4/9 / 4; curator rows 1: 1, 2: 2, 3: 1, model columns 0-3 one each, so the
    expected is (1 * 6/9 + 2 * 6/9 + 1 * 14/9) / 4 / 4 = 8/9 / 4: kappa = 1 - 4/8 = 0.5.

    Bootstrap over t1 (A) and t2 (B): AA gives kappa 0 (observed 4/9 / 3 = expected) and exact
    2/3, AB 0.5 and 0.75, BB 1 and 1; AA and BB each come a quarter of the time: kappa (0, 1),
    exact (2/3, 1). Leaking 1 of 4 (t2); rejected 1 of 4 (t3): a share of 1 needs all four
    picks to be t3 (1/256, under 2.5%), of 3/4 or more about 5%: (0, 0.75)."""
    found = agreement.measure(SAMPLE, standing(REVIEWS), samples=1000, seed=5)
    assert (found.sampled, found.reviewed) == (5, 4)
    assert found.kappa is not None and found.exact is not None
    assert found.kappa.value == pytest.approx(0.5)
    assert (found.kappa.low, found.kappa.high) == pytest.approx((0.0, 1.0))
    assert (found.kappa.references, found.kappa.instances) == (4, 2)
    assert found.exact.value == pytest.approx(0.75)
    assert (found.exact.low, found.exact.high) == pytest.approx((2 / 3, 1.0))
    assert found.leaking is not None and found.rejected is not None
    assert (found.leaking.count, found.leaking.instances) == (1, 4)
    assert (found.rejected.count, found.rejected.instances) == (1, 4)
    assert (found.rejected.low, found.rejected.high) == pytest.approx((0.0, 0.75))
    rows = dict(agreement.rows(found))
    assert rows["sampled instances reviewed"] == "4 of 5"
    assert rows["tiers, quadratic-weighted kappa"] == (
        "0.500 (95% CI 0.000 to 1.000; n = 4 references of 2 instances)"
    )
    assert rows["tiers, exact agreement"] == (
        "75.0% (95% CI 66.7% to 100.0%; n = 4 references of 2 instances)"
    )
    assert rows["instances rejected"] == "1 of 4: 25.0% (95% CI 0.0% to 75.0%; n = 4 instances)"


def test_nothing_reviewed_or_nothing_kept_measures_no_tier() -> None:
    none = agreement.measure(SAMPLE, {})
    assert (none.reviewed, none.kappa, none.leaking, none.rejected) == (0, None, None, None)
    assert dict(agreement.rows(none))["instances rejected"] == "no sampled instance reviewed"
    rejected = agreement.measure(SAMPLE[2:3], standing(REVIEWS))
    assert rejected.kappa is None and rejected.rejected is not None
    assert rejected.rejected.count == 1
    shown = dict(agreement.rows(rejected))["tiers, exact agreement"]
    assert shown == "no reviewed instance kept with a graded reference"


def test_a_regrade_without_a_verdict_counts_and_a_taken_back_regrade_is_the_models() -> None:
    regraded = [_review(1, "t4", Action.GRADE, "s1", tier=3, role="component", note="")]
    found = agreement.measure(SAMPLE[3:4], standing(regraded))
    assert found.exact is not None and found.exact.value == 0.0  # (3, 1)
    back = [*regraded, _review(2, "t4", Action.GRADE, "s1", tier=1, role="background", note="")]
    found = agreement.measure(SAMPLE[3:4], standing(back))
    assert found.exact is not None and found.exact.value == 1.0
