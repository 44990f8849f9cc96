"""The environment as a chat with tool calls: the tools' JSON schemas, the task's opening
messages, and each call and answer as OpenAI chat-completions messages.

One format for both sides of training: the LLM agent (``inspire agent run --agent llm``) sends
these messages to its model, and the hindsight demonstrations are exported in them, so a model
fine-tuned on the demonstrations sees at run time exactly what it was trained on.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence

from inspire_build.env.core import Found, PaperView

TOOLS: list[dict[str, object]] = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search papers public before the cutoff. Costs one call.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 100},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a paper's title, abstract, year and authors. Costs one call.",
            "parameters": {
                "type": "object",
                "properties": {"paper_id": {"type": "string"}},
                "required": ["paper_id"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Submit the final ranking of paper IDs, best first. Free and final.",
            "parameters": {
                "type": "object",
                "properties": {"ranking": {"type": "array", "items": {"type": "string"}}},
                "required": ["ranking"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_NAMES = ("search", "read", "submit")
SYSTEM = (
    "You search the scholarly literature for the works that a solution to an open research "
    "problem would build on. Only works public before the cutoff can be found. Use the search "
    "and read tools within the budget, then submit a ranking of paper IDs, most central first."
)


def opening(cutoff: dt.date, budget: int, brief: str) -> list[dict[str, object]]:
    """The system and user messages that state one instance's task."""
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Cutoff: {cutoff.isoformat()}. Budget: {budget} calls.\n\nBrief: {brief}",
        },
    ]


def call_id(number: int) -> str:
    return f"call_{number}"


def tool_call(number: int, name: str, arguments: Mapping[str, object]) -> dict[str, object]:
    """An assistant message making one tool call."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id(number),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def tool_answer(call: str, body: Mapping[str, object]) -> dict[str, object]:
    """The tool message answering the call with ID ``call``."""
    return {"role": "tool", "tool_call_id": call, "content": json.dumps(body)}


def search_body(status: str, results: Sequence[Found], budget_left: int) -> dict[str, object]:
    listed = [
        {"paper_id": f.paper_id, "title": f.title, "year": f.year, "score": round(f.score, 3)}
        for f in results
    ]
    return {"status": status, "results": listed, "budget_left": budget_left}


def read_body(status: str, paper: PaperView | None, budget_left: int) -> dict[str, object]:
    shown: dict[str, object] | None = None
    if paper is not None:
        shown = dataclasses.asdict(paper)
        shown["authors"] = list(paper.authors)
    return {"status": status, "paper": shown, "budget_left": budget_left}


def submit_body(status: str, ranking: Sequence[str]) -> dict[str, object]:
    return {"status": status, "ranking": list(ranking)}


def closing(submitted: int) -> dict[str, object]:
    """The assistant's last message, after the submission was accepted."""
    return {"role": "assistant", "content": f"Submitted {submitted} papers."}


def format_hash() -> str:
    """The chat format's hash (the system message and the tools' schemas), 16 hex digits: the
    ``prompt_hash`` an agent's logged calls carry, as a template's hash for the pipeline's."""
    stated = json.dumps({"system": SYSTEM, "tools": TOOLS}, sort_keys=True)
    return hashlib.sha256(stated.encode()).hexdigest()[:16]
