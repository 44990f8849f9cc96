"""The search environment's boundary, attacked as a competitor would: over real HTTP and over
real MCP stdio, every attack is refused and charged nothing, and a server killed with SIGKILL
and restarted resumes an open session with the budget it had spent.

The warehouse is small and written directly (two instances, a handful of works), so these run
in seconds with no sandbox build.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import duckdb
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from inspire_build import warehouse
from inspire_build.cutoff import SourceDate
from inspire_build.env import server, store
from inspire_build.env.backends import LocalBackend
from inspire_build.env.corpus import CorpusRecord
from inspire_build.ids import PaperId, Scheme
from inspire_build.local_server import free_port
from inspire_build.models import DatePrecision, Source

VERSION = "v1"
LONG_QUERY = "q" * 2000  # a 2 kB query: over the 1,000-character bound
TWO_MB = 2_000_000
TITLES = {
    "W1": "Sparse retrieval indexes",
    "W2": "Memory for sparse models",
    "W3": "Learned sparse retrieval at scale",
    "W4": "Dense passage retrieval",
    "W5": "Inverted indexes in shared memory",
}


def _warehouse(path: Path) -> Path:
    """Two instances of version v1 and a corpus of a few works, all before the cutoff."""
    with warehouse.open_warehouse(path) as con:
        con.execute(
            "INSERT INTO split_versions (version_id, split, config_hash, code_version, "
            "prompt_hashes, models, counts, created_at, status) "
            "VALUES (?, 'eval', 'h', '0', '{}', '{}', '{}', now(), 'complete')",
            [VERSION],
        )
        for instance, brief in (
            ("i1", "Sparse retrieval indexes must scale to sharded memory."),
            ("i2", "Dense retrieval needs memory for passages."),
        ):
            con.execute(
                "INSERT INTO instances (version_id, instance_id, target_id, brief_id, brief, "
                "cutoff_date, n_antecedents) VALUES (?, ?, ?, ?, ?, DATE '2024-06-01', 2)",
                [VERSION, instance, f"arxiv:2409.0000{instance[-1]}", f"b{instance}", brief],
            )
        records = [
            CorpusRecord(
                (PaperId(Scheme.OPENALEX, key),),
                title,
                f"{title}, an abstract.",
                2020,
                ("A. Author",),
                (SourceDate(Source.OPENALEX, dt.date(2020, 1, 1 + n), DatePrecision.DAY),),
            )
            for n, (key, title) in enumerate(TITLES.items())
        ]
        store.write_corpus(con, records, "test")
    return path


def _steps(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(
        "SELECT s.instance_id, t.step, t.tool, t.query FROM env_steps t "
        "JOIN env_sessions s USING (session_id) ORDER BY s.instance_id, t.step"
    ).fetchall()


def _sessions(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(
        "SELECT instance_id, status, calls, ranking FROM env_sessions ORDER BY instance_id"
    ).fetchall()


# --- HTTP ---------------------------------------------------------------------------------------


def test_over_http_every_attack_is_refused_and_charged_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = _warehouse(tmp_path / "w.duckdb")
    with warehouse.open_warehouse(path) as con:
        sessions = server.ToolSessions(
            store.load_tasks(con, VERSION),
            LocalBackend(con),
            con,
            budget=3,
            run_name="attack",
            version=VERSION,
        )
        with server.running(server.create_app(sessions)) as url, httpx.Client(base_url=url) as http:
            mine = http.post("/start", json={"instance_id": "i1"}).json()
            token = mine["token"]
            found = http.post("/search", json={"token": token, "query": "sparse retrieval"})
            assert found.json()["budget_left"] == 2
            theirs = http.post("/start", json={"instance_id": "i2"}).json()

            def left(instance: str, key: str) -> int:
                resumed = http.post("/start", json={"instance_id": instance, "token": key})
                assert resumed.status_code == 200 and resumed.json()["resumed"], resumed.text
                return int(resumed.json()["budget_left"])

            def search(query: object = "sparse", k: object = 10, **more: object) -> httpx.Response:
                return http.post("/search", json={"token": token, "query": query, "k": k, **more})

            def chunked() -> Iterator[bytes]:
                yield b'{"token": "' + token.encode() + b'", "query": "'
                for _ in range(20):
                    yield b"q" * (TWO_MB // 20)
                yield b'"}'

            big = json.dumps({"token": token, "query": "q" * TWO_MB}).encode()
            attacks: dict[str, tuple[Callable[[], httpx.Response], int]] = {
                "a restart without the token": (
                    lambda: http.post("/start", json={"instance_id": "i1"}),
                    409,
                ),
                "a restart with another session's token": (
                    lambda: http.post(
                        "/start", json={"instance_id": "i1", "token": theirs["token"]}
                    ),
                    409,
                ),
                "another session's token": (
                    lambda: http.post(
                        "/search",
                        json={"token": theirs["token"], "query": "sparse", "instance_id": "i1"},
                    ),
                    403,
                ),
                "a forged token": (
                    lambda: http.post("/read", json={"token": "x" * 43, "paper_id": "W1"}),
                    403,
                ),
                "no token": (lambda: http.post("/read", json={"paper_id": "W1"}), 401),
                "k = 0": (lambda: search(k=0), 422),
                "k = -3": (lambda: search(k=-3), 422),
                "k = 1000": (lambda: search(k=1000), 422),
                "k not an integer": (lambda: search(k="ten"), 422),
                "an empty query": (lambda: search(""), 422),
                "a blank query": (lambda: search("   "), 422),
                "a 2 kB query": (lambda: search(LONG_QUERY), 422),
                "a 201-character ID": (
                    lambda: http.post("/read", json={"token": token, "paper_id": "W" * 201}),
                    422,
                ),
                "1,001 submitted IDs": (
                    lambda: http.post("/submit", json={"token": token, "ranking": ["W1"] * 1001}),
                    422,
                ),
                "a 2 MB body": (
                    lambda: http.post(
                        "/search", content=big, headers={"content-type": "application/json"}
                    ),
                    413,
                ),
                "a 2 MB chunked body": (
                    lambda: http.post(
                        "/search", content=chunked(), headers={"content-type": "application/json"}
                    ),
                    413,
                ),
            }
            for name, (attack, status) in attacks.items():
                response = attack()
                assert response.status_code == status, (name, response.text)
                assert response.json()["error"] and len(response.text) < 300, name
                assert (left("i1", token), left("i2", theirs["token"])) == (2, 3), name

            final = http.post("/submit", json={"token": token, "ranking": ["openalex:W1"]}).json()
            assert final["status"] == "ok" and "scores" not in final
            again = http.post("/submit", json={"token": token, "ranking": ["openalex:W2"]}).json()
            assert (again["status"], again["ranking"]) == ("submitted", ["openalex:W1"])
            after = search().json()
            assert (after["status"], after["budget_left"]) == ("submitted", 2)
            restart = http.post("/start", json={"instance_id": "i1", "token": token})
            assert restart.status_code == 409 and "final" in restart.json()["error"]
        assert _steps(con) == [("i1", 1, "search", "sparse retrieval")]
        assert _sessions(con) == [
            ("i1", "submitted", 1, ["openalex:W1"]),
            ("i2", "open", 0, None),
        ]
    assert "q" * 1001 not in caplog.text  # nothing out of bounds was logged verbatim


# --- MCP ----------------------------------------------------------------------------------------


def _result(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    structured = result.structuredContent
    assert structured is not None
    return structured["result"] if set(structured) == {"result"} else structured


def test_over_mcp_every_attack_is_a_tool_error_and_charged_nothing(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    runs, trajectories = tmp_path / "run.jsonl", tmp_path / "traj.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "inspire_build", "env", "mcp", "--version", VERSION, "--budget", "3",
            "--run", str(runs), "--trajectories", str(trajectories), "--warehouse", str(path),
        ],
    )  # fmt: skip
    errors = tmp_path / "stderr.log"
    answers: dict[str, Any] = {}

    async def drive() -> None:
        with errors.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()

                async def call(name: str, **arguments: Any) -> CallToolResult:
                    return await session.call_tool(name, arguments)

                mine = _result(await call("start", instance_id="i1"))
                token = mine["token"]
                found = _result(await call("search", token=token, query="sparse retrieval"))
                assert found["budget_left"] == 2
                theirs = _result(await call("start", instance_id="i2"))

                async def left(instance: str, key: str) -> int:
                    resumed = _result(await call("start", instance_id=instance, token=key))
                    assert resumed["resumed"]
                    return int(resumed["budget_left"])

                attacks: dict[str, tuple[str, dict[str, Any], str]] = {
                    "a restart without the token": ("start", {"instance_id": "i1"}, "another"),
                    "a restart with another session's token": (
                        "start",
                        {"instance_id": "i1", "token": theirs["token"]},
                        "another session",
                    ),
                    "another session's token": (
                        "search",
                        {"token": theirs["token"], "query": "sparse", "instance_id": "i1"},
                        "not for instance",
                    ),
                    "a forged token": (
                        "read",
                        {"token": "x" * 43, "paper_id": "W1"},
                        "unknown session token",
                    ),
                    "k = 0": ("search", {"token": token, "query": "sparse", "k": 0}, "k is 0"),
                    "k = -3": ("search", {"token": token, "query": "sparse", "k": -3}, "k is -3"),
                    "k = 1000": (
                        "search",
                        {"token": token, "query": "sparse", "k": 1000},
                        "k is 1000",
                    ),
                    "an empty query": ("search", {"token": token, "query": ""}, "query is empty"),
                    "a 2 kB query": (
                        "search",
                        {"token": token, "query": LONG_QUERY},
                        "query is 2,000 characters",
                    ),
                    "a 2 MB query": (
                        "search",
                        {"token": token, "query": "q" * TWO_MB},
                        "query is 2,000,000 characters",
                    ),
                    "a 201-character ID": (
                        "read",
                        {"token": token, "paper_id": "W" * 201},
                        "paper_id is 201 characters",
                    ),
                    "1,001 submitted IDs": (
                        "submit",
                        {"token": token, "ranking": ["W1"] * 1001},
                        "at most 1,000",
                    ),
                    "an oversized submitted ID": (
                        "submit",
                        {"token": token, "ranking": ["W1", "W" * 201]},
                        "ranking[2] is 201 characters",
                    ),
                }
                for name, (tool, arguments, reason) in attacks.items():
                    refused = await session.call_tool(tool, arguments)
                    assert refused.isError, name
                    assert reason in str(refused.content), (name, refused.content)
                    assert len(str(refused.content)) < 600, name  # the value is not echoed
                    assert (await left("i1", token), await left("i2", theirs["token"])) == (2, 3)

                final = _result(await call("submit", token=token, ranking=["openalex:W1"]))
                again = _result(await call("submit", token=token, ranking=["openalex:W2"]))
                after = _result(await call("search", token=token, query="sparse"))
                restart = await call("start", instance_id="i1", token=token)
                answers.update(final=final, again=again, after=after, restart=restart)

    anyio.run(drive)

    assert answers["final"]["status"] == "ok" and "scores" not in answers["final"]
    assert (answers["again"]["status"], answers["again"]["ranking"]) == (
        "submitted",
        ["openalex:W1"],
    )
    assert (answers["after"]["status"], answers["after"]["budget_left"]) == ("submitted", 2)
    assert answers["restart"].isError and "final" in str(answers["restart"].content)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert _steps(con) == [("i1", 1, "search", "sparse retrieval")]
        assert _sessions(con) == [
            ("i1", "submitted", 1, ["openalex:W1"]),
            ("i2", "open", 0, None),
        ]
    finally:
        con.close()
    assert len(runs.read_text().splitlines()) == 1  # one final submission, one run line
    assert "q" * 1001 not in errors.read_text()


# --- a killed server ----------------------------------------------------------------------------


def _serve(path: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """``inspire env serve`` as users run it, in its own process; returns once it answers."""
    command = [
        sys.executable, "-m", "inspire_build", "env", "serve", "--version", VERSION,
        "--budget", "4", "--port", str(port), "--run-name", "killed", "--warehouse", str(path),
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/instances", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the server did not answer within 60 s: {log.read_text()}")


def test_a_server_killed_and_restarted_resumes_an_open_session_with_its_spent_budget(
    tmp_path: Path,
) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    log = tmp_path / "serve.log"
    port = free_port()
    first = _serve(path, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        token = httpx.post(f"{url}/start", json={"instance_id": "i1"}).json()["token"]
        for query in ("sparse retrieval", "memory"):
            found = httpx.post(f"{url}/search", json={"token": token, "query": query}).json()
        assert found["budget_left"] == 2
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)

    port = free_port()
    second = _serve(path, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        assert httpx.post(f"{url}/start", json={"instance_id": "i1"}).status_code == 409
        resumed = httpx.post(f"{url}/start", json={"instance_id": "i1", "token": token}).json()
        assert (resumed["budget"], resumed["budget_left"], resumed["resumed"]) == (4, 2, True)
        more = httpx.post(f"{url}/read", json={"token": token, "paper_id": "W1"}).json()
        assert (more["status"], more["budget_left"]) == ("ok", 1)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=30)

    con = duckdb.connect(str(path), read_only=True)
    try:
        assert [step[1:] for step in _steps(con)] == [
            (1, "search", "sparse retrieval"),
            (2, "search", "memory"),
            (3, "read", "W1"),
        ]
        assert con.execute("SELECT status, calls, token_sha256 FROM env_sessions").fetchall() == [
            ("open", 3, hashlib.sha256(token.encode()).hexdigest())
        ]
    finally:
        con.close()
    assert token not in log.read_text() and token.encode() not in path.read_bytes()


def test_the_debugging_mode_warns_and_marks_what_it_touched(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    trajectories = tmp_path / "traj.jsonl"
    errors = tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "inspire_build", "env", "mcp", "--version", VERSION, "--warehouse", str(path),
            "--trajectories", str(trajectories), "--debug-reveal-scores-to-agent",
        ],
    )  # fmt: skip
    answers: list[Any] = []

    async def drive() -> None:
        with errors.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                token = _result(await session.call_tool("start", {"instance_id": "i1"}))["token"]
                submit = {"token": token, "ranking": ["openalex:W1"]}
                answers.append(_result(await session.call_tool("submit", submit)))

    anyio.run(drive)

    assert "scores" in answers[0]
    assert "WARNING: --debug-reveal-scores-to-agent" in errors.read_text()
    (line,) = [json.loads(text) for text in trajectories.read_text().splitlines()]
    assert line["scores_revealed"] is True
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT scores_revealed FROM env_sessions").fetchall() == [(True,)]
    finally:
        con.close()
