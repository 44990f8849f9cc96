"""sandbox/llm_truth.py: truthful answers to the pipeline's five prompts over a hand-made world,
each planted failure, and the determinism of the dice."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Literal

import pydantic
import pytest
from openai.lib._pydantic import to_strict_json_schema

from inspire_build.briefs import mentions, redactions
from inspire_build.grading import check_sheet, part_context
from inspire_build.lineage import normalise_title
from inspire_build.models import (
    BriefDraft,
    GradeSheet,
    IdentityGuess,
    MechanismGuess,
    MechanismOverlap,
)
from inspire_build.sandbox import llm_truth as T
from inspire_build.sandbox.world import Citation, Record, World, WorldConfig
from inspire_build.templates import load_prompts

NONE = T.TruthRates(**dict.fromkeys(T.TruthRates.names(), 0.0))
PROMPTS = load_prompts()


def record(key: str, title: str, **truth: Any) -> Record:
    number = int(key[1:])
    return Record(
        key=key,
        work=f"K{number:06d}",
        kind="single",
        openalex=f"W{4100000000 + number}",
        s2=f"{number:040x}",
        corpus_id=250000000 + number,
        doi=f"10.5555/sandbox.{number}",
        arxiv=f"2501.{number:05d}",
        arxiv_versions=[(1, "2025-01-02")],
        title=title,
        s2_title=title,
        s2_arxiv=None,
        abstract=truth.pop("abstract", f"The {title.lower()} study."),
        authors=["Ada Abe"],
        venue=None,
        topic="t00",
        field="Computer Science",
        categories=["cs.LG"],
        publication_date="2025-01-02",
        s2_publication_date="2025-01-02",
        s2_year=2025,
        openalex_references_empty=False,
        references=truth.pop("references", []),
        **truth,
    )


def target(key: str, name: str, acronym: str, task: str, words: tuple[str, ...]) -> Record:
    a, b, c, d, own = words
    problem = (  # the lead sentence is the field's problem; the next one is the work's own
        f"{task.capitalize()} of {a} {b} remains unreliable when {c} and {d} interact. "
        f"Current {task} pipelines break down when streaming inputs meets noisy labels, and "
        f"it is unclear how to keep {own} signals without losing {b} structure."
    )
    abstract = (
        f"{problem} We propose {name} ({acronym}), which combines gating with hashing and "
        f"pruning to cope with noisy labels. On {a} {task} benchmarks, {acronym} improves recall "
        "by 12.4% and runs 3.1 times faster than prior methods."
    )
    cites = [("P000001", 3, "method-foundation"), ("P000002", 2, "baseline")]
    cites += [("P000003", 1, "background"), ("P000004", 0, "passing-mention")]
    return record(
        key,
        f"{name}: Adaptive gating for {a}-aware {task}",
        abstract=abstract,
        problem=problem,
        problem_terms=[task, a, b, c, d, "noisy labels", "streaming inputs", own],
        method_name=name,
        acronym=acronym,
        mechanism=["gating", "hashing", "pruning"],
        result_numbers=["12.4%", "3.1"],
        references=[Citation(k, ["ctx"], [], False, False, tier, role) for k, tier, role in cites],
    )


def make_world() -> World:
    cited = [
        record("P000001", "Sparse attention nets for lumen archives", method_name="Orvo Net"),
        record("P000002", "A baseline for corpora ranking at scale", acronym="BSLN"),
        record("P000003", "Background on tessel structure in streams"),
        record("P000004", "An aside about passing remarks in papers"),
    ]
    targets = [
        target(
            "P000010",
            "Velkora Router",
            "VELR",
            "ranking",
            ("lumen", "corpora", "tessel", "orvi", "quill"),
        ),
        target(
            "P000011",
            "Dorsa Mixer",
            "DORM",
            "tracking",
            ("quorn", "vessa", "plinth", "sorel", "mave"),
        ),
    ]
    return World(WorldConfig(papers=6), {"t00": []}, [*cited, *targets])


WORLD = make_world()
INDEX = T.Index(WORLD)
TARGET, OTHER = WORLD.records[4], WORLD.records[5]
BRIEF_SCHEMA = to_strict_json_schema(BriefDraft)


def brief_prompt(paper: Record, feedback: tuple[str, ...] = ()) -> str:
    terms = redactions(paper.title, paper.abstract, [r.title for r in WORLD.records[:4]])
    context = {"title": paper.title, "abstract": paper.abstract, "redactions": terms}
    return PROMPTS["brief"].render({**context, "feedback": list(feedback)})


def ask(prompt: str, schema: Any, rates: T.TruthRates = NONE, seed: int = 0) -> T.Answer:
    found = T.answer(INDEX, rates, seed, prompt, schema)
    assert found is not None
    return found


def brief(paper: Record = TARGET, rates: T.TruthRates = NONE, seed: int = 0) -> T.Answer:
    return ask(brief_prompt(paper), BRIEF_SCHEMA, rates, seed)


def words(text: str) -> int:
    return len(text.split())


def has_title_ngram(text: str, paper: Record) -> bool:
    return any(mentions(text, gram) for gram in T.title_ngrams(paper.title))


# --- recognition ------------------------------------------------------------------------------


def test_each_prompt_is_recognised_and_others_are_not() -> None:
    assert T.prompt_kind(brief_prompt(TARGET)) == "brief"
    assert T.prompt_kind(PROMPTS["audit_identity"].render({"brief": "b"})) == "audit_identity"
    guess = PROMPTS["audit_mechanism_guess"].render({"brief": "b"})
    assert T.prompt_kind(guess) == "audit_mechanism_guess"
    mechanism = PROMPTS["audit_mechanism"].render({"guess": "g", "abstract": "a"})
    assert T.prompt_kind(mechanism) == "audit_mechanism"
    grade_prompt = PROMPTS["grade"].render(part_context("t", "a", [], 1, 1))
    assert T.prompt_kind(grade_prompt) == "grade"
    assert T.prompt_kind("Summarise the paper.") is None
    assert T.answer(INDEX, NONE, 0, "Summarise the paper.", BRIEF_SCHEMA) is None


def test_a_paper_outside_the_world_or_a_foreign_schema_gets_no_truthful_answer() -> None:
    stranger = dataclasses.replace(TARGET, title="Unknown", abstract="Nothing we know of.")
    assert T.answer(INDEX, NONE, 0, brief_prompt(stranger), BRIEF_SCHEMA) is None
    other_schema = to_strict_json_schema(IdentityGuess)  # the keys do not fit a brief
    assert T.answer(INDEX, NONE, 0, brief_prompt(TARGET), other_schema) is None
    assert T.answer(INDEX, NONE, 0, brief_prompt(TARGET), None) is None


# --- briefs -----------------------------------------------------------------------------------


def test_a_clean_brief_states_the_problem_and_nothing_that_identifies_the_paper() -> None:
    answer = brief()
    text = answer.value["brief"]
    assert answer.kind == "brief" and answer.target == TARGET and answer.plants == ()
    assert T.MIN_WORDS <= words(text) <= T.MAX_WORDS
    assert [p.split(":")[0] for p in text.split("\n\n")] == [
        "Problem",
        "Context",
        "Constraints",
        "Goal",
    ]
    used = set(normalise_title(text).split())
    assert {"ranking", "lumen", "corpora", "tessel", "orvi"} <= used  # the field's problem
    assert "quill" not in used and "streaming inputs" not in text  # what singles it out
    lowered = text.lower()
    assert "velkora" not in lowered and "router" not in lowered
    assert not re.search(r"\bVELR\b", text) and not re.search(r"\d", text)
    assert not any(m in lowered for m in TARGET.mechanism)
    assert not has_title_ngram(text, TARGET)
    terms = redactions(TARGET.title, TARGET.abstract, [r.title for r in WORLD.records[:4]])
    assert "Velkora Router" in terms and "VELR" in terms
    assert not [t for t in terms if mentions(text, t)]
    assert T.mechanism_overlap(text, TARGET) == ("none", [])


def test_briefs_are_seeded_by_the_prompt() -> None:
    first = brief().value["brief"]
    assert brief().value["brief"] == first  # a repeat
    redraft = ask(brief_prompt(TARGET, ("lexical: contains x",)), BRIEF_SCHEMA).value["brief"]
    assert redraft != first  # the feedback block rolls new dice
    assert brief(seed=1).value["brief"] != first
    assert brief(OTHER).value["brief"] != first  # two targets never share a brief


def test_the_brief_lengths_spread_around_the_target() -> None:
    lengths = [words(brief(seed=seed).value["brief"]) for seed in range(40)]
    assert all(T.MIN_WORDS <= n <= T.MAX_WORDS for n in lengths)
    assert 160 <= sum(lengths) / len(lengths) <= 210


@pytest.mark.parametrize(
    ("kind", "revealed"),
    [
        ("leak_name", lambda text: "Velkora Router" in text),
        ("leak_acronym", lambda text: re.search(r"\bVELR\b", text) is not None),
        ("leak_title", lambda text: has_title_ngram(text, TARGET)),
        ("leak_mechanism", lambda text: T.mechanism_overlap(text, TARGET)[0] == "full"),
        ("leak_numbers", lambda text: "12.4%" in text and "3.1" in text),
        ("bad_length", lambda text: not T.MIN_WORDS <= words(text) <= T.MAX_WORDS),
    ],
)
def test_each_planted_brief_failure_is_recorded_and_detectable(kind: str, revealed: Any) -> None:
    rates = dataclasses.replace(NONE, **{kind: 1.0})
    for seed in range(6):
        answer = brief(rates=rates, seed=seed)
        assert answer.plants == (kind,)
        assert revealed(answer.value["brief"])


def test_a_bad_length_is_either_too_short_or_too_long() -> None:
    rates = dataclasses.replace(NONE, bad_length=1.0)
    lengths = [words(brief(rates=rates, seed=seed).value["brief"]) for seed in range(20)]
    assert min(lengths) < T.MIN_WORDS and max(lengths) > T.MAX_WORDS


def test_refusal_and_invalid_json_are_planted_as_faults() -> None:
    assert brief(rates=dataclasses.replace(NONE, refusal=1.0)).fault == "refusal"
    assert brief(rates=dataclasses.replace(NONE, invalid_json=1.0)).fault == "invalid_json"
    assert brief().fault is None


# --- audits -----------------------------------------------------------------------------------


def identity(text: str, written: dict[str, str] | None = None) -> str:
    prompt = PROMPTS["audit_identity"].render({"brief": text})
    schema = to_strict_json_schema(IdentityGuess)
    found = T.answer(INDEX, NONE, 0, prompt, schema, written=written)
    assert found is not None
    return str(found.value["title"])


@pytest.mark.parametrize(
    "text",
    [
        "A brief that mentions the Velkora Router outright.",
        "A brief in which VELR appears as a word.",
        "A brief that says adaptive gating for lumen-aware work, copying the title.",
    ],
)
def test_identity_names_the_record_whose_material_the_brief_carries(text: str) -> None:
    assert identity(text) == TARGET.title


def test_identity_needs_the_acronym_as_a_whole_word() -> None:
    assert identity("The VELRO system and velr in lower case.") != TARGET.title


def test_a_clean_brief_gets_a_wrong_guess_never_the_target() -> None:
    text = brief().value["brief"]
    guesses = {identity(text + " " * n, {normalise_title(text): TARGET.work}) for n in range(8)}
    assert TARGET.title not in guesses
    assert guesses <= {r.title for r in WORLD.records}


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("A problem about lumen corpora under noisy labels.", "none"),
        ("Perhaps gating helps with lumen corpora.", "partial"),
        ("Perhaps gating and hashing help.", "full"),
        ("A cousin of VELR would do.", "full"),
        ("Gains of 12.4% are expected.", "full"),
        ("Gains of 112.4 are expected.", "none"),
    ],
)
def test_mechanism_overlap_follows_what_the_brief_reveals(text: str, level: str) -> None:
    guess_prompt = PROMPTS["audit_mechanism_guess"].render({"brief": text})
    assert TARGET.abstract not in guess_prompt  # the guess is blind
    guess = ask(guess_prompt, to_strict_json_schema(MechanismGuess))
    assert guess.target is None and MechanismGuess.model_validate(guess.value)
    context = {"guess": guess.value["mechanism"], "abstract": TARGET.abstract}
    prompt = PROMPTS["audit_mechanism"].render(context)
    answer = ask(prompt, to_strict_json_schema(MechanismOverlap))
    assert answer.value["overlap"] == level and answer.target == TARGET
    MechanismOverlap.model_validate(answer.value)


def test_a_blind_guess_names_only_what_the_brief_reveals() -> None:
    def guess(text: str) -> str:
        prompt = PROMPTS["audit_mechanism_guess"].render({"brief": text})
        return str(ask(prompt, to_strict_json_schema(MechanismGuess)).value["mechanism"])

    assert guess("Try the Velkora Router, VELR, with gating: 12.4% better.") == (
        "A method built on Velkora Router, VELR, 12.4%, gating."
    )
    clean = guess(brief().value["brief"])
    assert clean.endswith("-aware approach to the stated problem.")
    assert T.mechanism_overlap(clean, TARGET) == ("none", [])


# --- grades -----------------------------------------------------------------------------------

TITLES = [r.title for r in WORLD.records[:4]]  # true tiers 3, 2, 1, 0


class OldGrade(pydantic.BaseModel):  # a schema whose tier has no 0 and whose role is a string
    index: int
    tier: Literal[1, 2, 3]
    role: str
    rationale: str


class OldSheet(pydantic.BaseModel):
    grades: list[OldGrade]


SHEET = to_strict_json_schema(GradeSheet)


def grade_prompt(titles: list[str], paper: Record = TARGET) -> str:
    references = [
        {"id": f"x{i}", "title": t, "abstract": "", "contexts": [], "intents": []}
        for i, t in enumerate(titles)
    ]
    context = part_context(paper.title, paper.abstract, references, 1, 1)
    return PROMPTS["grade"].render(context)


def grade(
    rates: T.TruthRates = NONE, seed: int = 0, schema: dict[str, Any] | None = None
) -> T.Answer:
    return ask(grade_prompt(TITLES), schema or SHEET, rates, seed)


def tiers(answer: T.Answer) -> list[int]:
    return [g["tier"] for g in answer.value["grades"]]


def test_grades_are_the_true_tiers_by_index_with_no_role_at_tier_zero() -> None:
    answer = grade()
    assert [g["index"] for g in answer.value["grades"]] == [1, 2, 3, 4]
    assert tiers(answer) == [3, 2, 1, 0]
    roles = [g["role"] for g in answer.value["grades"]]
    assert roles == ["method-foundation", "baseline", "background", None]
    assert [i.plant for i in answer.grades] == [None] * 4
    assert [i.work for i in answer.grades] == [r.work for r in WORLD.records[:4]]
    sheet = GradeSheet.model_validate(answer.value)
    check_sheet(sheet, 4)
    assert all(g.rationale for g in sheet.grades)


def test_a_title_is_matched_normalised_and_in_any_order() -> None:
    shuffled = [TITLES[3].upper() + "!", TITLES[0].lower()]
    answer = ask(grade_prompt(shuffled), SHEET)
    assert tiers(answer) == [0, 3]


def test_a_schema_without_tier_zero_forces_it_to_one_and_counts_it() -> None:
    answer = grade(schema=to_strict_json_schema(OldSheet))
    assert tiers(answer) == [3, 2, 1, 1]
    assert [i.plant for i in answer.grades] == [None, None, None, "forced"]
    assert answer.value["grades"][3]["role"] == "background"


def test_grade_noise_shifts_tiers_and_overincludes_tier_zero() -> None:
    shifted = grade(dataclasses.replace(NONE, grade_shift=1.0))
    assert [abs(a - b) for a, b in zip(tiers(shifted), [3, 2, 1, 0], strict=True)] == [1, 1, 1, 0]
    assert [i.plant for i in shifted.grades] == ["shift", "shift", "shift", None]
    over = grade(dataclasses.replace(NONE, grade_overinclude=1.0))
    assert tiers(over)[3] in (1, 2) and over.grades[3].plant == "overinclude"
    assert over.value["grades"][3]["role"] == "background"


def test_a_dropped_grade_leaves_one_index_out_and_says_which() -> None:
    answer = grade(dataclasses.replace(NONE, drop_grade=1.0))
    given = [g["index"] for g in answer.value["grades"]]
    dropped = [i.index for i in answer.grades if i.plant == "drop"]
    assert len(given) == 3 and len(dropped) == 1 and set(given) | set(dropped) == {1, 2, 3, 4}
    with pytest.raises(ValueError, match=re.escape(f"missing {dropped}")):
        check_sheet(GradeSheet.model_validate(answer.value), 4)


def test_a_title_the_target_does_not_cite_is_graded_once_as_unknown() -> None:
    answer = ask(grade_prompt([*TITLES[:2], "A paper nobody wrote"]), SHEET)
    assert [g["index"] for g in answer.value["grades"]] == [1, 2, 3]
    assert answer.grades[2].plant == "unknown" and answer.grades[2].true_tier is None
    assert answer.grades[2].work is None and answer.value["grades"][2]["tier"] > 0


def test_a_target_not_in_the_world_still_gets_one_guess_per_index() -> None:
    stranger = dataclasses.replace(TARGET, title="Unknown", abstract="Nothing in the world.")
    answer = ask(grade_prompt(TITLES, stranger), SHEET)
    assert answer.target is None and [g["index"] for g in answer.value["grades"]] == [1, 2, 3, 4]
    assert [i.plant for i in answer.grades] == ["unknown"] * 4


# --- the log and the rates --------------------------------------------------------------------


def test_the_log_keeps_delivered_briefs_and_grades_once_per_request() -> None:
    truth = T.Truth(WORLD, dataclasses.replace(NONE, leak_name=1.0))
    answer = truth.answer(brief_prompt(TARGET), BRIEF_SCHEMA)
    assert answer is not None
    truth.record(answer, answer.value, "request-1")
    truth.record(answer, answer.value, "request-1")
    assert truth.briefs() == [
        {
            "target": TARGET.key,
            "work": TARGET.work,
            "text": answer.value["brief"],
            "plants": ["leak_name"],
        }
    ]
    sheet = truth.answer(grade_prompt(TITLES), SHEET)
    assert sheet is not None
    delivered = {"grades": sheet.value["grades"][:-1]}  # a drop_item fault took the last
    truth.record(sheet, delivered, "request-2")
    (logged,) = truth.grades()
    assert logged["forced"] == [] and logged["dropped"] == [WORLD.records[3].work]
    assert [i["tier"] for i in logged["items"]] == [3, 2, 1, None]
    truth.clear()
    assert truth.briefs() == [] and truth.grades() == []


def test_rates_are_checked_named_and_scaled() -> None:
    with pytest.raises(ValueError, match="leak_name must lie in"):
        T.TruthRates(leak_name=1.5)
    with pytest.raises(ValueError, match="valid rates: leak_name, leak_acronym"):
        T.TruthRates.from_mapping({"leak_nam": 0.1})
    assert T.TruthRates.from_mapping({"refusal": 0.5}).refusal == 0.5
    raised = T.TruthRates().scaled(4)
    assert (
        raised.leak_name == pytest.approx(0.2) and T.TruthRates(refusal=0.5).scaled(4).refusal == 1
    )
