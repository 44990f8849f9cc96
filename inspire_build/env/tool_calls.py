"""A model's tool calls, read and checked against the tools' JSON schemas (``transcript.TOOLS``)
before any is made.

A message's calls are malformed, all of them, when one of them names a tool other than
``search``, ``read`` and ``submit``, has arguments that are not a JSON object, or has arguments
its tool's schema refuses (a missing or unknown property, a wrong type, ``k`` out of 1–100).
Several calls in one message are allowed: they are made in order, each costing what it costs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, cast

from inspire_build.env import transcript

SHOWN = 120  # characters of a model's text that a failure's detail repeats


class Malformed(ValueError):
    """A message's tool calls cannot be made: the reason, in one line."""


@dataclasses.dataclass(frozen=True)
class Call:
    """One checked call: its ID (the model's, else ``call_<n>``), tool, arguments, and the
    arguments' text as the model wrote it, to echo back in the conversation."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    text: str

    def wire(self) -> dict[str, object]:
        """The call as the assistant message holds it."""
        function = {"name": self.name, "arguments": self.text}
        return {"id": self.call_id, "type": "function", "function": function}


def clipped(text: str, limit: int = SHOWN) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# The JSON types of the schema subset ``transcript.TOOLS`` uses (a bool is no integer).
_TYPES: dict[str, Callable[[object], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
}


def schema_problem(
    schema: Mapping[str, Any], value: object, where: str = "arguments"
) -> str | None:
    """What in ``value`` breaks ``schema`` (the keywords the tools' schemas use: ``type``,
    ``properties``, ``required``, ``additionalProperties: false``, ``items``, ``minimum``,
    ``maximum``), at ``where``; None when nothing does."""
    kind = schema.get("type")
    if kind is not None and not _TYPES[kind](value):
        return f"{where} is not of type {kind}"
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            return f"{where} is out of its range"
    if isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            problem = schema_problem(schema["items"], item, f"{where}[{n}]")
            if problem is not None:
                return problem
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        missing = [name for name in schema.get("required", ()) if name not in value]
        if missing:
            return f"{where} lack {', '.join(missing)}"
        unknown = [clipped(str(name), 40) for name in value if name not in properties]
        if unknown and schema.get("additionalProperties") is False:
            return f"{where} hold unknown properties: {', '.join(unknown)}"
        for name, item in value.items():
            if name in properties:
                problem = schema_problem(properties[name], item, f"{name}")
                if problem is not None:
                    return problem
    return None


@functools.cache
def _schemas() -> dict[str, Mapping[str, Any]]:
    """Each tool's parameters' schema, by the tool's name."""
    found = {}
    for tool in transcript.TOOLS:
        function = cast(dict[str, Any], tool["function"])
        found[str(function["name"])] = cast(Mapping[str, Any], function["parameters"])
    return found


def read_calls(message: Mapping[str, Any], first_number: int = 1) -> list[Call]:
    """The message's tool calls, checked; :class:`Malformed` for the first that is not a call
    of one of the tools with arguments its schema takes. ``first_number``: the number of the
    first call of this message in the conversation, for calls the model gave no ID."""
    listed = message.get("tool_calls") or []
    if not isinstance(listed, list):
        raise Malformed("tool_calls is not a list")
    return [_call(raw, first_number + n) for n, raw in enumerate(listed)]


def _call(raw: Any, number: int) -> Call:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise Malformed("a tool call without a function name")
    name, given = str(function["name"]), function.get("arguments")
    schema = _schemas().get(name)
    if schema is None:
        raise Malformed(f"unknown tool {clipped(name, 40)!r}")
    if isinstance(given, dict):  # some servers send the object itself
        given = json.dumps(given)
    if not isinstance(given, str):
        raise Malformed(f"the arguments of {name} are not a JSON text")
    try:
        arguments = json.loads(given)
    except ValueError:
        raise Malformed(f"the arguments of {name} are not JSON: {clipped(given)!r}") from None
    if not isinstance(arguments, dict):
        raise Malformed(f"the arguments of {name} are not a JSON object")
    problem = schema_problem(schema, arguments)
    if problem is not None:
        raise Malformed(f"{name}: {problem}")
    ident = raw.get("id")
    call_id = ident if isinstance(ident, str) and ident else transcript.call_id(number)
    return Call(call_id, name, arguments, given)
