"""The LLM agent: any OpenAI-compatible model, calling ``search``, ``read`` and ``submit`` on one
session's tools, in the chat format of ``transcript.py`` (the hindsight demonstrations' format).

The task is the opening messages (``transcript.opening``: the brief, the cutoff and the budget);
each tool call is made on the session and answered with what it returned. The model's own
``submit`` ends the instance. Anything else ends it as an **empty submission** (the instance's
session abandoned: ranking ``[]``, scoring 0), counted by its :class:`Failure`:

- ``malformed_tool_call``: a call of an unknown tool, arguments that are not a JSON object or
  that its schema refuses (``tool_calls.py``), or that the environment's bounds refuse (a blank
  query, an ID over 200 characters); nothing of that message is made;
- ``refusal``: a message with a ``refusal``, or with no tool call;
- ``timeout``: the model's call timed out after the client's retries, or the instance's
  deadline (``deadline_s`` from its first turn) passed;
- ``llm_error``: any other failed call, after the client's retries;
- ``over_budget``: a ``search`` or ``read`` once the budget is spent.

A configuration the endpoint refuses (401, 403, 404) or the LLM budget's refusal stops the whole
run instead: every instance would fail the same way.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Protocol

from inspire_build.env import transcript
from inspire_build.env.agents import Tools
from inspire_build.env.core import Status
from inspire_build.env.limits import DEFAULT_K, OutOfBounds
from inspire_build.env.tool_calls import Call, Malformed, clipped, read_calls
from inspire_build.errors import LLMError
from inspire_build.llm.errors import ChatTimeout
from inspire_build.llm.tool_chat import Turn

# Wall-clock seconds an instance may take: generous for 50 turns of a slow model.
DEFAULT_DEADLINE_S = 1800.0


class Failure(StrEnum):
    MALFORMED = "malformed_tool_call"
    REFUSAL = "refusal"
    TIMEOUT = "timeout"
    LLM_ERROR = "llm_error"
    OVER_BUDGET = "over_budget"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How an instance ended: submitted by the model (``failure`` None), or the failure and
    what caused it; ``turns``, the model's answers it took."""

    failure: Failure | None = None
    detail: str | None = None
    turns: int = 0

    def note(self) -> dict[str, object]:
        """What its trajectory line adds: ``failure`` (None: the model submitted) and
        ``failure_detail``."""
        reason = None if self.failure is None else self.failure.value
        return {"failure": reason, "failure_detail": self.detail}


class Chat(Protocol):
    """A tool-calling model (``llm.tool_chat.ToolChat``, or a test's fake)."""

    def turn(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        timeout_s: float | None = None,
        rank: int = 0,
    ) -> Turn: ...

    def log(
        self,
        messages: Sequence[dict[str, Any]],
        turn: Turn,
        status: str = "answered",
        error: str | None = None,
        rank: int = 0,
    ) -> None: ...


class _Ended(Exception):
    """The instance is over before the model submitted."""

    def __init__(self, failure: Failure, detail: str) -> None:
        super().__init__(detail)
        self.failure, self.detail = failure, detail


@dataclasses.dataclass
class LlmAgent:
    """The agent; ``budget`` is the session's (stated in the opening message)."""

    chat: Chat
    budget: int
    deadline_s: float | None = DEFAULT_DEADLINE_S
    name: str = "llm"
    clock: Callable[[], float] = time.monotonic

    def run(self, env: Tools) -> None:
        self.play(env)

    def play(self, env: Tools, rank: int = 0) -> Outcome:
        """Run the conversation on ``env`` until the model submits or fails; ``rank`` (the
        instance's place in the run) orders its calls waiting for a slot."""
        messages = transcript.opening(env.cutoff, self.budget, env.brief)
        deadline = None if self.deadline_s is None else self.clock() + self.deadline_s
        turns = 0
        while True:
            turns += 1
            try:
                turn = self._ask(messages, deadline, rank)
                calls = self._judged(messages, turn, rank)
                content = turn.message.get("content")
                messages.append(
                    {
                        "role": "assistant",
                        "content": content if isinstance(content, str) else None,
                        "tool_calls": [call.wire() for call in calls],
                    }
                )
                if self._made(env, calls, messages):
                    return Outcome(turns=turns)
            except _Ended as ended:
                return Outcome(ended.failure, ended.detail, turns)

    def _ask(self, messages: list[dict[str, Any]], deadline: float | None, rank: int) -> Turn:
        left = None if deadline is None else deadline - self.clock()
        if left is not None and left <= 0:
            raise _Ended(Failure.TIMEOUT, "the instance's deadline passed")
        try:
            turn = self.chat.turn(messages, transcript.TOOLS, left, rank)
        except ChatTimeout as error:
            raise _Ended(Failure.TIMEOUT, str(error)) from None
        except LLMError as error:
            raise _Ended(Failure.LLM_ERROR, str(error)) from None
        if deadline is not None and self.clock() > deadline:
            late = "the model answered after the instance's deadline"
            self.chat.log(messages, turn, "late", late, rank)
            raise _Ended(Failure.TIMEOUT, late)
        return turn

    def _judged(self, messages: list[dict[str, Any]], turn: Turn, rank: int) -> list[Call]:
        """The turn's calls, checked; the turn logged with its verdict."""
        message = turn.message
        refusal, content = message.get("refusal"), message.get("content")
        if refusal or not message.get("tool_calls"):
            if refusal:
                detail = f"the model refused: {clipped(str(refusal))}"
            else:
                said = clipped(content) if isinstance(content, str) and content.strip() else ""
                detail = "the model answered without a tool call" + (f": {said}" if said else "")
            self.chat.log(messages, turn, "refused", detail, rank)
            raise _Ended(Failure.REFUSAL, detail)
        number = 1 + sum(1 for m in messages if m.get("role") == "tool")
        try:
            calls = read_calls(message, number)
        except Malformed as error:
            self.chat.log(messages, turn, "invalid", str(error), rank)
            raise _Ended(Failure.MALFORMED, str(error)) from None
        self.chat.log(messages, turn, rank=rank)
        return calls

    def _made(self, env: Tools, calls: list[Call], messages: list[dict[str, Any]]) -> bool:
        """Make ``calls`` in order, each answer added to ``messages``; whether one submitted."""
        for call in calls:
            try:
                body = _answer(env, call)
            except OutOfBounds as error:
                raise _Ended(Failure.MALFORMED, f"{call.name}: {error}") from None
            if body is None:
                over = f"a {call.name} call past the budget of {self.budget} calls"
                raise _Ended(Failure.OVER_BUDGET, over)
            messages.append(transcript.tool_answer(call.call_id, body))
            if call.name == "submit":
                return True
        return False


def _answer(env: Tools, call: Call) -> dict[str, object] | None:
    """The call made on ``env``, and its answer's body; None when the budget refused it."""
    arguments = call.arguments
    if call.name == "search":
        found = env.search(arguments["query"], arguments.get("k", DEFAULT_K))
        if found.status is Status.BUDGET_EXHAUSTED:
            return None
        return transcript.search_body(found.status.value, found.results, found.budget_left)
    if call.name == "read":
        read = env.read(arguments["paper_id"])
        if read.status is Status.BUDGET_EXHAUSTED:
            return None
        return transcript.read_body(read.status.value, read.paper, read.budget_left)
    submitted = env.submit(arguments["ranking"])
    return transcript.submit_body(submitted.status.value, submitted.ranking)
