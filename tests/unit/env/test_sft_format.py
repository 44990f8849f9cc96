"""The OpenAI chat fine-tuning check: a line of the LLM agent's transcript passes, and each
documented rule, broken on purpose, is named; the TRL row holds the same transcript with dict
arguments."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest

from inspire_build.env import sft_format, transcript


def _line() -> dict[str, Any]:
    """A small transcript in the agent's own format: search, read, submit, closing."""
    messages = transcript.opening(dt.date(2024, 6, 1), 3, "A brief.")
    messages.append(transcript.tool_call(1, "search", {"query": "alpha", "k": 5}))
    messages.append(transcript.tool_answer("call_1", transcript.search_body("ok", (), 2)))
    messages.append(transcript.tool_call(2, "read", {"paper_id": "W1"}))
    messages.append(transcript.tool_answer("call_2", transcript.read_body("ok", None, 1)))
    messages.append(transcript.tool_call(3, "submit", {"ranking": ["W1"]}))
    messages.append(transcript.tool_answer("call_3", transcript.submit_body("ok", ["W1"])))
    messages.append(transcript.closing(1))
    return {"messages": messages, "tools": copy.deepcopy(transcript.TOOLS)}


def _args(line: dict[str, Any], index: int, arguments: object) -> None:
    line["messages"][index]["tool_calls"][0]["function"]["arguments"] = arguments


def test_the_agents_transcript_is_valid() -> None:
    assert sft_format.problems(_line()) == []
    ends_on_a_call = _line()
    ends_on_a_call["messages"] = ends_on_a_call["messages"][:-3]  # the last call needs no answer
    assert sft_format.problems(ends_on_a_call) == []
    weighted = _line()
    weighted["messages"][2]["weight"] = 0  # don't train on the first search
    assert sft_format.problems(weighted) == []


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "an unknown top-level key": (lambda r: r.update(instance_id="i1"), "unknown key 'instance_id'"),
    "no messages": (lambda r: r.update(messages=[]), "no messages list"),
    "an unknown role": (lambda r: r["messages"][1].update(role="developer"), "unknown role"),
    "a message key": (lambda r: r["messages"][1].update(meta=1), "unknown key 'meta'"),
    "empty user text": (lambda r: r["messages"][1].update(content=""), "needs text content"),
    "an empty assistant": (
        lambda r: r["messages"][-1].update(content=None),
        "needs content or tool_calls",
    ),
    "a weight of 2": (lambda r: r["messages"][-1].update(weight=2), "weight must be 0 or 1"),
    "weights all 0": (
        lambda r: [m.update(weight=0) for m in r["messages"] if m["role"] == "assistant"],
        "nothing to train on",
    ),
    "no assistant": (
        lambda r: r.update(messages=r["messages"][:2]),
        "no assistant message",
    ),
    "a tool message without ID": (
        lambda r: r["messages"][3].pop("tool_call_id"),
        "needs a tool_call_id",
    ),
    "an answer to no call": (
        lambda r: r["messages"][3].update(tool_call_id="call_9"),
        "answers no open tool call",
    ),
    "an unanswered call": (lambda r: r["messages"].pop(3), "unanswered"),
    "an ID used twice": (
        lambda r: r["messages"][4]["tool_calls"][0].update(id="call_1"),
        "used twice",
    ),
    "arguments as a dict": (lambda r: _args(r, 2, {"query": "alpha"}), "must be a JSON string"),
    "arguments not JSON": (lambda r: _args(r, 2, "{query: alpha}"), "not JSON"),
    "arguments not an object": (lambda r: _args(r, 2, '["alpha"]'), "not a JSON object"),
    "a required argument missing": (lambda r: _args(r, 2, '{"k": 5}'), "missing ['query']"),
    "an undeclared argument": (
        lambda r: _args(r, 2, '{"query": "a", "cutoff": "2030"}'),
        "unexpected ['cutoff']",
    ),
    "a mistyped argument": (lambda r: _args(r, 2, '{"query": 7}'), "query is not of type string"),
    "an out-of-bounds k": (lambda r: _args(r, 2, '{"query": "a", "k": 0}'), "out of bounds"),
    "a mistyped item": (lambda r: _args(r, 6, '{"ranking": [1]}'), "item of ranking"),
    "an undeclared tool": (
        lambda r: r["messages"][2]["tool_calls"][0]["function"].update(name="browse"),
        "undeclared tool 'browse'",
    ),
    "a call without type": (
        lambda r: r["messages"][2]["tool_calls"][0].pop("type"),
        "not {'id', 'type', 'function'}",
    ),
    "calls on a user message": (
        lambda r: r["messages"][1].update(tool_calls=[]),
        "non-empty list on an assistant",
    ),
    "a bad tool name": (
        lambda r: r["tools"][0]["function"].update(name="web search"),
        "a name must match",
    ),
    "a tool declared twice": (lambda r: r["tools"].append(r["tools"][0]), "declared twice"),
    "tools not a list": (lambda r: r.update(tools={"search": {}}), "tools is not a list"),
    "parallel_tool_calls not boolean": (
        lambda r: r.update(parallel_tool_calls="no"),
        "not a boolean",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_rule_broken_on_purpose_is_named(case: str) -> None:
    line = _line()
    breaking, expected = BROKEN[case]
    breaking(line)
    found = sft_format.problems(line)
    assert any(expected in problem for problem in found), found


def test_a_line_that_is_not_an_object() -> None:
    assert sft_format.problems([]) == ["the line is not a JSON object"]
    assert sft_format.problems(json.loads('"text"')) == ["the line is not a JSON object"]


def test_fits_reads_the_tools_own_schemas() -> None:
    search = transcript.TOOLS[0]["function"]
    assert isinstance(search, dict)
    schema = search["parameters"]
    assert sft_format.fits({"query": "q", "k": 100}, schema) is None
    assert sft_format.fits({"query": "q", "k": 101}, schema) == "k is out of bounds"
    assert sft_format.fits({"query": "q", "k": True}, schema) == "k is not of type integer"


def test_the_trl_row_has_dict_arguments_and_named_tool_answers() -> None:
    line = _line()
    before = copy.deepcopy(line)
    row = sft_format.trl_row(line)
    assert line == before  # the caller's line is left alone
    assert row["tools"] == transcript.TOOLS
    messages = row["messages"]
    assert isinstance(messages, list) and len(messages) == len(line["messages"])
    search = messages[2]
    assert "content" not in search  # no null content beside the calls
    assert search["tool_calls"][0]["function"]["arguments"] == {"query": "alpha", "k": 5}
    assert messages[3] == {**line["messages"][3], "name": "search"}
    assert messages[6]["tool_calls"][0]["function"]["arguments"] == {"ranking": ["W1"]}
    assert messages[:2] == line["messages"][:2] and messages[-1] == line["messages"][-1]
    # Not OpenAI's format: its arguments are dicts.
    assert any("must be a JSON string" in p for p in sft_format.problems(row))
