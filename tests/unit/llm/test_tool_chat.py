"""The LLM agent through the OpenAI backend, against an endpoint faked at the HTTP layer: its turns
logged and priced, its failures counted by reason, no key in any file or row, and the same run
file whether one instance runs at a time or eight."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import httpx
import openai
import pytest

from inspire_build.config import Settings
from inspire_build.env import run, transcript
from inspire_build.env.core import SearchEnv, Task, Work
from inspire_build.env.llm_agent import Failure, LlmAgent, Outcome
from inspire_build.env.server import ToolSessions
from inspire_build.llm.tool_chat import ToolChat

KEY = "sk-live-0123456789abcdefSECRET"
MODEL = "gpt-4o-mini"  # priced by default
CUTOFF = dt.date(2024, 6, 1)
# 11 words: i01's brief and i12's are one (their turns are logged apart all the same)
WORDS = "sparse dense retrieval index memory recall graph neural long documents scale".split()  # noqa: SIM905
# Instances whose briefs name a behaviour of the fake model; the rest search, read and submit.
TROUBLE = {
    "i03": "REFUSE",
    "i05": "GARBLE",
    "i07": "SLOW",
    "i09": "BROKEN",
    "i11": "GREEDY",
    "i12": "ECHO",  # a proxy that echoes the request's key in the model's words
}


class Backend:
    """Twenty works; a search ranks them by a hash of the query and the ID (deterministic)."""

    name = "fake"
    works = [Work(f"p{n}", dt.date(2020, 1, 1), title=f"Work {n}", year=2020) for n in range(20)]

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        def rank(work: Work) -> str:
            return hashlib.sha256(f"{query}\0{work.paper_id}".encode()).hexdigest()

        return sorted(self.works, key=rank)[:k]

    def read(self, paper_id: str) -> Work | None:
        return next((w for w in self.works if w.paper_id == paper_id), None)


def tasks() -> list[Task]:
    found = []
    for n in range(1, 13):
        iid = f"i{n:02d}"
        brief = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(6)) + "."
        found.append(Task(iid, f"{TROUBLE.get(iid, 'Plain')}: {brief}", CUTOFF))
    return found


def tool_message(name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": "t", "function": function}]}


def next_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The fake model's move: a function of the conversation alone."""
    brief = messages[1]["content"].split("Brief: ", 1)[1]
    answers = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    if brief.startswith("REFUSE"):
        return {"role": "assistant", "content": None, "refusal": "Not this one."}
    if brief.startswith("GARBLE") and answers:
        return tool_message("read", '{"paper_id": ')
    if brief.startswith("GREEDY"):
        return tool_message("search", json.dumps({"query": f"more {len(answers)}"}))
    if not answers:
        return tool_message("search", json.dumps({"query": brief.split(":")[1], "k": 5}))
    if len(answers) == 1:
        return tool_message("read", json.dumps({"paper_id": answers[0]["results"][2]["paper_id"]}))
    ranking = [answers[1]["paper"]["paper_id"], *(r["paper_id"] for r in answers[0]["results"])]
    return tool_message("submit", json.dumps({"ranking": ranking}))


def endpoint(asked: list[dict[str, Any]]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append(body)
        brief = body["messages"][1]["content"]
        if "SLOW" in brief:
            raise httpx.ReadTimeout("the model is slow", request=request)
        if "BROKEN" in brief:
            error = {"message": f"upstream failed for {request.headers['authorization']}"}
            return httpx.Response(500, json={"error": error})
        said = {"role": "assistant", "content": f"no tool, {request.headers['authorization']}"}
        message = said if "ECHO" in brief else next_message(body["messages"])
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        made = {"id": "c", "object": "chat.completion", "created": 0, "model": MODEL}
        return httpx.Response(200, json={**made, "choices": [choice], "usage": usage})

    return httpx.MockTransport(answer)


def run_all(
    con: duckdb.DuckDBPyConnection, workers: int, asked: list[dict[str, Any]]
) -> tuple[list[tuple[SearchEnv, Outcome]], ToolChat]:
    settings = Settings(llm_backend="openai", llm_model=MODEL, llm_api_key=KEY, llm_max_retries=0)
    client = openai.OpenAI(
        api_key=KEY,
        base_url="http://llm.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=endpoint(asked)),
    )
    name = f"llm-w{workers}"
    chat = ToolChat(settings, con, transcript.format_hash(), scope=name, client=client)
    sessions = ToolSessions(tasks(), Backend(), con, budget=4, run_name=name)
    try:
        return run.operate(sessions, "llm:test", LlmAgent(chat, 4).play, workers), chat
    finally:
        chat.close()


def test_one_and_eight_at_once_write_the_same_run_and_count_the_same_failures(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    written = {}
    for workers in (1, 8):
        played, chat = run_all(con, workers, [])
        envs, outcomes = [env for env, _ in played], [outcome for _, outcome in played]
        files = (tmp_path / f"run-{workers}.jsonl", tmp_path / f"traj-{workers}.jsonl")
        run.write_run(envs, *files, [o.note() for o in outcomes])
        written[workers] = files
        failed = {o.failure for o in outcomes if o.failure is not None}
        assert failed == set(Failure)  # every kind of failure occurs
        assert chat.totals.turns > 12 and chat.totals.cost_usd > 0
    assert written[1][0].read_bytes() == written[8][0].read_bytes()
    lines = [json.loads(x) for x in written[8][0].read_text().splitlines()]
    assert [x["instance_id"] for x in lines] == [t.instance_id for t in tasks()]
    assert sum(1 for x in lines if x["ranking"]) == 12 - len(TROUBLE)

    def steps(path: Path) -> list[object]:
        found = [json.loads(x) for x in path.read_text().splitlines()]
        for line in found:
            for step in line["steps"]:
                del step["latency_ms"]
        return found

    assert steps(written[1][1]) == steps(written[8][1])


def test_each_failure_is_recorded_in_its_trajectory_line_and_no_file_or_row_holds_the_key(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []
    played, _ = run_all(con, 4, asked)
    reasons = {env.task.instance_id: outcome.failure for env, outcome in played}
    assert {iid: reasons[iid] for iid in TROUBLE} == {
        "i03": Failure.REFUSAL,
        "i05": Failure.MALFORMED,
        "i07": Failure.TIMEOUT,
        "i09": Failure.LLM_ERROR,
        "i11": Failure.OVER_BUDGET,
        "i12": Failure.REFUSAL,  # words, no tool call: the model did not play
    }
    assert all(env.submitted == () for env, o in played if o.failure is not None)
    assert all(len(env.steps) <= 4 for env, _ in played)
    broken = next(o for env, o in played if env.task.instance_id == "i09")
    assert "REDACTED" in str(broken.detail) and KEY not in str(broken.detail)
    echoed = next(o for env, o in played if env.task.instance_id == "i12")
    assert "no tool, Bearer REDACTED" in str(echoed.detail)
    envs = [env for env, _ in played]
    run.write_run(envs, tmp_path / "r.jsonl", tmp_path / "t.jsonl", [o.note() for _, o in played])
    line = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[8])
    assert line["failure"] == "llm_error" and line["failure_detail"] == broken.detail
    for path in (tmp_path / "r.jsonl", tmp_path / "t.jsonl"):
        assert KEY not in path.read_text()
    for table in ("llm_calls", "env_sessions", "env_steps"):
        rows = con.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 (our tables)
        assert KEY not in json.dumps(rows, default=str)
    # what the model was sent: the chat format's tools, and the transcript's opening
    assert all(body["tools"] == transcript.TOOLS and body["model"] == MODEL for body in asked)
    first = next(b for b in asked if "Plain" in b["messages"][1]["content"])
    assert first["messages"][0] == {"role": "system", "content": transcript.SYSTEM}


def test_turns_are_logged_with_their_verdicts_tokens_and_cost(
    con: duckdb.DuckDBPyConnection,
) -> None:
    played, chat = run_all(con, 2, [])
    rows = con.execute(
        "SELECT status, count(*), sum(tokens_in), min(cost_usd) > 0 FROM llm_calls "
        "WHERE prompt_name = 'agent' AND prompt_hash = ? GROUP BY status ORDER BY status",
        [transcript.format_hash()],
    ).fetchall()
    by_status = {status: (n, tokens, priced) for status, n, tokens, priced in rows}
    assert by_status["refused"][0] == 2 and by_status["invalid"][0] == 1  # REFUSE, ECHO; GARBLE
    answered = sum(o.turns for _, o in played) - 5  # no answer: SLOW, BROKEN; judged: the 3 above
    assert by_status["answered"][0] == answered
    assert all(priced for _, _, priced in by_status.values())
    assert chat.totals.turns == answered + 3
    assert chat.totals.tokens_in == 100 * chat.totals.turns


@pytest.mark.parametrize("status", [401, 404])
def test_a_refused_key_stops_the_run_with_its_message_redacted(
    con: duckdb.DuckDBPyConnection, status: int
) -> None:
    from inspire_build.llm.errors import LLMConfigError

    def refuse(request: httpx.Request) -> httpx.Response:
        sent = request.headers["authorization"]
        return httpx.Response(status, json={"error": {"message": f"bad key {sent}"}})

    settings = Settings(llm_backend="openai", llm_model=MODEL, llm_api_key=KEY)
    client = openai.OpenAI(
        api_key=KEY,
        base_url="http://llm.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
    )
    chat = ToolChat(settings, con, transcript.format_hash(), scope="x", client=client)
    sessions = ToolSessions(tasks(), Backend(), con, budget=4, run_name="x")
    with pytest.raises(LLMConfigError) as raised:
        run.operate(sessions, "llm:test", LlmAgent(chat, 4).play, 4)
    assert KEY not in str(raised.value) and "REDACTED" in str(raised.value)
    started = con.execute("SELECT count(*) FROM env_sessions").fetchone()
    assert started is not None and started[0] < 12  # no instance started after the error


def test_the_llm_budget_holds_the_agents_calls_and_stops_the_run(
    con: duckdb.DuckDBPyConnection,
) -> None:
    from inspire_build.errors import BudgetExceeded, InputError

    unpriced = Settings(llm_backend="openai", llm_model="no-price", llm_budget_usd=1.0)
    with pytest.raises(InputError, match="has no price"):  # refused before any call
        ToolChat(unpriced, con, transcript.format_hash(), scope="x")
    asked: list[dict[str, Any]] = []
    settings = Settings(llm_backend="openai", llm_model=MODEL, llm_budget_usd=0.0)
    client = openai.OpenAI(
        api_key="k",
        base_url="http://llm.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=endpoint(asked)),
    )
    chat = ToolChat(settings, con, transcript.format_hash(), scope="y", client=client)
    sessions = ToolSessions(tasks(), Backend(), con, budget=4, run_name="y")
    with pytest.raises(BudgetExceeded):
        run.operate(sessions, "llm:test", LlmAgent(chat, 4).play, 2)
    assert asked == []  # no call was made past the budget
