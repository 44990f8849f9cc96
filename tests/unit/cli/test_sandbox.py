"""`inspire sandbox world`, `serve` and `env`, run as a real process: a seeded world written
twice alike, a served world that answers, and a busy port as one error before any output."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from inspire_build.env import transcript
from inspire_build.local_server import free_port
from tests.conftest import run_inspire


def inspire(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args, env=env, timeout=120)


def test_sandbox_world_serve_and_env(tmp_path: Path) -> None:
    import time

    import httpx

    world_dir = tmp_path / "world"
    made = inspire("sandbox", "world", "--seed", "5", "--papers", "60", "--out", str(world_dir))
    assert made.returncode == 0, made.stderr
    assert "60 records" in made.stdout
    again = inspire(
        "sandbox", "world", "--seed", "5", "--papers", "60", "--out", str(tmp_path / "b")
    )
    assert again.returncode == 0
    for name in ("world.json", "records.jsonl", "ground_truth.jsonl"):
        assert (world_dir / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inspire_build",
            "sandbox",
            "serve",
            "--world",
            str(world_dir),
            "--port",
            str(port),
            "--time-scale",
            "10",
            "--llm-agent-refusal",
            "1",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.strip() == f"export INSPIRE_OPENALEX_URL=http://127.0.0.1:{port}"
        with httpx.Client() as client:  # one SSL context for every poll, not one each
            for _ in range(200):
                try:
                    answer = client.get(f"http://127.0.0.1:{port}/works", params={"per_page": "3"})
                    break
                except httpx.ConnectError:
                    time.sleep(0.1)
        assert answer.json()["meta"]["count"] == 60
        # --llm-agent-refusal 1 reaches the model: an agent's turn is refused in words
        task = transcript.opening(dt.date(2025, 1, 1), 5, "Find work on graph search.")
        body = {"model": "gpt-4o-mini", "messages": task, "tools": transcript.TOOLS}
        said = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=30)
        message = said.json()["choices"][0]["message"]
        assert message["content"] and not message.get("tool_calls"), message
    finally:
        server.terminate()
        server.wait(timeout=30)

    env = inspire("sandbox", "env", "--port", "9999", "--time-scale", "10")
    assert env.returncode == 0
    assert "export INSPIRE_S2_URL=http://127.0.0.1:9999/graph/v1" in env.stdout.splitlines()
    # a build in that shell asks the sandbox's model, not the rules backend
    assert "export INSPIRE_LLM_BACKEND=openai" in env.stdout.splitlines()
    missing = inspire("sandbox", "serve", "--world", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "holds no world" in missing.stderr


@pytest.mark.parametrize("listening", [False, True], ids=["bound", "listening"])
def test_sandbox_serve_on_a_busy_port_is_one_error_before_any_output(
    tmp_path: Path, listening: bool
) -> None:
    import socket

    from inspire_build.sandbox import world as W

    W.write(W.generate(W.WorldConfig(seed=5, papers=60)), tmp_path / "world")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        if listening:
            busy.listen()
        port = busy.getsockname()[1]
        result = inspire(
            "sandbox", "serve", "--world", str(tmp_path / "world"), "--port", str(port)
        )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""  # no export lines for a sandbox that never started
    assert result.stderr.splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use; choose another with --port"
    ]


def test_env_prices_the_sandbox_model_in_a_line_a_shell_reads_back() -> None:
    printed = run_inspire("sandbox", "env", "--port", "1234")
    assert printed.returncode == 0, printed.stderr
    read = subprocess.run(
        ["bash", "-c", 'eval "$LINES"; printf %s "$INSPIRE_LLM_PRICES"'],
        env={"LINES": printed.stdout, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert read.stdout == '{"sandbox-gpt": [0.15, 0.6]}'
