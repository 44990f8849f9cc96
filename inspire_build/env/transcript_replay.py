"""A chat transcript read back into tool calls and replayed through a fresh environment.

The check of an exported demonstration that trusts nothing but its text: the calls are parsed
from the messages (never taken from the object that wrote them), run in order on a new
:class:`~inspire_build.env.core.SearchEnv` for the instance, with the transcript's budget, over
the same backend; every tool answer in the transcript must equal the environment's answer, as
:mod:`~inspire_build.env.transcript` writes it, and the submission must be accepted as written
(the first and only one, its answer ``ok`` with the same ranking: one the environment cleans,
of duplicates or past 100 IDs, does not replay). The opening (system prompt, cutoff, budget,
brief) must be the one the LLM agent is given; a transcript ends at the submission's answer
(as the agent's conversation does) or at the closing message the export adds after it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from inspire_build.env import transcript
from inspire_build.env.core import Backend, SearchEnv, Task
from inspire_build.env.limits import DEFAULT_K


class TranscriptError(ValueError):
    """The messages are not a transcript of tool calls and answers."""


@dataclasses.dataclass(frozen=True)
class ToolCall:
    """One call as the transcript shows it, with the tool message that answered it."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    answer: object  # the tool message's content, parsed from JSON


def calls(messages: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """The tool calls of the assistant messages, in order, each with its answer (the tool
    message with its ID that follows it); raises :class:`TranscriptError`."""
    answers: dict[str, object] = {}
    for message in messages:
        if message.get("role") == "tool":
            try:
                answers[str(message["tool_call_id"])] = json.loads(message["content"])
            except (KeyError, TypeError, json.JSONDecodeError) as error:
                raise TranscriptError(f"a tool message is not a JSON answer ({error})") from error
    found = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            try:
                call_id, function = str(call["id"]), call["function"]
                arguments = json.loads(function["arguments"])
                name = str(function["name"])
            except (KeyError, TypeError, json.JSONDecodeError) as error:
                raise TranscriptError(f"a malformed tool call ({error})") from error
            if not isinstance(arguments, dict):
                raise TranscriptError(f"{call_id}: arguments are not an object")
            if call_id not in answers:
                raise TranscriptError(f"{call_id}: no tool message answers it")
            found.append(ToolCall(call_id, name, arguments, answers[call_id]))
    return found


def _answer(env: SearchEnv, call: ToolCall) -> dict[str, object]:
    """What the environment answers to ``call``, in the transcript's words."""
    args = call.arguments
    if call.name == "search" and isinstance(args.get("query"), str):
        found = env.search(args["query"], int(args.get("k", DEFAULT_K)))  # as the LLM agent
        return transcript.search_body(found.status.value, found.results, found.budget_left)
    if call.name == "read" and isinstance(args.get("paper_id"), str):
        read = env.read(args["paper_id"])
        return transcript.read_body(read.status.value, read.paper, read.budget_left)
    if call.name == "submit" and isinstance(args.get("ranking"), list):
        submitted = env.submit([str(paper_id) for paper_id in args["ranking"]])
        return transcript.submit_body(submitted.status.value, submitted.ranking)
    raise TranscriptError(f"{call.call_id}: {call.name}({dict(args)}) is not a tool call")


def replay(record: Mapping[str, Any], task: Task, budget: int, backend: Backend) -> list[str]:
    """Why the transcript ``record`` does not replay on ``task`` (empty: it does)."""
    messages = record.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        return ["no transcript"]
    found = []
    if messages[:2] != transcript.opening(task.cutoff, budget, task.brief):
        found.append("the opening is not this instance's task")
    try:
        parsed = calls(messages)
    except TranscriptError as error:
        return [*found, str(error)]
    env = SearchEnv(task, budget, backend)
    for call in parsed:
        if env.submitted is not None:
            found.append(f"{call.call_id}: a call after the submission")
            break
        try:
            answer = _answer(env, call)
        except TranscriptError as error:
            found.append(str(error))
            break
        if json.loads(json.dumps(answer)) != call.answer:
            found.append(f"{call.call_id}: the {call.name} answer is not the environment's")
    last = messages[-1]
    if env.submitted is None:
        found.append("nothing was submitted")
    elif last.get("role") != "tool" and last != transcript.closing(len(env.submitted)):
        found.append("the closing message is not the agent's")
    return found
