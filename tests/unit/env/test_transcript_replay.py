"""A demonstration's transcript, read back from its JSON text, replays on a fresh environment;
each kind of tampering (an answer, a call, the task, the submission) is caught."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from inspire_build import hindsight
from inspire_build.env import transcript
from inspire_build.env.transcript_replay import TranscriptError, calls, replay
from tests.unit.test_hindsight import INSTANCE, RESULTS, WORKS, MapBackend

TASK = INSTANCE.task


def _line(budget: int = 20) -> dict[str, Any]:
    backend = MapBackend(RESULTS, WORKS)
    demo = hindsight.build(INSTANCE, *hindsight.probe(INSTANCE, backend), budget=budget)
    return dict(json.loads(json.dumps(hindsight.chat_record(demo))))


def _answer(line: dict[str, Any], index: int) -> dict[str, Any]:
    return dict(json.loads(line["messages"][index]["content"]))


def _set_answer(line: dict[str, Any], index: int, change: Callable[[dict[str, Any]], None]) -> None:
    answer = _answer(line, index)
    change(answer)
    line["messages"][index]["content"] = json.dumps(answer)


def _set_args(line: dict[str, Any], index: int, arguments: dict[str, object]) -> None:
    line["messages"][index]["tool_calls"][0]["function"]["arguments"] = json.dumps(arguments)


def test_the_calls_are_read_from_the_messages() -> None:
    parsed = calls(_line()["messages"])
    assert [(c.call_id, c.name) for c in parsed] == [
        ("call_1", "search"),
        ("call_2", "read"),
        ("call_3", "search"),
        ("call_4", "read"),
        ("call_5", "submit"),
    ]
    assert parsed[0].arguments == {"query": "alpha beta systems", "k": 20}
    assert isinstance(parsed[0].answer, dict) and parsed[0].answer["budget_left"] == 19
    assert parsed[-1].answer == {"status": "ok", "ranking": ["a1", "a2"]}


def test_a_faithful_transcript_replays() -> None:
    line = _line()
    assert replay(line, TASK, 20, MapBackend(RESULTS, WORKS)) == []
    line["messages"].pop()  # as the LLM agent's conversation, it may end at the submission
    assert replay(line, TASK, 20, MapBackend(RESULTS, WORKS)) == []


def _title(a: dict[str, Any]) -> None:
    a["results"][0]["title"] = "a better title"


TAMPERED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a result's title": (lambda r: _set_answer(r, 3, _title), "call_1: the search answer"),
    "a result added": (
        lambda r: _set_answer(r, 3, lambda a: a["results"].append(a["results"][0])),
        "call_1: the search answer",
    ),
    "the budget left": (
        lambda r: _set_answer(r, 5, lambda a: a.update(budget_left=40)),
        "call_2: the read answer",
    ),
    "a read abstract": (
        lambda r: _set_answer(r, 5, lambda a: a["paper"].update(abstract="Gamma graphs.")),
        "call_2: the read answer",
    ),
    "the query asked": (
        lambda r: _set_args(r, 2, {"query": "gamma graphs", "k": 20}),
        "call_1: the search answer",
    ),
    "a read of the target": (
        lambda r: _set_args(r, 4, {"paper_id": "target"}),
        "call_2: the read answer",
    ),
    "the ranking submitted": (
        lambda r: _set_args(r, 10, {"ranking": ["a2", "a1"]}),
        "call_5: the submit answer",
    ),
    "the brief": (
        lambda r: r["messages"][1].update(content=r["messages"][1]["content"] + " More."),
        "the opening is not this instance's task",
    ),
    "the closing": (
        lambda r: r["messages"][-1].update(content="Submitted 9 papers."),
        "the closing message",
    ),
    "no submission": (lambda r: r.update(messages=r["messages"][:10]), "nothing was submitted"),
    "an unknown tool": (
        lambda r: r["messages"][2]["tool_calls"][0]["function"].update(name="browse"),
        "browse(",
    ),
    "a call after the submission": (
        lambda r: r["messages"].extend(r["messages"][2:4]),
        "call_1: a call after the submission",
    ),
    "an unanswered call": (lambda r: r["messages"].pop(3), "call_1: no tool message answers it"),
    "a malformed call": (
        lambda r: r["messages"][2]["tool_calls"][0]["function"].update(arguments="{"),
        "a malformed tool call",
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_each_tampering_is_caught(case: str) -> None:
    line = _line()
    tamper, expected = TAMPERED[case]
    tamper(line)
    found = replay(line, TASK, 20, MapBackend(RESULTS, WORKS))
    assert any(expected in problem for problem in found), found


def test_another_task_budget_or_world_does_not_replay() -> None:
    line, backend = _line(), MapBackend(RESULTS, WORKS)
    later = dataclasses.replace(TASK, cutoff=TASK.cutoff.replace(year=2025))
    assert replay(line, later, 20, backend) == [
        "the opening is not this instance's task",
        "call_1: the search answer is not the environment's",  # "late" is public by then
    ]
    assert "the opening is not this instance's task" in replay(line, TASK, 21, backend)
    assert replay(_line(budget=3), TASK, 3, backend) == []  # a tighter budget, stated as such
    moved = {**RESULTS, "alpha beta systems": ["x", "a1"]}
    assert replay(line, TASK, 20, MapBackend(moved, WORKS)) == [
        "call_1: the search answer is not the environment's"
    ]


def test_a_submission_must_be_accepted_as_written() -> None:
    line = _line()
    twice = transcript.tool_call(6, "submit", {"ranking": ["a1", "a1", "a2"]})
    answer = transcript.tool_answer("call_6", transcript.submit_body("ok", ["a1", "a1", "a2"]))
    line["messages"] = [*line["messages"][:10], twice, answer, transcript.closing(2)]
    # The environment keeps a duplicate once: the answer in the transcript is not its answer.
    assert replay(line, TASK, 20, MapBackend(RESULTS, WORKS)) == [
        "call_6: the submit answer is not the environment's"
    ]


def test_calls_refuse_what_is_not_a_transcript() -> None:
    line = _line()
    line["messages"][3]["content"] = "not json"
    with pytest.raises(TranscriptError, match="not a JSON answer"):
        calls(line["messages"])
    assert replay({"messages": []}, TASK, 20, MapBackend(RESULTS, WORKS)) == ["no transcript"]
