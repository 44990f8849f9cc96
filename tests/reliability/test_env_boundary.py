"""The search environment's boundary, attacked as a competitor would: over real HTTP and over
real MCP stdio, every attack is refused, names nothing it refused and is charged nothing, and a
server killed with SIGKILL and restarted resumes an open session with the budget it had spent.
(The operator/agent split, across instances and cutoffs: ``test_env_operator.py``.)

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
LONG_QUERY = "q" * 5000  # a 5 kB query: over the 4,000-character bound
BLANK = "\u200b\u3000\ufeff \u2060\u200c\u200d\t"  # blank once zero-widths are trimmed
SENTINEL = "zq7"  # in a refused value; never in a refusal
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
    key = server.new_operator_key()
    operator = {"Authorization": f"Bearer {key}"}
    with warehouse.open_warehouse(path) as con:
        sessions = server.ToolSessions(
            store.load_tasks(con, VERSION),
            LocalBackend(con),
            con,
            budget=3,
            run_name="attack",
            version=VERSION,
        )
        app = server.create_app(sessions, key)
        with server.running(app) as url, httpx.Client(base_url=url) as http:
            mine = http.post("/start", json={"instance_id": "i1"}, headers=operator).json()
            token = mine["token"]
            found = http.post("/search", json={"token": token, "query": "sparse retrieval"})
            assert found.json()["budget_left"] == 2
            theirs = http.post("/start", json={"instance_id": "i2"}, headers=operator).json()

            def left(instance: str, key: str) -> int:
                resumed = http.post(
                    "/start", json={"instance_id": instance, "token": key}, headers=operator
                )
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
                    lambda: http.post("/start", json={"instance_id": "i1"}, headers=operator),
                    409,
                ),
                "a restart with another session's token": (
                    lambda: http.post(
                        "/start",
                        json={"instance_id": "i1", "token": theirs["token"]},
                        headers=operator,
                    ),
                    409,
                ),
                "an unknown instance": (
                    lambda: http.post("/start", json={"instance_id": SENTINEL}, headers=operator),
                    404,
                ),
                "another session's token": (
                    lambda: http.post(
                        "/search",
                        json={"token": theirs["token"], "query": "sparse", "instance_id": "i1"},
                    ),
                    403,
                ),
                "a forged token": (
                    lambda: http.post("/read", json={"token": SENTINEL * 15, "paper_id": "W1"}),
                    403,
                ),
                "no token": (lambda: http.post("/read", json={"paper_id": "W1"}), 401),
                "k = 0": (lambda: search(k=0), 422),
                "k = -3": (lambda: search(k=-3), 422),
                "k = 1000": (lambda: search(k=1000), 422),
                "k not an integer": (lambda: search(k=SENTINEL), 422),
                "k = true": (lambda: search(k=True), 422),
                'k = "10"': (lambda: search(k="10"), 422),
                "k = 2.0": (lambda: search(k=2.0), 422),
                "k = 7.5": (lambda: search(k=7.5), 422),
                "an empty query": (lambda: search(""), 422),
                "a blank query": (lambda: search("   "), 422),
                "a query of zero-width and ideographic spaces": (lambda: search(BLANK), 422),
                "a 5 kB query": (lambda: search(SENTINEL * 2000), 422),
                "a query that is not a string": (lambda: search([SENTINEL]), 422),
                "a 201-character ID": (
                    lambda: http.post("/read", json={"token": token, "paper_id": SENTINEL * 67}),
                    422,
                ),
                "1,001 submitted IDs": (
                    lambda: http.post(
                        "/submit", json={"token": token, "ranking": [SENTINEL] * 1001}
                    ),
                    422,
                ),
                "a submitted ID that is not a string": (
                    lambda: http.post("/submit", json={"token": token, "ranking": [73571]}),
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
                "a foreign Host (DNS rebinding)": (
                    lambda: http.post(
                        "/search",
                        json={"token": token, "query": "sparse"},
                        headers={"Host": f"{SENTINEL}.example"},
                    ),
                    400,
                ),
                "the operator's list without the key": (lambda: http.get("/instances"), 401),
                "a start with the agent's own token as the key": (
                    lambda: http.post(
                        "/start",
                        json={"instance_id": "i2"},
                        headers={"Authorization": f"Bearer {token}"},
                    ),
                    403,
                ),
            }
            for name, (attack, status) in attacks.items():
                response = attack()
                assert response.status_code == status, (name, response.text)
                assert len(response.text) < 300, name
                for echo in (SENTINEL, "73571", "7.5", "2.0", "true", "True", token, key):
                    assert echo not in response.text, (name, echo, response.text)
                if status != 400:  # the Host check answers before the app, in plain text
                    assert response.json()["error"], name
                assert (left("i1", token), left("i2", theirs["token"])) == (2, 3), name

            final = http.post("/submit", json={"token": token, "ranking": ["openalex:W1"]}).json()
            assert final["status"] == "ok" and "scores" not in final
            again = http.post("/submit", json={"token": token, "ranking": ["openalex:W2"]}).json()
            assert (again["status"], again["ranking"]) == ("submitted", ["openalex:W1"])
            after = search().json()
            assert (after["status"], after["budget_left"]) == ("submitted", 2)
            restart = http.post(
                "/start", json={"instance_id": "i1", "token": token}, headers=operator
            )
            assert restart.status_code == 409 and "final" in restart.json()["error"]
        assert _steps(con) == [("i1", 1, "search", "sparse retrieval")]
        assert _sessions(con) == [
            ("i1", "submitted", 1, ["openalex:W1"]),
            ("i2", "open", 0, None),
        ]
    assert SENTINEL * 2 not in caplog.text  # nothing out of bounds was logged verbatim
    assert key not in caplog.text and token not in caplog.text


# --- MCP ----------------------------------------------------------------------------------------


def _result(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    structured = result.structuredContent
    assert structured is not None
    return structured["result"] if set(structured) == {"result"} else structured


def _mcp_command(path: Path, kept: Path, *more: str) -> list[str]:
    return [
        "-m", "inspire_build", "env", "mcp", "--instance", "i1", "--version", VERSION,
        "--budget", "3", "--session-file", str(kept), "--warehouse", str(path), *more,
    ]  # fmt: skip


def test_over_mcp_every_attack_is_a_tool_error_and_charged_nothing(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    runs, trajectories = tmp_path / "run.jsonl", tmp_path / "traj.jsonl"
    kept = tmp_path / "i1.token"
    args = _mcp_command(path, kept, "--run", str(runs), "--trajectories", str(trajectories))
    params = StdioServerParameters(command=sys.executable, args=args)
    errors = tmp_path / "stderr.log"
    answers: dict[str, Any] = {}

    async def first() -> None:  # the operator starts a server for i1; its agent searches once
        with errors.open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                answers["opened"] = (await session.initialize()).instructions
                found = _result(await session.call_tool("search", {"query": "sparse retrieval"}))
                answers["found"] = found

    async def second() -> None:  # restarted: the same session, resumed from the kept token
        with errors.open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                answers["resumed"] = (await session.initialize()).instructions
                tools = {tool.name for tool in (await session.list_tools()).tools}
                assert tools == {"search", "read", "submit"}

                async def search(**arguments: Any) -> CallToolResult:
                    return await session.call_tool("search", {"query": "sparse", **arguments})

                attacks: dict[str, tuple[str, dict[str, Any], str]] = {
                    "the operator's list": ("instances", {}, "no such tool"),
                    "a start of another instance": ("start", {"instance_id": "i2"}, "no such"),
                    "k = 0": ("search", {"query": "sparse", "k": 0}, "k is out of bounds"),
                    "k = -3": ("search", {"query": "sparse", "k": -3}, "k is out of bounds"),
                    "k = 7777": ("search", {"query": "sparse", "k": 7777}, "k is out of bounds"),
                    "k = true": ("search", {"query": "sparse", "k": True}, "k must be an integer"),
                    'k = "10"': ("search", {"query": "sparse", "k": "10"}, "k must be an integer"),
                    "k = 2.0": ("search", {"query": "sparse", "k": 2.0}, "k must be an integer"),
                    "an empty query": ("search", {"query": ""}, "query is empty"),
                    "a blank query": ("search", {"query": BLANK}, "query is empty"),
                    "a 5 kB query": ("search", {"query": SENTINEL * 2000}, "query is too long"),
                    "a 2 MB query": ("search", {"query": "q" * TWO_MB}, "query is too long"),
                    "a query that is not a string": (
                        "search",
                        {"query": [SENTINEL]},
                        "malformed call of search: query",
                    ),
                    "a 201-character ID": (
                        "read",
                        {"paper_id": SENTINEL * 67},
                        "paper_id is too long",
                    ),
                    "1,001 submitted IDs": (
                        "submit",
                        {"ranking": ["W1"] * 1001},
                        "at most 1,000",
                    ),
                    "an oversized submitted ID": (
                        "submit",
                        {"ranking": ["W1", SENTINEL * 67]},
                        "ranking[2] is too long",
                    ),
                }
                for name, (tool, arguments, reason) in attacks.items():
                    refused = await session.call_tool(tool, arguments)
                    said = str(refused.content)
                    assert refused.isError and reason in said, (name, said)
                    assert len(said) < 600, name
                    for echo in (SENTINEL, "7777", "2.0", "True", "true"):
                        assert echo not in said, (name, echo, said)
                answers["read"] = _result(await session.call_tool("read", {"paper_id": "W1"}))
                final = _result(await session.call_tool("submit", {"ranking": ["openalex:W1"]}))
                again = _result(await session.call_tool("submit", {"ranking": ["openalex:W2"]}))
                after = _result(await search())
                answers.update(final=final, again=again, after=after)

    anyio.run(first)
    anyio.run(second)

    assert "Cutoff: 2024-06-01" in answers["opened"] and "3 calls, 3 left" in answers["opened"]
    assert answers["found"]["budget_left"] == 2
    assert "3 calls, 2 left" in answers["resumed"]  # the restart reset nothing
    assert (answers["read"]["status"], answers["read"]["budget_left"]) == ("ok", 1)
    assert answers["final"]["status"] == "ok" and "scores" not in answers["final"]
    assert (answers["again"]["status"], answers["again"]["ranking"]) == (
        "submitted",
        ["openalex:W1"],
    )
    assert (answers["after"]["status"], answers["after"]["budget_left"]) == ("submitted", 1)
    # Once submitted, a third start of the server is refused: the submission is final.
    third = subprocess.run(
        [sys.executable, *args], input="", capture_output=True, text=True, timeout=120
    )
    assert third.returncode != 0 and "final" in third.stderr and "Traceback" not in third.stderr
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert _steps(con) == [("i1", 1, "search", "sparse retrieval"), ("i1", 2, "read", "W1")]
        assert _sessions(con) == [("i1", "submitted", 2, ["openalex:W1"])]  # i2: untouched
    finally:
        con.close()
    token = kept.read_text().strip()
    assert kept.stat().st_mode & 0o777 == 0o600 and len(token) >= 40
    assert len(runs.read_text().splitlines()) == 1  # one final submission, one run line
    logged = errors.read_text() + third.stderr
    assert SENTINEL * 2 not in logged and token not in logged


# --- a killed server ----------------------------------------------------------------------------


def _serve(path: Path, port: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``inspire env serve`` as users run it, in its own process; returns once it answers the
    operator, with the operator key it wrote."""
    key_file = path.with_name(path.name + ".operator-key")  # the documented default
    key_file.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "inspire_build", "env", "serve", "--version", VERSION,
        "--budget", "4", "--port", str(port), "--run-name", "killed", "--warehouse", str(path),
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ)
    deadline = time.monotonic() + 60
    # One client for every poll: httpx.get makes one, and its SSL context, each time (25 ms).
    with httpx.Client(timeout=1) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {log.read_text()}")
            key = key_file.read_text().strip() if key_file.exists() else ""
            try:
                answer = client.get(
                    f"http://127.0.0.1:{port}/instances",
                    headers={"Authorization": f"Bearer {key}"},
                )
                if key and answer.status_code == 200:
                    assert key_file.stat().st_mode & 0o777 == 0o600
                    return process, key
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the server did not answer within 60 s: {log.read_text()}")


def test_a_server_killed_and_restarted_resumes_an_open_session_with_its_spent_budget(
    tmp_path: Path,
) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    log = tmp_path / "serve.log"
    port = free_port()
    first, key = _serve(path, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        operator = {"Authorization": f"Bearer {key}"}
        opened = httpx.post(f"{url}/start", json={"instance_id": "i1"}, headers=operator)
        token = opened.json()["token"]
        for query in ("sparse retrieval", "memory"):
            found = httpx.post(f"{url}/search", json={"token": token, "query": query}).json()
        assert found["budget_left"] == 2
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)

    port = free_port()
    second, new_key = _serve(path, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        assert new_key != key  # a new key each start: the old one opens nothing
        stale = httpx.post(
            f"{url}/start", json={"instance_id": "i1", "token": token}, headers=operator
        )
        assert stale.status_code == 403
        operator = {"Authorization": f"Bearer {new_key}"}
        start = {"instance_id": "i1"}
        assert httpx.post(f"{url}/start", json=start, headers=operator).status_code == 409
        resumed = httpx.post(f"{url}/start", json={**start, "token": token}, headers=operator)
        body = resumed.json()
        assert (body["budget"], body["budget_left"], body["resumed"]) == (4, 2, True)
        more = httpx.post(f"{url}/read", json={"token": token, "paper_id": "W1"}).json()
        assert (more["status"], more["budget_left"]) == ("ok", 1)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=30)

    assert not path.with_name(path.name + ".operator-key").exists()  # removed on a clean stop
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
    text = log.read_text()
    assert token not in text and token.encode() not in path.read_bytes()
    assert text.count(key) == 1 and text.count(new_key) == 1  # each key shown once


def test_the_debugging_mode_warns_and_marks_what_it_touched(tmp_path: Path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    trajectories = tmp_path / "traj.jsonl"
    errors = tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "inspire_build", "env", "mcp", "--instance", "i1", "--version", VERSION,
            "--warehouse", str(path), "--trajectories", str(trajectories),
            "--debug-reveal-scores-to-agent",
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
                submit = {"ranking": ["openalex:W1"]}
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


def test_a_server_stopped_with_sigterm_removes_its_key_file_too(tmp_path: Path) -> None:
    """uvicorn raises SIGTERM again once it has shut down: under Python's default handler
    the process ended there, and the key file (an operator's credential) stayed behind."""
    path = _warehouse(tmp_path / "w.duckdb")
    process, _ = _serve(path, free_port(), tmp_path / "serve.log")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    assert not path.with_name(path.name + ".operator-key").exists()


def test_a_form_body_is_told_to_be_sent_as_json(tmp_path: Path) -> None:
    """`curl -d '{...}'` sends a form: the answer says how to send JSON, not only that the
    body "should be a valid dictionary"."""
    path = _warehouse(tmp_path / "w.duckdb")
    key = server.new_operator_key()
    with warehouse.open_warehouse(path) as con:
        sessions = server.ToolSessions(
            store.load_tasks(con, VERSION), LocalBackend(con), con, budget=3,
            run_name="form", version=VERSION,
        )  # fmt: skip
        with server.running(server.create_app(sessions, key)) as url:
            answer = httpx.post(
                f"{url}/start",
                content=b'{"instance_id": "i1"}',
                headers={"Authorization": f"Bearer {key}",
                         "Content-Type": "application/x-www-form-urlencoded"},
            )  # fmt: skip
    assert answer.status_code == 422
    assert "Content-Type: application/json" in answer.json()["error"]
