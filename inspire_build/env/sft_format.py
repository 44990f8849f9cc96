"""Chat fine-tuning lines: OpenAI's format checked, and the same transcript as a TRL row.

:func:`problems` checks one line of an OpenAI chat fine-tuning JSONL file against the format
that OpenAI documents (checked 2026-12-06):

- the API reference's ``FineTuneChatRequestInput`` (openai/openai-openapi): a line holds
  ``messages`` and optionally ``tools``, ``parallel_tool_calls`` and the deprecated
  ``functions``; a message is a system, user, assistant, tool or (deprecated) function message;
  the assistant's may carry ``tool_calls``, ``function_call``, ``refusal``, ``audio``, ``name``
  and ``weight``, which "controls whether the assistant message is trained against (0 or 1)";
- the fine-tuning guide's tool-calling example (as mirrored in Azure OpenAI's "Fine-tuning and
  tool calling"): a call is ``{"id", "type": "function", "function": {"name", "arguments"}}``
  with ``arguments`` a JSON *string*; a ``tool`` message answers one by ``tool_call_id``;
  ``tools`` declares the functions as ``{"type": "function", "function": {"name",
  "description", "parameters"}}``;
- the cookbook's "Data preparation and analysis for chat model fine-tuning" checks: the line is
  an object, ``messages`` is a non-empty list, every message has a known role, no unknown key
  and its content, and at least one assistant message is there to train on.

Beyond those, what the chat API requires of a conversation with tools: each call is answered by
a tool message before the conversation goes on (a call in the last message needs no answer),
IDs are unique, a call names a declared tool, and its arguments parse to an object that fits
the tool's parameters (``required``, ``additionalProperties``: false, and the property types).

:func:`trl_row` gives the same transcript as a conversational row for TRL's ``SFTTrainer``: a
``messages`` and a ``tools`` column, with each call's ``arguments`` a dict, as the TRL and
transformers docs ask ("Dataset formats: Tool calling"; transformers "Tool use": the OpenAI
API's JSON string "may cause errors" in chat templates, which expect a dict). A tool message
also names its function (TRL's example does). The rows vary in their argument keys, so load
them with ``datasets.Json`` columns (datasets >= 4.7), never as Arrow structs, which would pad
every call with the other tools' keys as nulls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

TOP_KEYS = {"messages", "tools", "parallel_tool_calls", "functions"}
MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {
        "role", "content", "name", "refusal", "tool_calls", "function_call", "audio", "weight",
    },
    "tool": {"role", "content", "tool_call_id"},
    "function": {"role", "content", "name"},
}  # fmt: skip
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list,
    "object": dict,
}  # fmt: skip


def problems(record: object) -> list[str]:
    """What keeps ``record`` from being a valid OpenAI chat fine-tuning line (empty: valid)."""
    if not isinstance(record, dict):
        return ["the line is not a JSON object"]
    found = [f"unknown key {key!r}" for key in sorted(set(record) - TOP_KEYS)]
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*found, "no messages list"]
    tools, tool_problems = _declared(record.get("tools"))
    found += tool_problems
    if "parallel_tool_calls" in record and not isinstance(record["parallel_tool_calls"], bool):
        found.append("parallel_tool_calls is not a boolean")
    for index, message in enumerate(messages):
        found += [f"message {index}: {p}" for p in _message(message)]
    found += _calls(messages, tools)
    assistants = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    if not assistants:
        found.append("no assistant message")
    elif all(m.get("weight", 1) == 0 for m in assistants):
        found.append("every assistant message has weight 0: nothing to train on")
    return found


def _declared(tools: object) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    """The declared functions' parameter schemas by name, and what is wrong with ``tools``."""
    if tools is None:
        return {}, []
    if not isinstance(tools, list):
        return {}, ["tools is not a list"]
    declared: dict[str, Mapping[str, Any]] = {}
    found = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or set(tool) != {"type", "function"}:
            found.append(f"tool {index}: not {{'type', 'function'}}")
        elif tool["type"] != "function" or not isinstance(function, dict):
            found.append(f"tool {index}: not a function")
        elif set(function) - {"name", "description", "parameters", "strict"}:
            found.append(f"tool {index}: unknown function key")
        elif not isinstance(function.get("name"), str) or not FUNCTION_NAME.match(function["name"]):
            found.append(f"tool {index}: a name must match {FUNCTION_NAME.pattern}")
        elif function["name"] in declared:
            found.append(f"tool {index}: {function['name']!r} declared twice")
        elif not isinstance(function.get("parameters", {}), dict):
            found.append(f"tool {index}: parameters is not a JSON Schema object")
        else:
            declared[function["name"]] = function.get("parameters", {})
    return declared, found


def _message(message: object) -> list[str]:
    if not isinstance(message, dict):
        return ["not an object"]
    role = message.get("role")
    if role not in MESSAGE_KEYS:
        return [f"unknown role {role!r}"]
    found = [f"unknown key {key!r}" for key in sorted(set(message) - MESSAGE_KEYS[role])]
    content = message.get("content")
    if role == "assistant":
        if content is None and not (message.get("tool_calls") or message.get("function_call")):
            found.append("an assistant message needs content or tool_calls")
        if "weight" in message and message["weight"] not in (0, 1):
            found.append("weight must be 0 or 1")
    elif not _text(content, empty=role in ("tool", "function")):
        found.append(f"a {role} message needs text content")
    call_id = message.get("tool_call_id")
    if role == "tool" and not (isinstance(call_id, str) and call_id):
        found.append("a tool message needs a tool_call_id")
    if role == "function" and not isinstance(message.get("name"), str):
        found.append("a function message needs a name")
    return found


def _text(content: object, empty: bool) -> bool:
    """A string (non-empty unless ``empty``), or a list of text parts."""
    if isinstance(content, str):
        return empty or bool(content)
    return (
        isinstance(content, list)
        and bool(content)
        and all(
            isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            for p in content
        )
    )


def _calls(messages: Sequence[object], tools: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each call well formed, of a declared tool, and answered before the conversation goes
    on; each tool message answers an open call."""
    found: list[str] = []
    seen: set[str] = set()
    open_calls: set[str] = set()
    called_at = -1
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":
            answered = str(message.get("tool_call_id"))
            if answered not in open_calls:
                found.append(f"message {index}: answers no open tool call")
            open_calls.discard(answered)
            continue
        if open_calls:
            found.append(f"message {index}: tool call(s) {sorted(open_calls)} unanswered")
            open_calls.clear()
        calls = message.get("tool_calls")
        if calls is None:
            continue
        if message.get("role") != "assistant" or not isinstance(calls, list) or not calls:
            found.append(f"message {index}: tool_calls must be a non-empty list on an assistant")
            continue
        for call in calls:
            problem, call_id = _call(call, tools)
            if problem:
                found.append(f"message {index}: {problem}")
            if call_id in seen:
                found.append(f"message {index}: tool call ID {call_id!r} used twice")
            seen.add(call_id)
            open_calls.add(call_id)
        called_at = index
    if open_calls and called_at != len(messages) - 1:
        found.append(f"tool call(s) {sorted(open_calls)} unanswered")
    return found


def _call(call: object, tools: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str]:
    """(what is wrong with a tool call or None, its ID)."""
    if not isinstance(call, dict) or set(call) != {"id", "type", "function"}:
        return "a tool call is not {'id', 'type', 'function'}", ""
    call_id, function = str(call["id"]), call["function"]
    if not isinstance(call["id"], str) or not call_id or call["type"] != "function":
        return "a tool call needs a string id and type 'function'", call_id
    if not isinstance(function, dict) or set(function) != {"name", "arguments"}:
        return "a call's function is not {'name', 'arguments'}", call_id
    name, arguments = str(function["name"]), function["arguments"]
    if tools and name not in tools:
        return f"call of undeclared tool {name!r}", call_id
    if not isinstance(arguments, str):
        return f"{name}: arguments must be a JSON string", call_id
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return f"{name}: arguments are not JSON", call_id
    if not isinstance(parsed, dict):
        return f"{name}: arguments are not a JSON object", call_id
    misfit = fits(parsed, tools.get(name, {}))
    return (f"{name}: {misfit}" if misfit else None), call_id


def fits(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not fit a tool's parameters (``required``, ``additionalProperties``:
    false, and the property types, bounds and item types); None when they do."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [key for key in schema.get("required", []) if key not in arguments]
    if missing:
        return f"missing {missing}"
    extra = sorted(set(arguments) - set(properties))
    if extra and schema.get("additionalProperties") is False:
        return f"unexpected {extra}"
    for key, value in arguments.items():
        wanted = properties.get(key, {})
        if not _typed(value, wanted.get("type")):
            return f"{key} is not of type {wanted['type']}"
        if isinstance(value, int | float) and not (
            wanted.get("minimum", value) <= value <= wanted.get("maximum", value)
        ):
            return f"{key} is out of bounds"
        items = wanted.get("items", {}).get("type")
        if isinstance(value, list) and not all(_typed(v, items) for v in value):
            return f"an item of {key} is not of type {items}"
    return None


def _typed(value: object, kind: object) -> bool:
    if kind is None:
        return True
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    wanted = _TYPES.get(str(kind))
    return wanted is None or isinstance(value, wanted)


def trl_row(record: Mapping[str, Any]) -> dict[str, object]:
    """The OpenAI line as a TRL conversational row: ``arguments`` decoded to a dict, no null
    ``content`` beside ``tool_calls``, and each tool message naming the function it answers."""
    names: dict[str, str] = {}
    messages: list[dict[str, Any]] = []
    for message in record["messages"]:
        row = dict(message)
        if row.get("tool_calls"):
            if row.get("content") is None:
                row.pop("content", None)
            row["tool_calls"] = [
                {**call, "function": {**call["function"], "arguments": json.loads(
                    call["function"]["arguments"])}}
                for call in row["tool_calls"]
            ]  # fmt: skip
            names |= {call["id"]: call["function"]["name"] for call in row["tool_calls"]}
        if row.get("role") == "tool":
            row["name"] = names.get(row["tool_call_id"], "")
        messages.append(row)
    return {"messages": messages, "tools": list(record.get("tools", []))}
