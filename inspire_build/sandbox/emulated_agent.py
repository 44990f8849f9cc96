"""The emulated model as an agent: a tool-calling request (the ``search``, ``read`` and
``submit`` tools of ``env/transcript.py``) gets the next call of a plausible, imperfect policy,
read from the conversation alone, never from the world's truth.

- The task: the first user message's budget and brief ("Cutoff: ... Budget: N calls. Brief:
  ..."); the budget left: the last tool answer's ``budget_left``, else that budget.
- Queries: the brief's most frequent topic words first, then each sentence's topic words, in a
  seeded order, some with a word dropped; a query is never repeated.
- Reads: the top results of the latest search that it has not asked for (2 or 3 a search, per
  task), each passed over at a seeded rate, per paper, as a title that did not appeal.
- Submission: the papers it read that share at least two topic words with the brief, ranked by
  how many (all it read when none does, the top results when it read nothing), sometimes with
  two neighbours swapped. It submits when its budget left is down to :data:`RESERVE` or it
  runs out of queries, and answers a submission's answer with plain content.

Every draw comes from the seed and the conversation's own text, so the same conversation gets
the same answer whatever the timing or concurrency. Failures are planted on purpose, for the
harness's failure paths: a refusal (plain content, no tool call) and malformed calls in three
forms (:data:`MALFORMED`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from inspire_build.text import sentences, topic_words

TOOLS = ("search", "read", "submit")
REQUIRED = {"search": "query", "read": "paper_id", "submit": "ranking"}
MALFORMED = ("not_json", "unknown_tool", "missing_field")
UNKNOWN_TOOLS = ("browse", "fetch_paper", "final_answer")  # names a model invents
REFUSAL = "I can't help with this literature search. (sandbox refusal)"
DEFAULT_BUDGET = 20  # when the task states none
RESERVE = 1  # it submits once its budget left is this or less: it never runs the budget out
MAX_QUERIES, QUERY_WORDS, MIN_OVERLAP = 6, 8, 2
READ_SKIP, DROP_WORD, SWAP = 0.15, 0.3, 0.3  # the policy's seeded imperfections
_TASK = re.compile(r"Budget:\s*(\d+)\s*calls?\.?\s*(?:Brief:\s*)?(.*)", re.DOTALL)
_LABEL = re.compile(r"^\w+: ", re.MULTILINE)  # "Problem: ..." sections of a brief


@dataclasses.dataclass(frozen=True)
class Move:
    """One assistant turn: a tool call (``name`` and its ``arguments`` text) or ``content``."""

    content: str | None = None
    name: str | None = None
    arguments: str | None = None
    call_id: str | None = None


@dataclasses.dataclass
class Seen:
    """What the conversation shows the agent: its task and what its calls returned."""

    brief: str = ""
    budget_left: int = DEFAULT_BUDGET
    queries: list[str] = dataclasses.field(default_factory=list)
    latest: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (id, title)
    hits: dict[str, str] = dataclasses.field(default_factory=dict)  # every result: id -> title
    read: dict[str, str] = dataclasses.field(default_factory=dict)  # id -> title and abstract
    tried: set[str] = dataclasses.field(default_factory=set)  # ids it asked to read
    submitted: int | None = None  # papers in an answered submission


def is_agent(names: Sequence[str]) -> bool:
    """Whether a request's function tools are the environment's."""
    return set(TOOLS) <= set(names)


def _digest(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()


def _chance(*parts: object) -> float:
    return int(_digest(*parts)[:12], 16) / 16**12


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def read_conversation(messages: Sequence[Mapping[str, Any]]) -> Seen:
    """The task and the tool answers, from the messages alone."""
    seen, calls = Seen(), {}
    user = next((m for m in messages if m.get("role") == "user"), None)
    task = _TASK.search(_text(user.get("content"))) if user else None
    if task:
        seen.budget_left, seen.brief = int(task.group(1)), task.group(2).strip()
    elif user:
        seen.brief = _text(user.get("content"))
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = _json(str(function.get("arguments") or ""))
            arguments = arguments if isinstance(arguments, dict) else {}
            calls[call.get("id")] = (function.get("name"), arguments)
            if function.get("name") == "read":
                seen.tried.add(str(arguments.get("paper_id")))
        if message.get("role") == "tool":
            name, arguments = calls.get(message.get("tool_call_id"), (None, {}))
            _take(seen, name, arguments, _json(_text(message.get("content"))))
    return seen


def _take(seen: Seen, name: Any, arguments: dict[str, Any], body: Any) -> None:
    """One tool answer into what the agent has seen."""
    if not isinstance(body, dict):
        return
    if isinstance(body.get("budget_left"), int):
        seen.budget_left = body["budget_left"]
    if name == "search" or "results" in body:
        seen.queries.append(str(arguments.get("query", "")))
        results = body.get("results")
        results = results if isinstance(results, list) else []
        seen.latest = [
            (str(r["paper_id"]), str(r.get("title") or ""))
            for r in results
            if isinstance(r, dict) and r.get("paper_id")
        ]
        seen.hits.update((pid, title) for pid, title in seen.latest if pid not in seen.hits)
    elif name == "read" or "paper" in body:
        paper = body.get("paper")
        if isinstance(paper, dict) and paper.get("paper_id"):
            text = f"{paper.get('title') or ''} {paper.get('abstract') or ''}"
            seen.read[str(paper["paper_id"])] = text
    elif name == "submit" or "ranking" in body:
        ranking = body.get("ranking")
        seen.submitted = len(ranking) if isinstance(ranking, list) else 0


def queries(brief: str, seed: object) -> list[str]:
    """The task's queries, in the order it tries them: the brief's most frequent topic words,
    then each sentence's, shuffled; some lose a word."""
    text = _LABEL.sub("", brief)
    rng = random.Random(_digest(seed, "queries", text))
    counts = collections.Counter(topic_words(text))
    first = [w for w, _ in counts.most_common(QUERY_WORDS)]
    per_sentence = [list(dict.fromkeys(topic_words(s)))[:QUERY_WORDS] for s in sentences(text)]
    rest = [words for words in per_sentence if len(words) >= 2]
    rng.shuffle(rest)
    found: list[str] = []
    for words in [first, *rest]:
        if len(words) > 3 and rng.random() < DROP_WORD:
            words = words[:]
            del words[rng.randrange(len(words))]
        query = " ".join(words)
        if query and query not in found:
            found.append(query)
    return found[:MAX_QUERIES] or [" ".join(text.split()[:QUERY_WORDS]) or "literature"]


def _reads(seed: object, brief: str) -> int:
    return 2 + (_chance(seed, "reads", brief) < 0.5)


def _next_read(seen: Seen, seed: object) -> str | None:
    """The next top result of the latest search to read, if it still means to read one."""
    per_search = _reads(seed, seen.brief)
    top = [pid for pid, _ in seen.latest[: per_search + 2]]
    if sum(pid in seen.tried for pid in top) >= per_search:
        return None
    fresh = [pid for pid in top if pid not in seen.tried]
    return next((p for p in fresh if _chance(seed, "skip", seen.brief, p) >= READ_SKIP), None)


def ranking(seen: Seen, rng: random.Random) -> list[str]:
    """What it read and found relevant, by the topic words shared with the brief."""
    terms = set(topic_words(seen.brief))
    scored = [
        (len(terms & set(topic_words(text))), order, pid)
        for order, (pid, text) in enumerate(seen.read.items())
    ]
    chosen = [s for s in scored if s[0] >= MIN_OVERLAP] or scored
    ranked = [pid for _, _, pid in sorted(chosen, key=lambda s: (-s[0], s[1]))]
    if len(ranked) >= 2 and rng.random() < SWAP:  # a near tie it ordered the other way
        i = rng.randrange(len(ranked) - 1)
        ranked[i], ranked[i + 1] = ranked[i + 1], ranked[i]
    return ranked or list(seen.hits)[:10]


def decide(seen: Seen, seed: object, rng: random.Random, forced: str | None = None) -> Move:
    """The policy's next call (``forced``: the tool the request's ``tool_choice`` names)."""
    left = seen.budget_left
    target = _next_read(seen, seed) if left > RESERVE else None
    plan = [q for q in queries(seen.brief, seed) if q not in seen.queries]
    name = "read" if target else ("search" if plan and left > RESERVE + 1 else "submit")
    name = forced or name
    arguments: dict[str, Any]
    if name == "read":
        fallback = next((p for p in seen.hits if p not in seen.tried), next(iter(seen.hits), ""))
        arguments = {"paper_id": target or fallback}
    elif name == "search":
        k = 20 if _chance(seed, "k", seen.brief) < 0.25 else 10
        arguments = {"query": (plan or queries(seen.brief, seed))[0], "k": k}
    else:
        arguments = {"ranking": ranking(seen, rng)}
    return Move(name=name, arguments=json.dumps(arguments))


def _malformed(move: Move, form: str, rng: random.Random) -> Move:
    """The move broken in one of the :data:`MALFORMED` forms."""
    name, arguments = move.name or "submit", json.loads(move.arguments or "{}")
    if form == "unknown_tool":
        return dataclasses.replace(move, name=rng.choice(UNKNOWN_TOOLS))
    if form == "missing_field":
        arguments.pop(REQUIRED[name], None)
        return dataclasses.replace(move, arguments=json.dumps(arguments))
    text = json.dumps(arguments)
    return dataclasses.replace(move, arguments=text[: max(1, len(text) // 2)])  # cut mid-value


def answer(
    messages: Sequence[Mapping[str, Any]],
    seed: object,
    *,
    malformed_rate: float = 0.0,
    refusal_rate: float = 0.0,
    tool_choice: Any = None,
    fault: str | None = None,
) -> Move:
    """The agent's next turn. ``fault`` (the router's own: ``refusal``, ``invalid_json``,
    ``drop_item``) plants the matching failure: a refusal, arguments that are not JSON, or
    arguments missing their required field."""
    conversation = json.dumps(list(messages), sort_keys=True, default=str)
    rng = random.Random(_digest(seed, "turn", conversation))
    call_id = f"call_{_digest(seed, 'call', conversation)[:24]}"
    seen = read_conversation(messages)
    if fault == "refusal" or _chance(seed, "refusal", conversation) < refusal_rate:
        return Move(content=REFUSAL)
    if seen.submitted is not None:
        return Move(content=f"Submitted {seen.submitted} papers.")
    if tool_choice == "none":
        return Move(content=f"I would search for: {queries(seen.brief, seed)[0]}.")
    forced = None
    if isinstance(tool_choice, dict):
        named = (tool_choice.get("function") or {}).get("name")
        forced = named if named in TOOLS else None
    move = dataclasses.replace(decide(seen, seed, rng, forced), call_id=call_id)
    form = {"invalid_json": "not_json", "drop_item": "missing_field"}.get(fault or "")
    if form is None and _chance(seed, "malformed", conversation) < malformed_rate:
        form = MALFORMED[int(_chance(seed, "form", conversation) * len(MALFORMED))]
    return _malformed(move, form, rng) if form else move
