"""sandbox/emulated_brief.py: the brief written from the brief prompt's own text, hand-computed
over one abstract of the world's shape."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from inspire_build.briefs import mentions, title_ngrams
from inspire_build.sandbox import emulated_brief as B
from inspire_build.sandbox.llm_truth import TruthRates, dice
from inspire_build.sandbox.world import _SETTINGS
from inspire_build.templates import load_prompts
from inspire_build.text import content_words
from tests.unit.sandbox.conftest import world_words

NONE = TruthRates(**dict.fromkeys(TruthRates.names(), 0.0))
PROMPTS = load_prompts()
TITLE = "Velkora Router: Adaptive gating for lumen-aware ranking"
LEAD = "Ranking of lumen corpora remains unreliable when tessel and orvi interact."
SPECIFIC = (
    "Current ranking pipelines break down when streaming inputs meets noisy labels, and it is "
    "unclear how to keep quill and mave signals without losing corpora structure."
)
ABSTRACT = (
    f"{LEAD} {SPECIFIC} We propose Velkora Router (VELR), which combines gating with hashing "
    "and pruning to cope with noisy labels. On lumen ranking benchmarks, VELR improves recall "
    "by 12.4% and runs 3.1 times faster than prior methods."
)
TERMS = ("velkora router", "VELR")
CONSTRAINTS = [
    "A solution has to hold up when tessel and orvi interact.",
    "A solution has to hold up when streaming inputs meets noisy labels.",
    "It has to keep quill and mave signals.",
    "It must do so without losing corpora structure.",
]
SEEDS = range(12)


def prompt(feedback: tuple[str, ...] = (), terms: tuple[str, ...] = TERMS) -> str:
    context = {"title": TITLE, "abstract": ABSTRACT, "redactions": list(terms)}
    return PROMPTS["brief"].render({**context, "feedback": list(feedback)})


def write(
    text: str | None = None, rates: TruthRates = NONE, seed: int = 0
) -> tuple[str, list[str]]:
    request = B.parse(prompt() if text is None else text)
    assert request is not None
    return B.write(random.Random(seed), rates, request)


def section(text: str, name: str) -> list[str]:
    """The sentences of one ``Name: ...`` paragraph."""
    found = [p for p in text.split("\n\n") if p.startswith(f"{name}: ")]
    assert len(found) == 1, text
    return re.split(r"(?<=\.)\s+", found[0].removeprefix(f"{name}: "))


def has_title_ngram(text: str) -> bool:
    return any(mentions(text, gram) for gram in title_ngrams(TITLE))


# --- reading the prompt -------------------------------------------------------------------------


def test_parse_reads_the_data_block_the_rules_the_terms_and_the_feedback() -> None:
    request = B.parse(prompt(("lexical: contains 'quill'", "length: 90 words, outside 120-250")))
    assert request == B.Request(
        TITLE,
        ABSTRACT,
        frozenset({"method", "name", "results", "title"}),
        TERMS,
        ("lexical: contains 'quill'", "length: 90 words, outside 120-250"),
    )


def test_parse_gives_none_for_a_prompt_without_a_data_block() -> None:
    assert B.parse("Write a brief about ranking.") is None


def test_solution_finds_the_name_acronym_numbers_and_the_solution_sentences_own_words() -> None:
    found = B.solution(ABSTRACT)
    assert found.names == ("Velkora Router",)
    assert found.acronyms == ("VELR",)
    assert found.numbers == ("12.4%", "3.1")
    assert found.words[:3] == ("gating", "hashing", "pruning")
    # neither the names it defines nor the defining verb are mechanism words
    assert not {"velkora", "router", "velr", "propose", "combines"} & set(found.words)
    # words the problem sentences use too are the setting, not the solution
    assert not {"ranking", "lumen", "noisy", "labels"} & set(found.words)


def test_banned_holds_the_terms_the_solution_the_title_grams_and_digits() -> None:
    request = B.parse(prompt())
    assert request is not None
    ban = B.banned(request, B.solution(ABSTRACT))
    assert ban.digits
    assert {"velkora router", "velr", "gating", "hashing", "pruning"} <= set(ban.phrases)
    assert "adaptive gating lumen-aware ranking" in ban.phrases  # a title 4-gram
    assert ban.clean("Ranking of lumen corpora stays fragile.")
    assert not ban.clean("It relies on Gating.")
    assert not ban.clean("It runs 3 times as fast.")
    assert not ban.clean("A Velkora  router of signals.")


def test_without_says_a_named_term_generally() -> None:
    sentence = "It is unclear how to keep Quill and mave signals."
    assert B.without(sentence, ["quill", "mave"]) == "It is unclear how to keep related signals."
    assert B.without("A quillon stays.", ["quill"]) == "A quillon stays."  # whole words only


def test_conditions_come_from_the_abstracts_own_clauses() -> None:
    assert list(B.conditions([LEAD, SPECIFIC])) == CONSTRAINTS


def test_the_goal_restates_the_lead_sentences_subject() -> None:
    assert B.goal(LEAD) == (
        "The goal is ranking of lumen corpora that is reliable under these conditions."
    )
    assert B.goal("Tracking is slow on phones.") == (
        "The goal is tracking that is fast under these conditions."
    )
    assert B.goal("Nothing here matches.") == (
        "The goal is an approach that resolves the problem as stated above."
    )


class _Always(random.Random):
    """Dice that never skip a swap (``random()`` is never under 0.3)."""

    def random(self) -> float:
        return 0.5


class _Never(random.Random):
    def random(self) -> float:
        return 0.0


def test_restate_swaps_words_for_their_synonyms_keeping_capitals() -> None:
    sentence = "Existing methods often fail, and it remains unclear."
    assert B.restate(_Always(), sentence) == (
        "Current techniques frequently break down, and it stays not known."
    )
    assert B.restate(_Never(), sentence) == sentence


# --- a clean brief ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_a_clean_brief_gives_away_nothing_of_the_solution(seed: int) -> None:
    text, planted = write(seed=seed)
    lowered = text.lower()
    assert planted == []
    assert "velkora" not in lowered and "router" not in lowered
    assert not re.search(r"\bVELR\b", text, re.IGNORECASE)
    assert not {"gating", "hashing", "pruning", "combines"} & set(re.findall(r"\w+", lowered))
    assert not re.search(r"\d", text)
    assert not has_title_ngram(text)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_clean_brief_states_the_targets_setting_and_its_own_constraints(seed: int) -> None:
    text, _ = write(seed=seed)
    assert [p.split(":")[0] for p in text.split("\n\n")] == [
        "Problem",
        "Context",
        "Constraints",
        "Goal",
    ]
    assert "streaming inputs" in text and "noisy labels" in text  # X and Y
    assert "tessel and orvi" in text and "lumen corpora" in text
    assert section(text, "Constraints") == CONSTRAINTS  # none invented
    assert section(text, "Goal")[0] == B.goal(LEAD)
    assert set(section(text, "Context")) <= set(B.FRAMING)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_clean_brief_is_between_120_and_250_words(seed: int) -> None:
    text, _ = write(seed=seed)
    assert B.MIN_WORDS <= len(text.split()) <= B.MAX_WORDS
    assert (B.MIN_WORDS, B.MAX_WORDS) == (120, 250)


def test_the_same_prompt_and_seed_give_the_same_brief() -> None:
    assert write(seed=3) == write(seed=3)
    rng = dice(0, prompt())
    request = B.parse(prompt())
    assert request is not None
    assert B.write(rng, NONE, request) == B.write(dice(0, prompt()), NONE, request)
    assert len({write(seed=seed)[0] for seed in SEEDS}) > 1  # the dice do choose


# --- redrafts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_a_term_named_in_feedback_is_avoided_in_the_redraft(seed: int) -> None:
    first, _ = write(seed=seed)
    redraft, _ = write(prompt(("lexical: contains 'quill'",)), seed=seed)
    assert "quill" in first
    assert "quill" not in redraft.lower()
    # The specific sentence holding the term goes, its setting with it; the lead stays.
    assert "tessel and orvi" in redraft and "streaming inputs" not in redraft
    assert section(redraft, "Constraints") == CONSTRAINTS[:1]


def test_terms_listed_after_terms_colon_are_avoided_too() -> None:
    redraft, _ = write(prompt(("lexical: terms: quill, mave",)))
    assert "quill" not in redraft and "mave" not in redraft


@pytest.mark.parametrize("seed", SEEDS)
def test_retrieval_feedback_with_no_term_drops_the_specific_sentence(seed: int) -> None:
    first, _ = write(seed=seed)
    redraft, _ = write(prompt(("retrieval: the target ranked 2 of 50",)), seed=seed)
    assert "streaming inputs" in first and "quill" in first
    assert "streaming inputs" not in redraft and "quill" not in redraft
    assert "lumen corpora" in redraft and "tessel and orvi" in redraft  # the lead stays
    assert section(redraft, "Constraints") == CONSTRAINTS[:1]
    assert B.MIN_WORDS <= len(redraft.split()) <= B.MAX_WORDS


def test_retrieval_feedback_that_names_a_term_says_it_generally_and_keeps_the_setting() -> None:
    redraft, _ = write(prompt(("retrieval: ranks 1 (terms that found it: 'quill')",)))
    assert "quill" not in redraft and "lumen corpora" in redraft
    # the sentence stays, its own setting with it: only the term that found the target goes
    assert "streaming inputs" in redraft and "related" in redraft


def test_a_second_retrieval_leak_says_both_terms_generally_and_keeps_the_setting() -> None:
    twice = (  # the retrieval check found the first draft and the redraft
        "retrieval: ranks 1 (terms that found it: 'quill')",
        "retrieval: ranks 2 (terms that found it: 'mave')",
    )
    redraft, _ = write(prompt(twice))
    assert "quill" not in redraft and "mave" not in redraft
    # the prompt asks for the paper's own setting: a field's problem is not one
    assert "streaming inputs" in redraft and "lumen corpora" in redraft


def test_both_checks_finding_one_draft_is_one_leak_and_keeps_the_setting() -> None:
    both = (  # one draft, found by the retrieval and the search check, naming the same terms
        "retrieval: ranks 1 (terms that found it: 'quill', 'mave')",
        "search: ranks 1 (terms that found it: 'quill', 'mave')",
    )
    redraft, _ = write(prompt(both))
    assert "quill" not in redraft and "mave" not in redraft
    assert "streaming inputs" in redraft and "related" in redraft
    # found again by either check, the next draft says that term generally too
    again, _ = write(prompt((*both, "search: ranks 3 (terms that found it: 'streaming')")))
    assert "streaming" not in again and "nonstationary arrivals" in again  # said by its kind
    assert "lumen corpora" in again


def test_a_named_term_in_the_lead_is_said_generally() -> None:
    redraft, _ = write(prompt(("search: ranks 1 (terms that found it: 'tessel')",)))
    assert "tessel" not in redraft and "when related and orvi" in redraft
    assert "streaming inputs" in redraft  # the specific sentence does not hold it


def test_a_lexical_term_does_not_keep_the_specifics_a_bare_retrieval_leak_drops() -> None:
    redraft, _ = write(prompt(("retrieval: ranked 2 of 50", "lexical: contains 'mave'")))
    assert "mave" not in redraft
    assert "streaming inputs" not in redraft


# --- a prompt that forbids nothing ----------------------------------------------------------------


def _without_rules(text: str) -> str:
    stripped = re.sub(r"The brief must NOT.*?terms: [^\n]*\n", "", text, flags=re.DOTALL)
    assert stripped != text and "must NOT" not in stripped and "Never" not in stripped
    return stripped


def test_a_prompt_that_forbids_nothing_gets_the_abstract_back() -> None:
    request = B.parse(_without_rules(prompt()))
    assert request is not None and request.forbids == frozenset() and request.terms == ()
    assert B.write(random.Random(0), NONE, request) == (ABSTRACT, [])


def test_a_custom_template_that_forbids_nothing_gets_the_abstract_back() -> None:
    text = f"Copy the abstract below.\n<data>\nTitle: {TITLE}\nAbstract: {ABSTRACT}\n</data>"
    request = B.parse(text)
    assert request is not None and request.forbids == frozenset()
    assert B.write(random.Random(0), NONE, request)[0] == ABSTRACT


def test_a_prompt_with_no_rules_still_avoids_a_term_its_feedback_names() -> None:
    request = B.parse(_without_rules(prompt(("lexical: contains 'quill'",))))
    assert request is not None and request.forbids == frozenset() and request.terms == ()
    assert request.feedback == ("lexical: contains 'quill'",)
    brief, _ = B.write(random.Random(0), NONE, request)
    assert "quill" not in brief


def test_a_prompt_that_only_lists_terms_still_avoids_them() -> None:
    text = re.sub(r"The brief must NOT contain.*?cites\. ", "", prompt(), flags=re.DOTALL)
    assert "must NOT" not in text and "Never use any of these\nterms: velkora router" in text
    request = B.parse(text)
    assert request is not None and request.terms == TERMS
    brief, _ = B.write(random.Random(0), NONE, request)
    assert not re.search(r"\bVELR\b", brief)
    assert "velkora router" not in brief.lower()


# --- planted leaks ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*B.PLANTS, "bad_length"])
def test_each_plant_at_rate_one_is_listed_alone(kind: str) -> None:
    rates = dataclasses.replace(NONE, **{kind: 1.0})
    for seed in SEEDS:
        assert write(rates=rates, seed=seed)[1] == [kind]


@pytest.mark.parametrize(
    ("kind", "shows"),
    [
        ("leak_name", lambda text: "Velkora Router" in text),
        ("leak_acronym", lambda text: re.search(r"\bVELR\b", text) is not None),
        ("leak_title", has_title_ngram),
        ("leak_numbers", lambda text: "12.4%" in text and "3.1" in text),
        ("bad_length", lambda text: not B.MIN_WORDS <= len(text.split()) <= B.MAX_WORDS),
        (
            "leak_mechanism",
            lambda text: len({"gating", "hashing", "pruning"} & set(re.findall(r"\w+", text))) >= 2,
        ),
    ],
)
def test_each_plant_at_rate_one_puts_its_leak_in_the_text(kind: str, shows: object) -> None:
    rates = dataclasses.replace(NONE, **{kind: 1.0})
    clean = {seed: write(seed=seed)[0] for seed in SEEDS}
    for seed in SEEDS:
        text, _ = write(rates=rates, seed=seed)
        assert callable(shows)
        assert shows(text), text
        assert not shows(clean[seed])


def test_every_plant_at_once_is_listed_in_order() -> None:
    rates = dataclasses.replace(NONE, **dict.fromkeys(B.PLANTS, 1.0))
    text, planted = write(rates=rates)
    assert planted == list(B.PLANTS)
    assert "Velkora Router" in text and "12.4%" in text


def test_a_plant_the_abstract_cannot_give_is_not_listed() -> None:
    bare = ABSTRACT.replace("Velkora Router (VELR)", "a router").replace("VELR", "it")
    bare = bare.replace(" by 12.4% and runs 3.1 times faster", "")
    context = {"title": "Adaptive ranking", "abstract": bare, "redactions": [], "feedback": []}
    request = B.parse(PROMPTS["brief"].render(context))
    assert request is not None
    rates = dataclasses.replace(NONE, **dict.fromkeys(B.PLANTS, 1.0))
    _, planted = B.write(random.Random(0), rates, request)
    assert planted == ["leak_mechanism"]  # no name, acronym, numbers, or title 4-gram


def test_an_apostrophe_in_the_feedback_opens_no_term() -> None:
    line = (  # the window-scoped retrieval check's own wording
        "retrieval: target ranks 1 among the 115 candidates its cutoff's window holds (the top 2 "
        "fails) (terms that found it: 'quill', 'mave')"
    )
    assert B.feedback_terms([line]) == ["quill", "mave"]
    redraft, _ = write(prompt((line,)))
    assert "quill" not in redraft and "mave" not in redraft
    # before: ", " was read as a term and said as "related", gluing words together
    assert "streaming inputs meets noisy labels, and" in redraft.replace("coincides with", "meets")


def test_a_setting_is_said_by_its_kind_and_other_terms_as_one_related() -> None:
    sentence = "They break down when streaming inputs meets noisy labels, and it is unclear."
    said = B.without(sentence, ["inputs", "noisy"])
    assert said == (
        "They break down when nonstationary arrivals meets imperfect supervision, and it is "
        "unclear."
    )
    said = B.without("Keep quill and mave cues, and quill signals.", ["quill", "mave"])
    assert said == "Keep related cues, and related signals."


def test_every_setting_of_a_world_has_a_kind_in_words_no_paper_holds() -> None:
    assert set(B.GENERAL) == set(_SETTINGS)
    words = world_words(1, 600)
    framing = {w for line in B.FRAMING for w in content_words(line)}
    for kind in B.GENERAL.values():
        assert not set(content_words(kind)) & (words | framing), kind
