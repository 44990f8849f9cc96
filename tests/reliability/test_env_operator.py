"""The operator and the agent, attacked across instances: an agent holding one session's token
cannot list instances, open a session, read past its own cutoff through another instance, or
spend another session's budget, over real HTTP and over real MCP stdio; the operator can do
what ``inspire agent run`` needs.

Two instances with different cutoffs: the early one's target (W10) and a later work (W11) are
public before the late one's cutoff, so a session on the late instance may read them; a session
on the early one must never see them, whatever it calls.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import duckdb
import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult
from typer.testing import CliRunner

from inspire_build import cli, warehouse
from inspire_build.cutoff import SourceDate
from inspire_build.env import server, store
from inspire_build.env.backends import LocalBackend
from inspire_build.env.corpus import CorpusRecord
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import DatePrecision, Source

VERSION = "v1"
EARLY, LATE = "early", "late"
WORKS = {  # OpenAlex ID: (title, first public day)
    "W1": ("Sparse retrieval indexes", dt.date(2020, 1, 1)),
    "W10": ("Sharded sparse retrieval at scale", dt.date(2022, 3, 1)),  # EARLY's target
    "W11": ("Sharded sparse retrieval revisited", dt.date(2023, 1, 1)),
}
LATE_ONLY = {"openalex:W10", "openalex:W11"}


def _warehouse(path: Path) -> Path:
    with warehouse.open_warehouse(path) as con:
        con.execute(
            "INSERT INTO split_versions (version_id, split, config_hash, code_version, "
            "prompt_hashes, models, counts, created_at, status) "
            "VALUES (?, 'eval', 'h', '0', '{}', '{}', '{}', now(), 'complete')",
            [VERSION],
        )
        for instance, target, cutoff in (
            (EARLY, "openalex:W10", "2022-01-01"),
            (LATE, "arxiv:2409.00002", "2024-06-01"),
        ):
            con.execute(
                "INSERT INTO instances (version_id, instance_id, target_id, brief_id, brief, "
                "cutoff_date, n_antecedents) VALUES (?, ?, ?, ?, "
                "'Sharded sparse retrieval must scale.', CAST(? AS DATE), 1)",
                [VERSION, instance, target, f"b-{instance}", cutoff],
            )
        records = [
            CorpusRecord(
                (PaperId(Scheme.OPENALEX, key),),
                title,
                f"{title}: sharded sparse retrieval, an abstract.",
                day.year,
                ("A. Author",),
                (SourceDate(Source.OPENALEX, day, DatePrecision.DAY),),
            )
            for key, (title, day) in WORKS.items()
        ]
        store.write_corpus(con, records, "test")
    return path


def _sessions(con: duckdb.DuckDBPyConnection, budget: int = 3) -> server.ToolSessions:
    tasks = store.load_tasks(con, VERSION)
    return server.ToolSessions(
        tasks, LocalBackend(con), con, budget=budget, run_name="op", version=VERSION
    )


def test_over_http_an_agent_reaches_only_its_own_session(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    key = server.new_operator_key()
    operator = {"Authorization": f"Bearer {key}"}
    with warehouse.open_warehouse(path) as con:
        app = server.create_app(_sessions(con, budget=4), key)
        with server.running(app) as url, httpx.Client(base_url=url) as http:
            # The operator: lists, starts one session per instance, hands each token out.
            listed = http.get("/instances", headers=operator).json()
            assert sorted(i["instance_id"] for i in listed) == [EARLY, LATE]
            mine = http.post("/start", json={"instance_id": EARLY}, headers=operator).json()
            theirs = http.post("/start", json={"instance_id": LATE}, headers=operator).json()
            token, other = mine["token"], theirs["token"]
            # The late session may read the early target: what the early agent must not reach.
            shown = http.post("/read", json={"token": other, "paper_id": "W10"}).json()
            assert (shown["status"], shown["budget_left"]) == ("ok", 3)

            as_agent = {"Authorization": f"Bearer {token}"}
            refused = {
                "list without a key": http.get("/instances"),
                "list with its token": http.get("/instances", headers=as_agent),
                "start without a key": http.post("/start", json={"instance_id": LATE}),
                "start with its token in the body": http.post(
                    "/start", json={"instance_id": LATE, "token": token}
                ),
                "start with its token as the key": http.post(
                    "/start", json={"instance_id": LATE}, headers=as_agent
                ),
                "search named for the other instance": http.post(
                    "/search", json={"token": token, "query": "sharded", "instance_id": LATE}
                ),
                "read named for the other instance": http.post(
                    "/read", json={"token": token, "paper_id": "W10", "instance_id": LATE}
                ),
            }
            for name, answer in refused.items():
                assert answer.status_code in (401, 403), (name, answer.text)
                assert token not in answer.text and key not in answer.text, name
            assert "instance_id" not in str(refused["list with its token"].json())

            for paper in ("W10", "openalex:W10", "W11"):
                read = http.post("/read", json={"token": token, "paper_id": paper}).json()
                assert read["status"] == "not_available", paper  # past its own cutoff
            found = http.post("/search", json={"token": token, "query": "sharded sparse"})
            # Spent: its four calls are gone; the late session's budget is untouched.
            assert found.json()["budget_left"] == 0
            assert {r["paper_id"] for r in found.json()["results"]} == {"openalex:W1"}
            spent = http.post("/search", json={"token": token, "query": "sparse"}).json()
            assert spent["status"] == "budget_exhausted"
            resumed = http.post(
                "/start", json={"instance_id": LATE, "token": other}, headers=operator
            ).json()
            assert resumed["budget_left"] == 3
        calls = con.execute(
            "SELECT instance_id, calls FROM env_sessions ORDER BY instance_id"
        ).fetchall()
        assert calls == [(EARLY, 4), (LATE, 1)]


def _result(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    structured = result.structuredContent
    assert structured is not None
    return structured["result"] if set(structured) == {"result"} else structured


def _params(path: Path, instance: str, kept: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "inspire_build", "env", "mcp", "--instance", instance, "--version", VERSION,
            "--budget", "3", "--run-name", "op", "--session-file", str(kept),
            "--warehouse", str(path),
        ],
    )  # fmt: skip


def test_over_mcp_a_server_for_one_session_reaches_no_other(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    late_file, early_file = tmp_path / "late.token", tmp_path / "early.token"
    seen: dict[str, Any] = {}

    async def late() -> None:  # the operator's server for the late instance: one read
        async with (
            stdio_client(_params(path, LATE, late_file)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            seen["late"] = _result(await session.call_tool("read", {"paper_id": "W10"}))

    async def early() -> None:
        async with (
            stdio_client(_params(path, EARLY, early_file)) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            seen["instructions"] = init.instructions
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert tools == {"search", "read", "submit"}
            other = late_file.read_text().strip()
            for tool, arguments in (
                ("instances", {}),
                ("start", {"instance_id": LATE}),
                ("start", {"instance_id": LATE, "token": other}),
            ):
                refused = await session.call_tool(tool, arguments)
                assert refused.isError and "no such tool" in str(refused.content)
                assert other not in str(refused.content)
            reads = []
            for paper in ("W10", "W11"):  # past its cutoff, even when named with the other's
                arguments = {"paper_id": paper, "token": other, "instance_id": LATE}
                reads.append(_result(await session.call_tool("read", arguments)))
            query = {"query": "sharded sparse", "token": other, "instance_id": LATE}
            found = _result(await session.call_tool("search", query))
            spent = _result(await session.call_tool("search", {"query": "sparse"}))
            seen.update(reads=reads, found=found, spent=spent)

    anyio.run(late)
    anyio.run(early)

    assert seen["late"]["status"] == "ok"  # the late session may read the early target
    assert "Cutoff: 2022-01-01" in seen["instructions"]
    assert [r["status"] for r in seen["reads"]] == ["not_available", "not_available"]
    assert {r["paper_id"] for r in seen["found"]["results"]} == {"openalex:W1"}
    assert seen["found"]["budget_left"] == 0
    assert seen["spent"]["status"] == "budget_exhausted"
    con = duckdb.connect(str(path), read_only=True)
    try:
        calls = con.execute(
            "SELECT instance_id, calls FROM env_sessions ORDER BY instance_id"
        ).fetchall()
    finally:
        con.close()
    assert calls == [(EARLY, 3), (LATE, 1)]  # the late budget spent nothing more


def test_agent_run_takes_the_operators_path(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    runs, trajectories = tmp_path / "run.jsonl", tmp_path / "traj.jsonl"
    args = [
        "agent", "run", "--agent", "bm25-brief", "--version", VERSION, "--out", str(runs),
        "--trajectories", str(trajectories), "--budget", "2", "--warehouse", str(path),
    ]  # fmt: skip
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    lines = {line["instance_id"]: line for line in map(json.loads, runs.read_text().splitlines())}
    assert not LATE_ONLY & set(lines[EARLY]["ranking"])  # nothing past the early cutoff
    assert LATE_ONLY & set(lines[LATE]["ranking"])
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT instance_id, agent, run_name, status, calls, token_sha256 IS NOT NULL "
            "FROM env_sessions ORDER BY instance_id"
        ).fetchall()
    finally:
        con.close()
    (run_name,) = {row[2] for row in rows}
    assert run_name.startswith("bm25-brief-")
    assert [row[:2] + row[3:] for row in rows] == [
        (EARLY, "bm25-brief", "submitted", 1, True),
        (LATE, "bm25-brief", "submitted", 1, True),
    ]
    listed = CliRunner().invoke(
        cli.app, ["env", "instances", "--version", VERSION, "--warehouse", str(path)]
    )
    assert listed.exit_code == 0, listed.output
    shown = [json.loads(line) for line in listed.output.splitlines()]
    assert [(i["instance_id"], i["cutoff"]) for i in shown] == [
        (EARLY, "2022-01-01"),
        (LATE, "2024-06-01"),
    ]
