"""sandbox/llm_truth.py: the emulated model recognises the pipeline's five prompts, answers each
from the prompt's own text (another world gives the same answer), plants faults at its rates,
and logs what it delivered once per request."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any

import pytest
from openai.lib._pydantic import to_strict_json_schema

from inspire_build.briefs import redactions
from inspire_build.grading import part_context
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
from tests.unit.sandbox.conftest import sandbox_record

NONE = T.TruthRates(**dict.fromkeys(T.TruthRates.names(), 0.0))
PROMPTS = load_prompts()
CONTEXTS = {
    "method-foundation": "Our approach builds directly on",
    "baseline": "We compare against",
    "background": "Related efforts include",
    "passing-mention": "See also",
}


def record(key: str, title: str, **truth: Any) -> Record:
    number = int(key[1:])
    return sandbox_record(
        key, title, arxiv=f"2501.{number:05d}", arxiv_versions=[(1, "2025-01-02")], **truth
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
        references=[
            Citation(k, [CONTEXTS[role]], [], False, False, tier, role) for k, tier, role in cites
        ],
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
MEMORY = T.emulated_audit.Memory(WORLD.records, T.KNOWLEDGE_CUTOFF)
TARGET, OTHER = WORLD.records[4], WORLD.records[5]
BRIEF_SCHEMA = to_strict_json_schema(BriefDraft)
SHEET = to_strict_json_schema(GradeSheet)


def brief_prompt(paper: Record, feedback: tuple[str, ...] = ()) -> str:
    terms = redactions(paper.title, paper.abstract, [])
    context = {"title": paper.title, "abstract": paper.abstract, "redactions": terms}
    return PROMPTS["brief"].render({**context, "feedback": list(feedback)})


def grade_prompt(paper: Record) -> str:
    cited = {r.key: r for r in WORLD.records}
    references = [
        {
            "id": c.cites,
            "title": cited[c.cites].title,
            "abstract": cited[c.cites].abstract,
            "contexts": [f"{ctx} {cited[c.cites].title.lower()} [2]." for ctx in c.contexts],
            "intents": c.intents,
            "influential": c.influential,
        }
        for c in paper.references
    ]
    return PROMPTS["grade"].render(part_context(paper.title, paper.abstract, references, 1, 1))


def ask(prompt: str, schema: Any, rates: T.TruthRates = NONE, memory: Any = MEMORY) -> T.Answer:
    found = T.answer(memory, rates, 0, prompt, schema)
    assert found is not None
    return found


def test_each_prompt_is_recognised_and_others_are_not() -> None:
    assert T.prompt_kind(brief_prompt(TARGET)) == "brief"
    assert T.prompt_kind(PROMPTS["audit_identity"].render({"brief": "b"})) == "audit_identity"
    guess = PROMPTS["audit_mechanism_guess"].render({"brief": "b"})
    assert T.prompt_kind(guess) == "audit_mechanism_guess"
    mechanism = PROMPTS["audit_mechanism"].render({"guess": "g", "abstract": "a"})
    assert T.prompt_kind(mechanism) == "audit_mechanism"
    assert T.prompt_kind(grade_prompt(TARGET)) == "grade"
    assert T.prompt_kind("Summarise the paper.") is None
    assert T.answer(MEMORY, NONE, 0, "Summarise the paper.", BRIEF_SCHEMA) is None


def test_a_foreign_schema_gets_no_answer() -> None:
    other_schema = to_strict_json_schema(IdentityGuess)  # the keys do not fit a brief
    assert T.answer(MEMORY, NONE, 0, brief_prompt(TARGET), other_schema) is None
    assert T.answer(MEMORY, NONE, 0, brief_prompt(TARGET), None) is None


def test_the_answers_come_from_the_prompt_not_the_world() -> None:
    """A paper no world holds is briefed and graded all the same, and an empty memory changes
    neither answer: only identity reads what the model knows."""
    stranger = dataclasses.replace(TARGET, key="P000099", title="Unknown: a stranger")
    empty = T.emulated_audit.Memory([], T.KNOWLEDGE_CUTOFF)
    for prompt, schema in ((brief_prompt(stranger), BRIEF_SCHEMA), (grade_prompt(TARGET), SHEET)):
        assert ask(prompt, schema).value == ask(prompt, schema, memory=empty).value
    text = ask(brief_prompt(TARGET), BRIEF_SCHEMA).value["brief"]
    assert "streaming inputs" in text and "Velkora" not in text  # its own setting, not its name


def test_a_field_scope_states_the_lead_problem_only() -> None:
    prompt = brief_prompt(TARGET)
    found = T.answer(MEMORY, NONE, 0, prompt, BRIEF_SCHEMA, scope="field")
    assert found is not None
    text = found.value["brief"]
    assert "lumen corpora" in text and "streaming inputs" not in text


def test_a_sabotaged_brief_prompt_gets_the_abstract_back() -> None:
    prompt = brief_prompt(TARGET)
    sabotaged = re.sub(r"The brief must NOT.*?\.\n(?=\n|The data)", "", prompt, flags=re.DOTALL)
    sabotaged = re.sub(r"Never use any of these.*?\.\n", "", sabotaged, flags=re.DOTALL)
    assert "must NOT" not in sabotaged and "Never" not in sabotaged
    assert ask(sabotaged, BRIEF_SCHEMA).value["brief"] == TARGET.abstract


def test_refusal_and_invalid_json_are_planted_as_faults() -> None:
    prompt = brief_prompt(TARGET)
    assert ask(prompt, BRIEF_SCHEMA, dataclasses.replace(NONE, refusal=1.0)).fault == "refusal"
    spoiled = ask(prompt, BRIEF_SCHEMA, dataclasses.replace(NONE, invalid_json=1.0))
    assert spoiled.fault == "invalid_json" and ask(prompt, BRIEF_SCHEMA).fault is None


def identity(text: str, memory: Any = MEMORY) -> str:
    prompt = PROMPTS["audit_identity"].render({"brief": text})
    return str(ask(prompt, to_strict_json_schema(IdentityGuess), memory=memory).value["title"])


def test_identity_knows_only_what_the_model_read_before_its_cutoff() -> None:
    text = "A brief in which VELR appears as a word."
    assert identity(text) != TARGET.title  # first public 2025-01-02: after the default cutoff
    later = T.emulated_audit.Memory(WORLD.records, dt.date(2025, 6, 1))
    assert identity(text, later) == TARGET.title


def test_the_mechanism_prompts_read_the_brief_then_the_abstract() -> None:
    guess_prompt = PROMPTS["audit_mechanism_guess"].render({"brief": "We expect VELR to help."})
    guess = ask(guess_prompt, to_strict_json_schema(MechanismGuess)).value["mechanism"]
    assert "VELR" in guess
    graded = PROMPTS["audit_mechanism"].render({"guess": guess, "abstract": TARGET.abstract})
    assert ask(graded, to_strict_json_schema(MechanismOverlap)).value["overlap"] == "full"


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
            "prompt": brief_prompt(TARGET),
        }
    ]
    sheet = truth.answer(grade_prompt(TARGET), SHEET)
    assert sheet is not None
    delivered = {"grades": sheet.value["grades"][:-1]}  # a drop_item fault took the last
    truth.record(sheet, delivered, "request-2")
    (logged,) = truth.grades()
    assert logged["drop"] == [WORLD.records[3].title]
    assert [i["tier"] for i in logged["items"]][-1] is None
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
