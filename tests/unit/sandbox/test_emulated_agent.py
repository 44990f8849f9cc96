"""The sandbox's model as an agent: its policy on hand-built conversations, its planted failures,
and its answers through the OpenAI router, read by the real ``openai`` client."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import openai
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from inspire_build.env import transcript as T
from inspire_build.env.core import Found, PaperView
from inspire_build.sandbox import emulated_agent as A
from inspire_build.sandbox import world as W
from inspire_build.sandbox.llm_truth import Truth
from inspire_build.sandbox.openai_api import OpenAIConfig, router
from inspire_build.text import content_words

CUTOFF = dt.date(2025, 3, 1)
BRIEF = (
    "Imputation of galkarto zantri remains unreliable when vekzan and raelqua interact. "
    "Current imputation pipelines break down under streaming inputs and tight latency budgets. "
    "It is unclear how to keep oriven and trigal signals without losing zantri structure."
)
# A corpus the fake environment searches: odd papers share the brief's topic, even ones do not.
PAPERS = {
    f"P{i:02d}": (
        (f"Galkarto imputation {i}", "Zantri imputation when vekzan and raelqua interact.")
        if i % 2
        else (f"Weather nowcasting {i}", "Radar echoes over mountains.")
    )
    for i in range(40)
}


def _search(query: str, k: int, turn: int) -> list[Found]:
    ids = sorted(PAPERS)[turn * 5 % 40 :] + sorted(PAPERS)
    return [Found(p, PAPERS[p][0], 2020, 1.0 / (1 + n)) for n, p in enumerate(ids[:k])]


def play(budget: int, seed: object = 1, brief: str = BRIEF) -> tuple[list[dict[str, Any]], int]:
    """One episode against a fake environment with the real one's budget rule; (messages, calls
    that cost budget)."""
    messages = T.opening(CUTOFF, budget, brief)
    spent = searches = 0
    for _ in range(3 * budget + 5):
        move = A.answer(messages, seed)
        if move.name is None:
            return messages, spent
        arguments = json.loads(move.arguments or "")
        messages.append(T.tool_call(len(messages), move.name, arguments))
        body: dict[str, object]
        if move.name == "submit":
            body = T.submit_body("ok", arguments["ranking"])
        elif move.name == "search":
            spent, searches = spent + 1, searches + 1
            found = _search(arguments["query"], arguments.get("k", 10), searches)
            body = T.search_body("ok", found, budget - spent)
        else:
            spent += 1
            title, abstract = PAPERS[arguments["paper_id"]]
            view = PaperView(arguments["paper_id"], title, abstract, 2020, ("Ada Abe",))
            body = T.read_body("ok", view, budget - spent)
        messages.append(T.tool_answer(T.call_id(len(messages) - 1), body))
    raise AssertionError("the agent never ended its episode")


def _calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            found.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return found


def _with_search(ids: list[str], budget_left: int = 18) -> list[dict[str, Any]]:
    messages = T.opening(CUTOFF, 20, BRIEF)
    messages.append(T.tool_call(1, "search", {"query": "galkarto imputation"}))
    found = [Found(p, PAPERS[p][0], 2020, 1.0) for p in ids]
    messages.append(T.tool_answer(T.call_id(1), T.search_body("ok", found, budget_left)))
    return messages


def test_the_first_turn_searches_with_the_briefs_terms() -> None:
    move = A.answer(T.opening(CUTOFF, 20, BRIEF), seed=1)
    assert move.name == "search" and move.content is None
    query = json.loads(move.arguments or "")["query"].split()
    assert len(query) >= 3 and set(query) <= set(content_words(BRIEF))


def test_after_a_search_it_reads_top_results_it_has_not_read() -> None:
    ids = ["P01", "P03", "P05", "P07", "P09", "P11"]
    messages = _with_search(ids)
    first = json.loads(A.answer(messages, seed=1).arguments or "")["paper_id"]
    assert first in ids[:3]
    messages.append(T.tool_call(3, "read", {"paper_id": first}))
    view = PaperView(first, *PAPERS[first], 2020, ())
    messages.append(T.tool_answer(T.call_id(3), T.read_body("ok", view, 17)))
    second = A.answer(messages, seed=1)
    assert second.name == "read"
    assert json.loads(second.arguments or "")["paper_id"] in set(ids[:4]) - {first}


def test_its_queries_vary_across_turns() -> None:
    messages, _ = play(budget=20)
    queries = [arguments["query"] for name, arguments in _calls(messages) if name == "search"]
    assert len(queries) >= 3 and len(set(queries)) == len(queries)


@pytest.mark.parametrize("budget", [0, 1, 2, 3, 5, 8, 13, 20, 30])
def test_it_submits_before_the_budget_runs_out(budget: int) -> None:
    for seed in range(4):
        messages, spent = play(budget, seed)
        calls = _calls(messages)
        assert calls[-1][0] == "submit" and [n for n, _ in calls].count("submit") == 1
        assert spent <= max(0, budget - 1)  # it never spends its last call


def test_budget_left_of_one_submits_at_once() -> None:
    move = A.answer(_with_search(["P01", "P03", "P05"], budget_left=1), seed=1)
    assert move.name == "submit"


def test_its_ranking_holds_only_what_it_saw_and_found_relevant() -> None:
    for seed in range(6):
        messages, _ = play(20, seed)
        calls = _calls(messages)
        read = {a["paper_id"] for n, a in calls if n == "read"}
        ranking = calls[-1][1]["ranking"]
        assert ranking and set(ranking) <= read
        assert all(int(p[1:]) % 2 for p in ranking)  # the off-topic papers it read are left out


def test_nothing_read_submits_the_top_results_it_saw() -> None:
    move = A.answer(_with_search(["P02", "P04"], budget_left=0), seed=1)
    assert json.loads(move.arguments or "") == {"ranking": ["P02", "P04"]}


def test_the_same_conversation_gets_the_same_answer() -> None:
    messages = _with_search(["P01", "P03", "P05", "P07"])
    assert A.answer(messages, seed=3) == A.answer(json.loads(json.dumps(messages)), seed=3)
    episodes = {json.dumps(play(20, seed)[0]) for seed in range(8)}
    assert len(episodes) > 1  # the seed moves its choices
    assert play(20, 5) == play(20, 5)


def test_malformed_calls_at_rate_one_take_every_form() -> None:
    forms = set()
    for seed in range(30):
        move = A.answer(_with_search(["P01", "P03"]), seed, malformed_rate=1.0)
        assert move.name is not None and move.arguments is not None
        arguments = A._json(move.arguments)
        if arguments is None:
            forms.add("not_json")
        elif move.name not in A.TOOLS:
            forms.add("unknown_tool")
        else:
            assert A.REQUIRED[move.name] not in arguments
            forms.add("missing_field")
    assert forms == set(A.MALFORMED)


def test_no_malformed_call_at_rate_zero() -> None:
    for seed in range(30):
        move = A.answer(_with_search(["P01", "P03"]), seed)
        assert move.name in A.TOOLS and A.REQUIRED[move.name] in json.loads(move.arguments or "")


def test_the_routers_faults_become_the_matching_failures() -> None:
    messages = _with_search(["P01", "P03"])
    assert A.answer(messages, 1, fault="refusal") == A.Move(content=A.REFUSAL)
    assert A._json(A.answer(messages, 1, fault="invalid_json").arguments or "") is None
    dropped = A.answer(messages, 1, fault="drop_item")
    assert dropped.name == "read" and json.loads(dropped.arguments or "") == {}


def test_a_refusal_is_plain_content() -> None:
    refusals = [A.answer(play(4, s)[0][:2], s, refusal_rate=1.0) for s in range(3)]
    assert all(m == A.Move(content=A.REFUSAL) for m in refusals)
    some = [A.answer(T.opening(CUTOFF, 5, f"{BRIEF} {n}"), 1, refusal_rate=0.5) for n in range(40)]
    assert 5 < sum(m.name is None for m in some) < 35


def test_tool_choice_none_answers_in_words_and_a_named_tool_is_called() -> None:
    opening = T.opening(CUTOFF, 20, BRIEF)
    assert A.answer(opening, 1, tool_choice="none").name is None
    forced = {"type": "function", "function": {"name": "submit"}}
    assert A.answer(opening, 1, tool_choice=forced).name == "submit"
    assert A.answer(opening, 1, tool_choice="required").name == "search"


def test_after_its_submission_is_answered_it_stops() -> None:
    messages, _ = play(6)
    assert messages[-1]["role"] == "tool"
    move = A.answer(messages, 1)
    assert move.name is None and move.content and move.content.startswith("Submitted")


# --- through the router ---------------------------------------------------------------------

WORLD = W.generate(W.WorldConfig(seed=5, papers=80))
OTHER_WORLD = W.generate(W.WorldConfig(seed=6, papers=80))
RATES = OpenAIConfig().truth


def _client(config: OpenAIConfig, truth: Truth | None = None) -> TestClient:
    app = FastAPI()
    app.include_router(router(config, truth), prefix="/v1")
    return TestClient(app)


def _body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "sandbox-gpt", "messages": messages, "tools": T.TOOLS, **extra}


def _world_conversation() -> list[dict[str, Any]]:
    """A conversation that carries a world paper's abstract, as a brief and as a read."""
    record = WORLD.records[3]
    messages = T.opening(CUTOFF, 20, record.abstract)
    messages.append(T.tool_call(1, "read", {"paper_id": record.key}))
    view = PaperView(record.key, record.title, record.abstract, 2024, ())
    messages.append(T.tool_answer(T.call_id(1), T.read_body("ok", view, 19)))
    return messages


def test_an_openai_client_reads_the_tool_calls() -> None:
    http = _client(OpenAIConfig(seed=1))
    client = openai.OpenAI(api_key="sandbox", base_url="http://testserver/v1", http_client=http)  # type: ignore[arg-type]
    asked: dict[str, Any] = {"messages": T.opening(CUTOFF, 20, BRIEF), "tools": T.TOOLS}
    answer = client.chat.completions.create(
        model="sandbox-gpt", tool_choice="auto", parallel_tool_calls=False, **asked
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = (choice.message.tool_calls or [])[0]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.type == "function" and call.function.name == "search"
    assert json.loads(call.function.arguments)["query"]
    assert call.id.startswith("call_")
    assert answer.usage is not None and answer.usage.completion_tokens > 0
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_an_agent_answer_never_reads_the_worlds_truth() -> None:
    body = _body(_world_conversation())
    answers = [
        _client(OpenAIConfig(seed=2), truth).post("/v1/chat/completions", json=body).json()
        for truth in (None, Truth(WORLD, RATES), Truth(OTHER_WORLD, RATES))
    ]
    assert answers[0]["choices"][0]["message"]["tool_calls"]
    assert answers[0] == answers[1] == answers[2]


def test_the_answer_does_not_hang_on_the_order_requests_came_in() -> None:
    bodies = [_body(T.opening(CUTOFF, 20, BRIEF)), _body(_world_conversation())]
    first, second = _client(OpenAIConfig(seed=2)), _client(OpenAIConfig(seed=2))
    forward = [first.post("/v1/chat/completions", json=b).json() for b in bodies]
    backward = [second.post("/v1/chat/completions", json=b).json() for b in bodies[::-1]][::-1]
    assert [a["choices"] for a in forward] == [a["choices"] for a in backward]


def test_a_trigger_refuses_in_plain_content_and_a_fault_breaks_the_call() -> None:
    refusing = _client(OpenAIConfig(triggers=(("galkarto", "refusal"),)))
    choice = refusing.post("/v1/chat/completions", json=_body(T.opening(CUTOFF, 20, BRIEF)))
    refused = choice.json()["choices"][0]
    assert refused["finish_reason"] == "stop" and "tool_calls" not in refused["message"]
    assert refused["message"]["content"] == A.REFUSAL
    broken = _client(OpenAIConfig(fault="invalid_json", fault_rate=1.0))
    answer = broken.post("/v1/chat/completions", json=_body(T.opening(CUTOFF, 20, BRIEF))).json()
    arguments = answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert A._json(arguments) is None


def test_rates_in_the_config_reach_the_agent() -> None:
    config = OpenAIConfig(agent_malformed_rate=1.0)
    answer = _client(config).post("/v1/chat/completions", json=_body(_world_conversation()))
    call = answer.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] not in A.TOOLS or A._json(call["arguments"]) in (None, {})
    with pytest.raises(ValueError, match="agent_refusal_rate"):
        OpenAIConfig(agent_refusal_rate=1.5)


def test_max_tokens_cuts_the_call() -> None:
    body = _body(T.opening(CUTOFF, 20, BRIEF), max_completion_tokens=3)
    answer = _client(OpenAIConfig()).post("/v1/chat/completions", json=body).json()
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "length" and answer["usage"]["completion_tokens"] == 3
    assert A._json(choice["message"]["tool_calls"][0]["function"]["arguments"]) is None


def test_other_tools_get_the_answer_a_request_without_tools_gets() -> None:
    other = [{"type": "function", "function": {"name": "weather", "parameters": {}}}]
    plain = {"model": "sandbox-gpt", "messages": T.opening(CUTOFF, 20, BRIEF)}
    with_tools = _client(OpenAIConfig()).post(
        "/v1/chat/completions", json={**plain, "tools": other}
    )
    without = _client(OpenAIConfig()).post("/v1/chat/completions", json=plain)
    assert with_tools.json() == without.json()


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": "search"}, "tools"),
        ({"tools": []}, "tools"),
        ({"tools": [{"type": "function"}]}, "tools"),
        ({"tool_choice": "always"}, "tool_choice"),
        ({"tool_choice": {"type": "function", "function": {"name": "x"}}}, "tool_choice"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ],
)
def test_bad_tool_parameters_are_a_400(extra: dict[str, Any], param: str) -> None:
    body = {**_body(T.opening(CUTOFF, 20, BRIEF)), **extra}
    answer = _client(OpenAIConfig()).post("/v1/chat/completions", json=body)
    assert answer.status_code == 400 and answer.json()["error"]["param"] == param
