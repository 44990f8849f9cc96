"""sandbox/leaks.py: each leak form's sentence for hand-made facts, and where it is injected."""

from __future__ import annotations

import dataclasses
import random

import pytest

from inspire_build.briefs import mentions, title_ngrams
from inspire_build.sandbox import leaks as L
from inspire_build.sandbox.world import WorldConfig, generate
from inspire_build.text import content_words
from tests.unit.sandbox.conftest import world_words

TITLE = "Velkora Router: Adaptive gating for lumen-aware ranking"
FACTS = L.Facts(
    method_name="Velkora Router",
    acronym="VELR",
    title=TITLE,
    result_numbers=("12.4%", "3.1"),
    mechanism=("gating", "hashing", "pruning"),
    antecedent_title="Sparse attention nets for lumen archives",
)
LEAD = "One promising direction is related to"
GRAMS = (
    "velkora router adaptive gating",
    "router adaptive gating lumen",
    "adaptive gating lumen aware",
    "gating lumen aware ranking",
)


def test_the_forms_are_the_verbatim_ones_then_the_paraphrases() -> None:
    assert L.FORMS == (
        "method_name",
        "acronym",
        "title_4gram",
        "result_number",
        "mechanism_words",
        "antecedent_title",
        "name_paraphrase",
        "title_paraphrase",
    )


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ("method_name", "Velkora Router"),
        ("acronym", "VELR"),
        ("result_number", "12.4%"),
        ("mechanism_words", "gating and hashing"),
        ("antecedent_title", "Sparse attention nets for lumen archives"),
        ("name_paraphrase", "a dispatcher built on learned switches and bucketed keys"),
        ("title_paraphrase", "self-adjusting learned switches for lumen-mindful ordering"),
    ],
)
def test_each_form_gives_its_sentence(form: str, said: str) -> None:
    assert L.sentence(form, FACTS, random.Random(0)) == f"{LEAD} {said}."


def test_the_title_gram_form_names_one_of_the_titles_4_grams() -> None:
    given = {L.sentence("title_4gram", FACTS, random.Random(seed)) or "" for seed in range(40)}
    assert given == {f"{LEAD} {gram}." for gram in GRAMS}
    assert all(mentions(s, g) for s, g in zip(sorted(given), sorted(GRAMS), strict=True))


def test_the_same_dice_give_the_same_title_gram() -> None:
    first = L.sentence("title_4gram", FACTS, random.Random(5))
    assert L.sentence("title_4gram", FACTS, random.Random(5)) == first


@pytest.mark.parametrize(
    ("form", "missing"),
    [
        ("method_name", {"method_name": ""}),
        ("acronym", {"acronym": ""}),
        ("title_4gram", {"title": ""}),
        ("title_4gram", {"title": "Adaptive lumen ranking"}),  # three content words
        ("result_number", {"result_numbers": ()}),
        ("mechanism_words", {"mechanism": ()}),
        ("mechanism_words", {"mechanism": ("gating",)}),
        ("antecedent_title", {"antecedent_title": None}),
        ("name_paraphrase", {"method_name": ""}),
        ("name_paraphrase", {"method_name": "Velkora"}),  # no kind of method to say otherwise
        ("name_paraphrase", {"method_name": "Velkora Widget"}),
        ("name_paraphrase", {"mechanism": ("gating",)}),
        ("name_paraphrase", {"mechanism": ("gating", "juggling")}),
        ("title_paraphrase", {"title": ""}),
        ("title_paraphrase", {"title": "Lumen ranking"}),
        ("title_paraphrase", {"title": "Velkora Router: lumen widgets for ranking"}),
    ],
)
def test_a_form_the_facts_cannot_give_is_none(form: str, missing: dict[str, object]) -> None:
    facts = dataclasses.replace(FACTS, **missing)  # type: ignore[arg-type]
    assert L.sentence(form, facts, random.Random(0)) is None
    assert L.sentence(form, FACTS, random.Random(0)) is not None


def test_the_title_paraphrase_holds_no_title_4_gram() -> None:
    leak = L.sentence("title_paraphrase", FACTS, random.Random(0))
    assert leak is not None
    assert title_ngrams(TITLE)
    assert not [g for g in title_ngrams(TITLE) if mentions(leak, g)]
    verbatim = L.sentence("title_4gram", FACTS, random.Random(0))
    assert verbatim is not None and [g for g in title_ngrams(TITLE) if mentions(verbatim, g)]


def test_no_title_paraphrase_of_a_generated_world_holds_a_title_4_gram() -> None:
    world = generate(WorldConfig(seed=1, papers=150))
    checked = 0
    for record in world.records:
        facts = dataclasses.replace(FACTS, title=record.title)
        leak = L.sentence("title_paraphrase", facts, random.Random(0))
        if leak is None:
            continue
        checked += 1
        assert not [g for g in title_ngrams(record.title) if mentions(leak, g)], record.title
    assert checked >= 100


def test_no_word_said_otherwise_is_in_any_paper_of_a_world() -> None:
    words = world_words(1, 400) | world_words(2, 400)
    assert len(words) > 900
    held = {k: v for k, v in L.SYNONYMS.items() if set(content_words(v.replace("-", " "))) & words}
    assert held == {}


def test_a_paraphrase_shares_no_word_with_its_target_but_its_fields() -> None:
    world = generate(WorldConfig(seed=3, papers=150))
    checked = 0
    for record in world.records:
        if record.hostile or not record.method_name:
            continue
        facts = dataclasses.replace(
            FACTS,
            method_name=record.method_name,
            title=record.title,
            mechanism=tuple(record.mechanism),
        )
        own = set(content_words(f"{record.title} {record.abstract}".replace("-", " ")))
        field = set(content_words(" ".join(record.problem_terms[:5])))  # every work's of it
        for form in L.PARAPHRASE:
            leak = L.sentence(form, facts, random.Random(0))
            assert leak is not None, (form, record.title)
            said = set(content_words(leak.replace("-", " "))) - set(content_words(LEAD))
            assert said & own <= field, (form, record.title, said & own)
            checked += 1
    assert checked >= 100


def test_inject_puts_the_leak_after_the_first_sentence_and_keeps_the_paragraphs() -> None:
    brief = "Problem: One. Two and three.\n\nContext: Four. Five.\n\nGoal: Six."
    assert L.inject(brief, "LEAK.") == (
        "Problem: One. LEAK. Two and three.\n\nContext: Four. Five.\n\nGoal: Six."
    )


def test_inject_after_a_single_sentence_paragraph_appends_to_it() -> None:
    assert L.inject("Only one.\n\nNext one. And more.", "LEAK.") == (
        "Only one. LEAK.\n\nNext one. And more."
    )
    assert L.inject("Only one.", "LEAK.") == "Only one. LEAK."


def test_inject_keeps_every_word_of_the_brief() -> None:
    brief = "Why? Because it is hard! And slow.\n\nMore here.\n\nAnd here."
    leak = L.sentence("acronym", FACTS, random.Random(0))
    assert leak is not None
    injected = L.inject(brief, leak)
    assert injected.startswith(f"Why? {leak} Because")
    assert injected.split("\n\n")[1:] == brief.split("\n\n")[1:]
    assert injected.replace(f"{leak} ", "") == brief
