"""Hindsight demonstrations: hand-computed weights, the greedy build, the replay check, the title
n-gram rule, the chat SFT record against the OpenAI fine-tuning format, and the check of the
exported transcript (the format and replay checks themselves: env/test_sft_format.py and
env/test_transcript_replay.py; the toy policy learnt from them: env/test_policy.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from inspire_build import hindsight
from inspire_build.env import policy, sft_format
from inspire_build.env.core import Found, PaperView, Task, Work
from inspire_build.hindsight import Antecedent, Drop, GoldInstance, ReadCall, SearchCall

CUTOFF = dt.date(2024, 6, 1)
EARLY = dt.date(2020, 1, 1)
BRIEF = "Problem. Alpha beta systems. Gamma graphs."

# The OpenAI fine-tuning chat format (chat completions with tools): one object per line.
_FUNCTION_CALL = {
    "type": "object",
    "required": ["id", "type", "function"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                "arguments": {"type": "string"},
            },
        },
    },
}
SFT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["messages"],
    "additionalProperties": False,
    "properties": {
        "messages": {
            "type": "array",
            "minItems": 2,
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["role", "content"],
                        "additionalProperties": False,
                        "properties": {
                            "role": {"enum": ["system", "user"]},
                            "content": {"type": "string", "minLength": 1},
                            "name": {"type": "string"},
                        },
                    },
                    {
                        "type": "object",
                        "required": ["role"],
                        "additionalProperties": False,
                        "anyOf": [
                            {
                                "required": ["content"],
                                "properties": {"content": {"type": "string"}},
                            },
                            {"required": ["tool_calls"]},
                        ],
                        "properties": {
                            "role": {"const": "assistant"},
                            "content": {"type": ["string", "null"]},
                            "tool_calls": {"type": "array", "minItems": 1, "items": _FUNCTION_CALL},
                            "weight": {"enum": [0, 1]},
                            "name": {"type": "string"},
                        },
                    },
                    {
                        "type": "object",
                        "required": ["role", "tool_call_id", "content"],
                        "additionalProperties": False,
                        "properties": {
                            "role": {"const": "tool"},
                            "tool_call_id": {"type": "string", "minLength": 1},
                            "content": {"type": "string"},
                        },
                    },
                ]
            },
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "function"],
                "additionalProperties": False,
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "required": ["name", "parameters"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                            "description": {"type": "string"},
                            "parameters": {"type": "object"},
                        },
                    },
                },
            },
        },
        "parallel_tool_calls": {"type": "boolean"},
    },
}


def validate_sft(record: Mapping[str, Any]) -> None:
    """This schema, written apart from the package, and the package's own check of the format
    (:func:`inspire_build.env.sft_format.problems`: IDs answered, declared tools, JSON object
    arguments that fit their tool, an assistant message to train on)."""
    jsonschema.validate(record, SFT_SCHEMA)
    found = sft_format.problems(record)
    if found:
        raise ValueError("; ".join(found))


class MapBackend:
    """Fixed results per query; reads by paper_id."""

    name = "map"

    def __init__(self, results: dict[str, list[str]], works: dict[str, Work]) -> None:
        self.results, self.works = results, works

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        return [self.works[d] for d in self.results.get(query, [])][:k]

    def read(self, paper_id: str) -> Work | None:
        return self.works.get(paper_id)


def _work(paper_id: str, abstract: str = "", public_by: dt.date = EARLY) -> Work:
    return Work(paper_id, public_by, title=f"title of {paper_id}", abstract=abstract, year=2020)


WORKS = {
    "a1": _work("a1", "Delta zeta."),
    "a2": _work("a2"),
    "x": _work("x"),
    "late": _work("late", public_by=CUTOFF),
    "target": _work("target"),
}
RESULTS = {
    "problem": ["x"],
    "alpha beta systems": ["a1", "x", "late"],
    "gamma graphs": ["a2", "target"],
    "delta zeta": ["x"],
}
INSTANCE = GoldInstance(
    Task("i1", BRIEF, CUTOFF, frozenset({"target"})),
    (
        Antecedent("a1", 3, "Alpha systems", "alpha beta systems delta"),
        Antecedent("a2", 1, "Gamma graphs", "gamma graphs problem"),
    ),
)


def _built(budget: int = 20) -> tuple[hindsight.Demonstration, MapBackend]:
    backend = MapBackend(RESULTS, WORKS)
    return hindsight.build(INSTANCE, *hindsight.probe(INSTANCE, backend), budget=budget), backend


def test_candidate_weights_by_hand() -> None:
    antecedents = [
        Antecedent("a", 3, None, "alpha delta"),
        Antecedent("b", 1, "gamma beta", None),
    ]
    weights = hindsight.candidate_weights(["alpha beta", "gamma", "omega"], antecedents)
    # (3·1/2 + 1·1/2) / 4 = 0.5; (0 + 1·1) / 4 = 0.25; no overlap = 0
    assert weights == {"alpha beta": 0.5, "gamma": 0.25, "omega": 0.0}


def test_greedy_build_searches_reads_and_ranks_by_tier() -> None:
    demo, _ = _built()
    # "alpha beta systems" exposes the T3 (largest Exposed gain), the read of a1 adds
    # "delta zeta", then "gamma graphs" adds the T1; nothing else exposes a new antecedent.
    assert demo.queries == ("alpha beta systems", "gamma graphs")
    assert [type(a).__name__ for a in demo.actions] == [
        "SearchCall",
        "ReadCall",
        "SearchCall",
        "ReadCall",
    ]
    first = demo.actions[0]
    assert isinstance(first, SearchCall) and first.exposed == ("a1", "x")  # late is filtered
    third = demo.actions[2]
    assert isinstance(third, SearchCall) and third.exposed == ("a2",)  # the target is withheld
    assert demo.ranking == ("a1", "a2")
    assert demo.steps() == (("a1", "x"), ("a1",), ("a2",), ("a2",))


def test_build_respects_the_budget() -> None:
    demo, backend = _built(budget=1)
    assert len(demo.actions) == 1 and demo.ranking == ("a1",)
    assert hindsight.check(demo, INSTANCE, backend)[0] == []


def test_check_keeps_a_faithful_demo_and_names_each_fault() -> None:
    demo, backend = _built()
    assert hindsight.check(demo, INSTANCE, backend)[0] == []
    first = demo.actions[0]
    assert isinstance(first, SearchCall)
    lying = dataclasses.replace(first, results=(*first.results, Found("a2", None, None, 0.0)))
    tampered = dataclasses.replace(demo, actions=(lying, *demo.actions[1:]))
    assert hindsight.check(tampered, INSTANCE, backend)[0] == [Drop.MISMATCH]
    tight = dataclasses.replace(demo, budget=3)
    assert hindsight.check(tight, INSTANCE, backend)[0] == [Drop.OVER_BUDGET]
    cheating = dataclasses.replace(demo, ranking=("target", *demo.ranking))
    assert hindsight.check(cheating, INSTANCE, backend)[0] == [Drop.WITHHELD, Drop.UNEXPOSED]
    view = PaperView("late", None, None, None, ())
    peeking = dataclasses.replace(demo, actions=(*demo.actions, ReadCall("late", view)))
    reasons = hindsight.check(peeking, INSTANCE, backend)[0]
    assert reasons == [Drop.NOT_AVAILABLE, Drop.WITHHELD]
    empty = dataclasses.replace(demo, actions=demo.actions[:1], ranking=())
    assert hindsight.check(empty, INSTANCE, backend)[0] == [Drop.NO_GAIN]


def test_title_ngrams_copied_only_when_not_seen_earlier() -> None:
    title = "one two three four five"
    query = SearchCall("one two three four five six", 20, ())
    read = ReadCall("a1", PaperView("a1", "t", "so one two three four five", None, ()))
    demo = hindsight.Demonstration("i", "a brief", CUTOFF, 20, (query,), ())
    assert hindsight.copied_title_ngrams(demo, [title]) == [
        (query.query, ("one", "two", "three", "four", "five"))
    ]
    assert hindsight.copied_title_ngrams(demo, ["one two three four"]) == []  # a 4-gram is fine
    in_brief = dataclasses.replace(demo, brief="we need one two three four five here")
    assert hindsight.copied_title_ngrams(in_brief, [title]) == []
    assert (
        hindsight.copied_title_ngrams(dataclasses.replace(demo, actions=(read, query)), [title])
        == []
    )
    read_after = dataclasses.replace(demo, actions=(query, read))
    assert len(hindsight.copied_title_ngrams(read_after, [title])) == 1


def test_chat_record_is_openai_fine_tuning_format() -> None:
    demo, _ = _built()
    record = hindsight.chat_record(demo)
    validate_sft(record)
    messages = record["messages"]
    assert isinstance(messages, list)
    calls = [m["tool_calls"][0]["function"] for m in messages if m.get("tool_calls")]
    assert [c["name"] for c in calls] == ["search", "read", "search", "read", "submit"]
    assert json.loads(calls[0]["arguments"]) == {"query": "alpha beta systems", "k": 20}
    first_result = json.loads(messages[3]["content"])
    assert [r["paper_id"] for r in first_result["results"]] == ["a1", "x"]
    assert first_result["budget_left"] == 19
    assert json.loads(calls[-1]["arguments"]) == {"ranking": ["a1", "a2"]}
    broken = json.loads(json.dumps(record))
    del broken["messages"][3]["tool_call_id"]
    with pytest.raises(jsonschema.ValidationError):
        validate_sft(broken)
    unanswered = json.loads(json.dumps(record))
    unanswered["messages"][3]["tool_call_id"] = "call_99"
    with pytest.raises(ValueError, match="answers no open tool call"):
        validate_sft(unanswered)


class Drifting(MapBackend):
    """Scores that drift from one call to the next, the same IDs in the same order: the replay
    check, which compares exposure, passes; the transcript's answers do not replay."""

    def __init__(self, results: dict[str, list[str]], works: dict[str, Work]) -> None:
        super().__init__(results, works)
        self.calls = 0

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        self.calls += 1
        found = super().search(query, k, cutoff)
        return [dataclasses.replace(w, score=float(self.calls)) for w in found]


def test_a_transcript_that_does_not_replay_is_dropped_with_its_reason() -> None:
    demo, backend = _built()
    assert hindsight.check_transcript(demo, INSTANCE, backend) == []
    kept = hindsight.build_all([INSTANCE], MapBackend(RESULTS, WORKS))
    assert kept.reasons == {"i1": ()} and kept.kept
    drifting = hindsight.build_all([INSTANCE], Drifting(RESULTS, WORKS))
    assert drifting.reasons == {"i1": (Drop.TRANSCRIPT,)} and not drifting.kept
    assert drifting.drop_counts() == {"transcript_replay_mismatch": 1}


def test_a_transcript_off_the_format_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    demo, backend = _built()
    record = hindsight.chat_record(demo)

    def as_dicts(_demo: hindsight.Demonstration) -> dict[str, object]:
        return sft_format.trl_row(record)  # arguments as dicts: not OpenAI's format

    monkeypatch.setattr(hindsight, "chat_record", as_dicts)
    assert hindsight.check_transcript(demo, INSTANCE, backend) == [Drop.SFT_FORMAT, Drop.TRANSCRIPT]


def test_the_export_writes_both_transcripts_and_labels_the_toy_policy(tmp_path: Path) -> None:
    outcome = hindsight.build_all([INSTANCE], MapBackend(RESULTS, WORKS), budget=20)
    manifest = hindsight.export(tmp_path, outcome, {"split": "train"}, [INSTANCE])
    openai_lines = (tmp_path / hindsight.OPENAI_FILE).read_text(encoding="utf-8").splitlines()
    trl_lines = (tmp_path / hindsight.TRL_FILE).read_text(encoding="utf-8").splitlines()
    assert len(openai_lines) == len(trl_lines) == 1
    assert json.loads(trl_lines[0]) == sft_format.trl_row(json.loads(openai_lines[0]))
    files = manifest["files"]
    assert (
        manifest["budget"] == 20 and isinstance(files, dict) and set(files) == set(hindsight.FILES)
    )
    assert manifest["policy"] == policy.TOY and (tmp_path / "policy.json").exists()
    empty = hindsight.DemoOutcome((), {})
    assert "policy" not in hindsight.export(tmp_path / "none", empty, {}, [INSTANCE])
