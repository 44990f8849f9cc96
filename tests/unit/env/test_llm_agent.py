"""The LLM agent's loop against a scripted model: the chat format it sends, the tool calls it
makes through the operator's sessions, and the failure policy (a malformed call, a refusal, a
timeout, an LLM error and a call past the budget each end as an empty submission, counted)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import duckdb
import pytest

from inspire_build.env import run, tool_calls, transcript
from inspire_build.env.core import SearchEnv, Task, Work
from inspire_build.env.llm_agent import Failure, LlmAgent, Outcome
from inspire_build.env.server import ToolSessions
from inspire_build.env.tool_calls import Malformed, read_calls
from inspire_build.errors import LLMError
from inspire_build.llm.errors import ChatTimeout, LLMConfigError
from inspire_build.llm.tool_chat import Turn

CUTOFF = dt.date(2024, 6, 1)
BRIEF = "We need sparse retrieval over long documents. It must scale."


class Backend:
    """Three works before the cutoff, one after; every search returns them all."""

    name = "fake"
    works = (
        Work("p1", dt.date(2020, 1, 1), title="Sparse retrieval", year=2020, score=2.0),
        Work("p2", dt.date(2021, 1, 1), title="Long documents", year=2021, score=1.5),
        Work("late", CUTOFF, title="Too recent", year=2024, score=1.2),
        Work("p3", dt.date(2019, 1, 1), title="Scaling", year=2019, score=1.0),
    )

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        return list(self.works[:k])

    def read(self, paper_id: str) -> Work | None:
        return next((w for w in self.works if w.paper_id == paper_id), None)


def call(name: str, arguments: object, ident: str | None = "c1") -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    made: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": text}}
    if ident is not None:
        made["id"] = ident
    return made


def said(*calls: dict[str, Any], content: str | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, **extra}
    if calls:
        message["tool_calls"] = list(calls)
    return message


class Scripted:
    """A model that says the next of ``script`` (a message, or an error to raise) each turn."""

    def __init__(self, script: Sequence[dict[str, Any] | Exception]) -> None:
        self.script = list(script)
        self.asked: list[list[dict[str, Any]]] = []
        self.tools: list[list[dict[str, Any]]] = []
        self.logged: list[tuple[str, str | None]] = []

    def turn(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        timeout_s: float | None = None,
        rank: int = 0,
    ) -> Turn:
        self.asked.append(json.loads(json.dumps(list(messages))))
        self.tools.append(list(tools))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return Turn(step, "tool_calls", (10, 5), 1.0, 0.0)

    def log(
        self,
        messages: Sequence[dict[str, Any]],
        turn: Turn,
        status: str = "answered",
        error: str | None = None,
        rank: int = 0,
    ) -> None:
        self.logged.append((status, error))


def sessions(con: duckdb.DuckDBPyConnection, budget: int = 5) -> ToolSessions:
    tasks = [Task("i1", BRIEF, CUTOFF, frozenset({"target"}))]
    return ToolSessions(tasks, Backend(), con, budget=budget, run_name="llm-test")


def played(
    con: duckdb.DuckDBPyConnection, script: Sequence[dict[str, Any] | Exception], budget: int = 5
) -> tuple[Outcome, dict[str, object], Scripted]:
    chat = Scripted(script)
    agent = LlmAgent(chat, budget)
    [(env, outcome)] = run.operate(sessions(con, budget), "llm:test", agent.play)
    return outcome, env.run_line(), chat


def test_the_model_sees_the_chat_format_and_its_own_submit_ends_normally(
    con: duckdb.DuckDBPyConnection,
) -> None:
    script = [
        said(call("search", {"query": "sparse retrieval", "k": 2}, "a1"), content="Looking."),
        said(call("read", {"paper_id": "p1"}, None)),  # no ID: call_<n> stands in
        said(call("submit", {"ranking": ["p1", "p2", "p1"]}, "a3")),
    ]
    outcome, line, chat = played(con, script)
    assert outcome == Outcome(None, None, 3)
    assert line == {"instance_id": "i1", "ranking": ["p1", "p2"]}
    assert chat.asked[0] == transcript.opening(CUTOFF, 5, BRIEF)
    assert chat.tools == [transcript.TOOLS] * 3
    second = chat.asked[1][2:]
    assert second[0] == {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [script[0]["tool_calls"][0]],
    }
    answer = json.loads(second[1]["content"])
    assert second[1]["tool_call_id"] == "a1" and answer["budget_left"] == 4
    assert [r["paper_id"] for r in answer["results"]] == ["p1", "p2"]
    third = chat.asked[2][4:]
    assert third[0]["tool_calls"][0]["id"] == "call_2"  # the second call of the conversation
    assert json.loads(third[1]["content"])["paper"]["title"] == "Sparse retrieval"
    assert chat.logged == [("answered", None)] * 3
    assert con.execute("SELECT status, calls FROM env_sessions").fetchall() == [("submitted", 2)]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (said(call("search", '{"query": "sparse')), "not JSON"),
        (said(call("search", '["sparse"]')), "not a JSON object"),
        (said(call("browse", {"url": "x"})), "unknown tool 'browse'"),
        (said(call("search", {"query": "q", "k": True})), "k is not of type integer"),
        (said(call("search", {"query": "q", "k": 101})), "k is out of its range"),
        (said(call("search", {"query": "q", "depth": 3})), "unknown properties: depth"),
        (said(call("read", {})), "lack paper_id"),
        (said(call("submit", {"ranking": ["p1", 7]})), "ranking[1] is not of type string"),
        # one good call and one bad in one message: none of them is made
        (said(call("search", {"query": "q"}), call("read", "{")), "not JSON"),
        (said(call("search", {"query": " \u200b "})), "query"),  # the environment's bound
    ],
)
def test_a_malformed_tool_call_ends_as_an_empty_submission(
    con: duckdb.DuckDBPyConnection, message: dict[str, Any], reason: str
) -> None:
    outcome, line, chat = played(con, [message])
    assert outcome.failure is Failure.MALFORMED and reason in (outcome.detail or "")
    assert line["ranking"] == []
    assert con.execute("SELECT status, calls FROM env_sessions").fetchall() == [("abandoned", 0)]
    assert outcome.note() == {"failure": "malformed_tool_call", "failure_detail": outcome.detail}


@pytest.mark.parametrize(
    ("message", "detail"),
    [
        (said(refusal="I can't help with that."), "the model refused: I can't help with that."),
        (said(content="Here are some papers: p1, p2."), "without a tool call: Here are some"),
        (said(content=None, tool_calls=[]), "the model answered without a tool call"),
    ],
)
def test_a_refusal_or_an_answer_without_a_tool_call_ends_as_an_empty_submission(
    con: duckdb.DuckDBPyConnection, message: dict[str, Any], detail: str
) -> None:
    script = [said(call("search", {"query": "sparse"})), message]
    outcome, line, chat = played(con, script)
    assert outcome.failure is Failure.REFUSAL and detail in (outcome.detail or "")
    assert line["ranking"] == [] and outcome.turns == 2
    assert chat.logged[-1][0] == "refused"
    assert con.execute("SELECT status, calls FROM env_sessions").fetchall() == [("abandoned", 1)]


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (ChatTimeout("the agent's LLM call timed out after retries"), Failure.TIMEOUT),
        (LLMError("the agent's LLM call failed: HTTP 500"), Failure.LLM_ERROR),
    ],
)
def test_a_timeout_or_an_llm_error_ends_as_an_empty_submission(
    con: duckdb.DuckDBPyConnection, error: Exception, failure: Failure
) -> None:
    outcome, line, chat = played(con, [said(call("search", {"query": "sparse"})), error])
    assert outcome == Outcome(failure, str(error), 2)
    assert line["ranking"] == [] and chat.logged == [("answered", None)]


def test_the_instances_deadline_is_a_timeout_before_a_turn_and_after_a_late_answer(
    con: duckdb.DuckDBPyConnection,
) -> None:
    clock = iter([0.0, 5.0, 12.0])  # start, before turn 1, after turn 1: past the 10 s deadline
    chat = Scripted([said(call("search", {"query": "sparse"}))])
    agent = LlmAgent(chat, 5, deadline_s=10.0, clock=lambda: next(clock))
    [(env, outcome)] = run.operate(sessions(con), "llm:test", agent.play)
    assert outcome.failure is Failure.TIMEOUT and "after the instance's deadline" in str(
        outcome.detail
    )
    assert env.steps == [] and chat.logged == [("late", outcome.detail)]  # not made
    clock = iter([0.0, 11.0])
    agent = LlmAgent(Scripted([]), 5, deadline_s=10.0, clock=lambda: next(clock))
    bare = SearchEnv(Task("i1", BRIEF, CUTOFF), 5, Backend())  # the benches' environment
    assert agent.play(bare).failure is Failure.TIMEOUT


def test_a_call_past_the_budget_ends_as_an_empty_submission_and_is_not_logged(
    con: duckdb.DuckDBPyConnection,
) -> None:
    script = [
        said(call("search", {"query": "sparse"})),
        said(call("read", {"paper_id": "p2"}), call("search", {"query": "more"}, "c2")),
    ]
    outcome, line, _ = played(con, script, budget=2)
    assert outcome.failure is Failure.OVER_BUDGET and outcome.detail == (
        "a search call past the budget of 2 calls"
    )
    assert line["ranking"] == []
    assert con.execute("SELECT count(*) FROM env_steps").fetchone() == (2,)  # never past it


def test_submitting_with_the_budget_spent_is_within_it(con: duckdb.DuckDBPyConnection) -> None:
    script = [said(call("search", {"query": "sparse"})), said(call("submit", {"ranking": ["p3"]}))]
    outcome, line, _ = played(con, script, budget=1)
    assert outcome.failure is None and line["ranking"] == ["p3"]


def test_a_refused_configuration_stops_the_run(con: duckdb.DuckDBPyConnection) -> None:
    agent = LlmAgent(Scripted([LLMConfigError("the LLM endpoint refused (HTTP 401)")]), 5)
    with pytest.raises(LLMConfigError):
        run.operate(sessions(con), "llm:test", agent.play)
    assert con.execute("SELECT status FROM env_sessions").fetchall() == [("abandoned",)]


def test_read_calls_keeps_ids_and_arguments_and_the_text_to_echo() -> None:
    message = said(
        call("search", '{"query": "q",  "k": 3}', "x"), call("read", {"paper_id": "p"}, None)
    )
    first, second = read_calls(message, first_number=4)
    assert (first.call_id, first.name, first.arguments) == ("x", "search", {"query": "q", "k": 3})
    assert first.text == '{"query": "q",  "k": 3}'  # echoed as the model wrote it
    assert second.call_id == "call_5"
    given = said(
        {
            "id": "y",
            "type": "function",
            "function": {"name": "read", "arguments": {"paper_id": "p"}},
        }
    )
    assert read_calls(given)[0].arguments == {"paper_id": "p"}  # an object, not its text
    with pytest.raises(Malformed, match="not a list"):
        read_calls({"tool_calls": {"a": 1}})
    with pytest.raises(Malformed, match="without a function name"):
        read_calls({"tool_calls": [{"id": "z"}]})


def test_the_schema_check_reads_the_tools_schemas() -> None:
    search = transcript.TOOLS[0]["function"]["parameters"]  # type: ignore[index]
    assert tool_calls.schema_problem(search, {"query": "q", "k": 1}) is None
    assert tool_calls.schema_problem(search, {"query": "q", "k": 0}) == "k is out of its range"
    assert tool_calls.schema_problem(search, {"query": 3}) == "query is not of type string"
    assert tool_calls.schema_problem(search, {"query": "q", "k": 2.0}) == "k is not of type integer"
