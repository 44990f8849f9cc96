"""sandbox/emulated_grade.py: grade sheets read from the rendered grade prompt's own rubric and
reference blocks, hand-computed."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence
from typing import Any

import pytest

from inspire_build.evaluation.kappa import quadratic_kappa
from inspire_build.grading import part_context, withheld
from inspire_build.sandbox import emulated_grade as G
from inspire_build.sandbox.llm_truth import TruthRates, dice
from inspire_build.templates import load_prompts

NONE = TruthRates(**dict.fromkeys(TruthRates.names(), 0.0))
PROMPTS = load_prompts()
SCHEMA = G.Schema([0, 1, 2, 3], None, True)
TITLE, ABSTRACT = "Velkora Router for lumen ranking", "Ranking of lumen corpora is unreliable."
# Each wording, the tier the shipped rubric gives it and the concept it reads as.
CONTEXTS = {
    "foundation": ("Our approach builds directly on x [3].", 3),
    "baseline": ("We compare against y [4].", 2),
    "mention": ("See also z [5].", 0),
    "problem": ("The problem was first posed in w [1].", 1),
}


def ref(key: str, concept: str, **shown: Any) -> dict[str, Any]:
    return {
        "id": key,
        "title": f"Paper {key}",
        "abstract": f"What paper {key} is about.",
        "contexts": [CONTEXTS[concept][0]],
        "intents": [],
        "influential": False,
        **shown,
    }


REFS = [ref(k, c) for k, c in zip("xyzw", CONTEXTS, strict=True)]


def render(refs: Sequence[dict[str, Any]], part: int = 1, parts: int = 1) -> str:
    return PROMPTS["grade"].render(part_context(TITLE, ABSTRACT, refs, part, parts))


def read(
    prompt: str, rates: TruthRates = NONE, schema: G.Schema = SCHEMA, seed: int = 0
) -> list[G.Read]:
    return G.read_sheet(prompt, schema, rates, seed, dice(seed, prompt))


def tiers(items: Sequence[G.Read]) -> dict[str, int | None]:
    return {i.title: i.tier for i in items}


def _rubric_lines(prompt: str) -> re.Match[str]:
    found = re.search(r"^- 3: .*?(?=^Judge each)", prompt, re.MULTILINE | re.DOTALL)
    assert found is not None
    return found


# --- reading the prompt -------------------------------------------------------------------------


def test_references_reads_every_block_in_order() -> None:
    quoted = ref("q", "baseline", contexts=['We compare against "y" & co [4].'])
    shown = G.references(render([REFS[0], quoted, withheld({"id": "h"})]))
    assert shown == [
        G.Shown(1, "Paper x", "What paper x is about.", (), False, 1, (CONTEXTS["foundation"][0],)),
        G.Shown(2, "Paper q", "What paper q is about.", (), False, 1, (quoted["contexts"][0],)),
        G.Shown(3, "", "", (), False, 0, ()),
    ]


def test_the_shipped_rubric_gives_each_concept_its_tier() -> None:
    assert G.rubric(render(REFS)) == {
        "foundation": 3,
        "component": 2,
        "baseline": 2,
        "training-data": 2,
        "problem": 1,
        "background": 1,
        "mention": 0,
        "evaluation": 0,
        "contrast": 0,
    }


def test_a_blanket_instruction_sets_the_blanket_tier() -> None:
    prompt = render(REFS)
    lines = _rubric_lines(prompt)
    assert G.blanket_tier(prompt.replace(lines.group(0), "Give every reference tier 2.\n")) == 2


def test_the_shipped_prompt_gives_no_blanket_tier() -> None:
    assert G.blanket_tier(render(REFS)) == 1


def test_a_prompt_with_no_rubric_and_no_blanket_instruction_falls_back_to_tier_one() -> None:
    prompt = render(REFS)
    stripped = prompt.replace(_rubric_lines(prompt).group(0), "")
    assert G.rubric(stripped) == {}
    assert set(tiers(read(stripped)).values()) == {1}


def test_concept_reads_contexts_then_intents_then_the_abstract() -> None:
    rng = random.Random(0)

    def shown(**fields: Any) -> G.Shown:
        base = G.Shown(1, "Paper", "Sparse hashing of lumen archives.", (), False, 0, ())
        return dataclasses.replace(base, **fields)

    target = "Ranking of lumen archives under sparse hashing remains costly."
    assert G.concept(shown(contexts=("Unlike [2], we never sample.",)), target, rng) == "contrast"
    assert G.concept(shown(intents=("methodology",), influential=True), target, rng) == (
        "foundation"
    )
    assert G.concept(shown(intents=("methodology",)), target, rng) == "component"
    assert G.concept(shown(intents=("background",)), target, rng) == "background"
    assert G.concept(shown(), target, rng) == "background"  # shares the target's words
    assert G.concept(shown(abstract="Birds of the sea."), target, rng) == "mention"
    assert G.concept(shown(title=""), target, rng) == "unknown"
    # the majority of the contexts wins
    mixed = ("See also [2].", "We compare against [2].", "We compare with [2] again.")
    assert G.concept(shown(contexts=mixed), target, rng) == "baseline"


# --- tiers from the rubric ------------------------------------------------------------------------


def test_the_shipped_rubric_grades_each_context_by_its_wording() -> None:
    items = read(render(REFS))
    assert [(i.index, i.concept, i.tier, i.role, i.slip) for i in items] == [
        (1, "foundation", 3, "method-foundation", None),
        (2, "baseline", 2, "baseline", None),
        (3, "mention", 0, None, None),
        (4, "problem", 1, "problem", None),
    ]


def test_a_problem_context_of_an_influential_reference_reads_as_tier_three() -> None:
    influential = ref("w", "problem", influential=True)
    (item,) = read(render([influential]))
    assert (item.concept, item.tier) == ("foundation", 3)


def test_a_rubric_rewritten_to_tier_three_gives_every_reference_tier_three() -> None:
    prompt = render(REFS)
    rewritten = prompt.replace(_rubric_lines(prompt).group(0), "Give every reference tier 3.\n")
    assert G.rubric(rewritten) == {}
    assert tiers(read(rewritten)) == dict.fromkeys(["Paper x", "Paper y", "Paper z", "Paper w"], 3)


def test_swapping_the_rubric_lines_of_tiers_two_and_three_swaps_those_tiers() -> None:
    prompt = render(REFS)
    swapped = re.sub(
        r"^- ([23]):", lambda m: f"- {5 - int(m.group(1))}:", prompt, flags=re.MULTILINE
    )
    assert swapped != prompt
    assert tiers(read(swapped)) == {"Paper x": 2, "Paper y": 3, "Paper z": 0, "Paper w": 1}


def test_withheld_evidence_gives_guesses_that_barely_agree_with_the_truth() -> None:
    rng = random.Random(7)
    truth = [rng.choice((0, 1, 2, 3)) for _ in range(200)]
    by_tier = {t: c for c, t in CONTEXTS.values()}
    shown = [ref(f"r{i}", "foundation", contexts=[by_tier[t]]) for i, t in enumerate(truth)]
    full = read(render(shown))
    assert quadratic_kappa([(t, i.tier or 0) for t, i in zip(truth, full, strict=True)]) == 1.0
    guesses = read(render([withheld(r) for r in shown]))
    assert {i.concept for i in guesses} == {"unknown"}
    given = [i.tier for i in guesses]
    assert all(t is not None for t in given) and len(set(given)) == 4
    kappa = quadratic_kappa([(t, g or 0) for t, g in zip(truth, given, strict=True)])
    assert kappa < 0.3


# --- noise ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("plant", ["grade_slip", "grade_demote"])
def test_a_lasting_slip_repeats_on_another_reading_of_the_same_reference(plant: str) -> None:
    rates = dataclasses.replace(NONE, **{plant: 1.0})
    clean = tiers(read(render(REFS)))
    first = read(render(REFS), rates)
    second = read(render(REFS[::-1], part=2, parts=2), rates)
    assert tiers(first) == tiers(second)
    slipped = {i.title: i for i in first if i.slip}
    if plant == "grade_slip":
        assert set(slipped) == set(clean)  # every reference, one tier off
        assert all(abs((i.tier or 0) - (clean[t] or 0)) == 1 for t, i in slipped.items())
    else:
        assert set(slipped) == {t for t, tier in clean.items() if tier}  # antecedents only
        assert {i.tier for i in slipped.values()} == {0}


@pytest.mark.parametrize("plant", ["grade_slip", "grade_demote"])
def test_at_half_rate_the_same_references_slip_on_every_reading(plant: str) -> None:
    rates = dataclasses.replace(NONE, **{plant: 0.5})
    refs = [ref(f"{concept}-{i}", concept) for i in range(10) for concept in CONTEXTS]
    readings = [
        read(render(refs), rates),
        read(render(refs[::-1], part=2, parts=3), rates),
        read(render(refs[::2] + refs[1::2], part=3, parts=3), rates),
    ]
    slipped = [{(i.title, i.tier) for i in items if i.slip} for items in readings]
    assert slipped[0] == slipped[1] == slipped[2]
    assert 5 < len(slipped[0]) < 35  # some, not all


def test_a_lasting_slip_depends_on_the_seed() -> None:
    rates = dataclasses.replace(NONE, grade_slip=1.0)
    refs = [ref(f"b{i}", "baseline") for i in range(12)]  # tier 2: one above or below
    given = {seed: tiers(read(render(refs), rates, seed=seed)) for seed in range(2)}
    assert set(given[0].values()) == {1, 3}
    assert given[0] != given[1]


def test_a_shift_is_one_readings_and_varies_with_the_prompt() -> None:
    rates = dataclasses.replace(NONE, grade_shift=1.0)
    baseline = REFS[1]
    given = [read(render([baseline], part, 30), rates)[0] for part in range(1, 31)]
    assert {i.slip for i in given} == {"shift"}
    assert {i.tier for i in given} == {1, 3}
    # a foundation can only shift down, a problem only up: never to tier 0
    (foundation, problem) = read(render([REFS[0], REFS[3]]), rates)
    assert (foundation.tier, problem.tier) == (2, 2)


def test_overinclusion_lifts_a_tier_zero_reference_to_tier_one() -> None:
    rates = dataclasses.replace(NONE, grade_overinclude=1.0)
    assert tiers(read(render(REFS), rates)) == {
        "Paper x": 3,
        "Paper y": 2,
        "Paper z": 1,
        "Paper w": 1,
    }


def test_a_schema_without_tier_zero_never_gets_zero() -> None:
    schema = G.Schema([1, 2, 3], None, False)
    contrast = ref("c", "mention", contexts=["Unlike [2], we do not sample."])
    refs = [*REFS, contrast, withheld({"id": "h1"}), withheld({"id": "h2"})]
    assert tiers(read(render(refs), schema=schema))["Paper z"] == 1
    everything = TruthRates(**dict.fromkeys(TruthRates.names(), 1.0))
    for part in range(1, 21):
        for rates in (NONE, everything):
            given = [i.tier for i in read(render(refs, part, 20), rates, schema)]
            assert 0 not in given
            assert {t for t in given if t is not None} <= {1, 2, 3}


def test_drop_grade_drops_exactly_one_index() -> None:
    rates = dataclasses.replace(NONE, drop_grade=1.0)
    for part in range(1, 11):
        items = read(render(REFS, part, 10), rates)
        dropped = [i for i in items if i.tier is None]
        assert len(dropped) == 1
        assert (dropped[0].slip, dropped[0].role) == ("drop", None)
        indexes = [g["index"] for g in G.sheet(items)["grades"]]
        assert sorted([*indexes, dropped[0].index]) == [1, 2, 3, 4]


def test_the_sheet_has_no_role_at_tier_zero_and_a_rationale_for_each() -> None:
    assert G.sheet(read(render(REFS))) == {
        "grades": [
            {
                "index": 1,
                "tier": 3,
                "role": "method-foundation",
                "rationale": "Its contexts read as foundation; tier 3.",
            },
            {
                "index": 2,
                "tier": 2,
                "role": "baseline",
                "rationale": "Its contexts read as baseline; tier 2.",
            },
            {
                "index": 3,
                "tier": 0,
                "role": None,
                "rationale": "Its contexts read as mention; the target does not build on it.",
            },
            {
                "index": 4,
                "tier": 1,
                "role": "problem",
                "rationale": "Its contexts read as problem; tier 1.",
            },
        ]
    }


def test_a_role_outside_the_schemas_choices_becomes_background() -> None:
    schema = G.Schema([0, 1, 2, 3], ["background", "method-foundation"], True)
    roles = [i.role for i in read(render(REFS), schema=schema)]
    assert roles == ["method-foundation", "background", None, "background"]
