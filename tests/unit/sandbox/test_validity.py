"""The validity scores, hand-computed."""

from __future__ import annotations

import itertools
import random

import pytest

from inspire_build import grading
from inspire_build.evaluation.kappa import TIERS, quadratic_kappa
from inspire_build.sandbox import validity as V
from inspire_build.templates import Prompt, load_prompts


def test_catch_and_false_rejection_shares() -> None:
    briefs = [
        V.BriefOutcome(frozenset({"leak_name"}), rejected=True),
        V.BriefOutcome(frozenset({"leak_acronym", "leak_numbers"}), rejected=False),
        V.BriefOutcome(frozenset({"leak_mechanism"}), rejected=True),
        V.BriefOutcome(frozenset(), rejected=True),
        V.BriefOutcome(frozenset(), rejected=False),
        V.BriefOutcome(frozenset(), rejected=False),
        V.BriefOutcome(frozenset(), rejected=False),
    ]
    identity = V.caught(briefs, V.IDENTITY_PLANTS)
    assert (identity.planted, identity.caught, identity.share) == (2, 1, 0.5)
    mechanism = V.caught(briefs, V.MECHANISM_PLANTS)
    assert (mechanism.planted, mechanism.caught) == (2, 1)
    wrong = V.false_rejection(briefs)
    assert (wrong.planted, wrong.caught, wrong.share) == (4, 1, 0.25)
    assert V.caught([], V.IDENTITY_PLANTS).share == 1.0


def test_gold_scores_count_tier_zero_as_not_an_antecedent() -> None:
    truth = {"t1": {"a": 3, "b": 1, "c": 0, "d": 0}, "t2": {"e": 2}}
    gold = {"t1": {"a", "c", "d"}, "t2": set()}
    scores = V.gold_scores(gold, truth)
    assert (scores.gold, scores.true_antecedents) == (3, 3)
    assert scores.precision == pytest.approx(1 / 3)
    assert scores.recall == pytest.approx(1 / 3)


def test_rejected_by_counts_the_checks_that_failed_clean_briefs() -> None:
    briefs = [
        V.BriefOutcome(frozenset(), True, frozenset({"lexical", "retrieval"})),
        V.BriefOutcome(frozenset(), True, frozenset({"retrieval"})),
        V.BriefOutcome(frozenset({"leak_name"}), True, frozenset({"identity"})),
        V.BriefOutcome(frozenset(), False, frozenset()),
    ]
    assert V.rejected_by(briefs) == {"lexical": 1, "retrieval": 2}


def _best_by_brute_force(observed: list[tuple[str, int]]) -> float:
    signatures = sorted({s for s, _ in observed})
    best = -1.0
    for answers in itertools.product(TIERS, repeat=len(signatures)):
        given = dict(zip(signatures, answers, strict=True))
        best = max(best, quadratic_kappa([(t, given[s]) for s, t in observed]))
    return best


def test_the_ceiling_is_the_best_kappa_of_one_answer_per_signature() -> None:
    observed = [("a", 1), ("a", 1), ("a", 0), ("b", 0), ("b", 0), ("c", 3), ("c", 2), ("d", 1)]
    observed += [("d", 0), ("d", 0)]
    top = V.ceiling(observed)
    assert top.kappa == pytest.approx(_best_by_brute_force(observed))
    # Antecedents: a's two (called: 2 of 3 are), c's two (called), d's one (not: 1 of 3).
    assert top.recall == pytest.approx(4 / 5) and top.n == 10
    # One signature for everything: a grader that cannot tell references apart.
    assert V.ceiling([("x", t) for _, t in observed]).kappa == pytest.approx(0.0)


def test_distinct_share_is_the_cards_count_over_the_problems() -> None:
    problems = ["alpha beta", "alpha beta", "gamma delta"]
    assert V.distinct_share(problems) == 1 / 3  # the first two restate each other
    assert V.distinct_share([]) == 1.0


def test_distinct_bound_by_hand() -> None:
    # one brief: the whole field as its problem hides it best: 1 - 10/100
    assert V.distinct_bound(1, 10, 100) == pytest.approx((0.9, 100))
    # two briefs among 100: (1 - 10/F) (100 - F) / 99 peaks at F = 32: 22 * 68 / (32 * 99)
    reached, size = V.distinct_bound(2, 10, 100)
    assert size == 32 and reached == pytest.approx(22 * 68 / (32 * 99))
    # more briefs from the same candidates: fewer can be their own
    assert V.distinct_bound(27, 10, 3906)[0] < V.distinct_bound(2, 10, 3906)[0]
    # a field too small to hide anything
    assert V.distinct_bound(5, 10, 10) == (0.0, 0)


def test_distinct_bound_with_redrafts_by_hand() -> None:
    # one brief, top 1, 3 candidates: a first draft shared by 2 passes half the time, then one
    # shared by all 3 passes 2/3 of the rest: 1/2 + 1/2 * 2/3; starting at 3 gives only 2/3
    assert V.distinct_bound(1, 1, 3, attempts=2) == pytest.approx((1 / 2 + 1 / 2 * 2 / 3, 2))
    assert V.distinct_bound(1, 1, 3, attempts=1) == pytest.approx((2 / 3, 3))
    # redrafts can only help
    assert V.distinct_bound(27, 10, 3906, 3)[0] > V.distinct_bound(27, 10, 3906, 1)[0]


def test_distinct_bound_matches_a_simulated_writer() -> None:
    # 120 candidates in problems of 24; 6 briefs; a draft fails when its target ranks in the top
    # 4 of its problem's 24: the simulated share of briefs both hidden and alone
    rng, size, trials, own = random.Random(7), 24, 4000, 0
    for _ in range(trials):
        picked = rng.sample(range(120), 6)
        for target in picked:
            alone = all(other // size != target // size for other in picked if other != target)
            own += alone and rng.randrange(size) >= 4
    reached = (1 - 4 / size) * V._alone(6, size, 120)
    assert own / (6 * trials) == pytest.approx(reached, abs=0.015)
    assert V.distinct_bound(6, 4, 120)[0] >= reached


REFERENCE = {
    "id": "arxiv:2101.00001",
    "title": "Lumen archives at scale",
    "abstract": "We study lumen archives.",
    "contexts": ["We build on Lumen archives at scale [12].", "Unlike [3], we prune."],
    "intents": ["methodology"],
    "influential": True,
}


def _grade_prompt(source: str | None = None) -> Prompt:
    prompt = load_prompts()["grade"]
    return prompt if source is None else Prompt("grade", "test", source)


def test_the_grade_template_shows_every_piece_of_evidence() -> None:
    seen = V.shown_evidence(_grade_prompt(), REFERENCE, same_topic=True)
    assert seen == V.Evidence(
        contexts=("unlike we prune", "we build on"),  # the title's words and [n] taken out
        mentions=2,
        intents=("methodology",),
        influential=True,
        same_topic=True,
    )
    assert not seen.bare


def test_a_template_without_its_contexts_loop_shows_no_context() -> None:
    source = _grade_prompt().source
    loop = "Contexts:\n{% for context in item.contexts %}- {{ context }}\n{% endfor %}"
    assert loop in source
    seen = V.shown_evidence(_grade_prompt(source.replace(loop, "")), REFERENCE, same_topic=True)
    assert seen.contexts == ()
    assert (seen.mentions, seen.intents, seen.influential) == (2, ("methodology",), True)


def test_a_template_showing_one_piece_gives_that_piece_alone() -> None:
    source = "{# version: t #}{% for item in references %}{{ item.influential }}{% endfor %}"
    seen = V.shown_evidence(_grade_prompt(source), REFERENCE, same_topic=True)
    assert seen == V.Evidence((), None, None, True, None)
    assert seen.bare


def test_a_withheld_reference_shows_nothing() -> None:
    seen = V.shown_evidence(_grade_prompt(), grading.withheld(REFERENCE), same_topic=True)
    assert seen == V.Evidence((), None, None, None, None)
