"""The inspire CLI, run as a real process: output, exit codes, and one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.core import TyperGroup, TyperOption

from inspire_build import warehouse
from inspire_build.cli import app
from inspire_build.local_server import free_port
from tests.conftest import run_inspire


def inspire(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args, env=env, timeout=120)


ACCEPTANCE_IDS = [
    "https://arxiv.org/abs/2310.00826v2",
    "10.48550/arXiv.2310.00826",
    "W4385245566",
    "https://doi.org/10.1145/3383583.3398584",
    "CorpusId:49313245",
]


def test_ids_normalize_prints_one_typed_id_per_line() -> None:
    result = inspire("ids", "normalize", *ACCEPTANCE_IDS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "arxiv:2310.00826",
        "arxiv:2310.00826",
        "openalex:W4385245566",
        "doi:10.1145/3383583.3398584",
        "corpusid:49313245",
    ]


def test_ids_normalize_json_lines() -> None:
    result = inspire("ids", "normalize", "--json", *ACCEPTANCE_IDS)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["scheme"], r["value"]) for r in records] == [
        ("arxiv", "2310.00826"),
        ("arxiv", "2310.00826"),
        ("openalex", "W4385245566"),
        ("doi", "10.1145/3383583.3398584"),
        ("corpusid", "49313245"),
    ]


def test_junk_id_is_a_one_line_error_with_exit_2() -> None:
    result = inspire("ids", "normalize", "W1", "not-an-id")
    assert result.returncode == 2
    assert result.stdout.splitlines() == ["openalex:W1"]
    assert result.stderr.strip().splitlines() == [
        "error: not a paper identifier: 'not-an-id' (expected an arXiv ID, DOI, OpenAlex W-id, "
        "S2 paperId or CorpusId:N)"
    ]
    assert "Traceback" not in result.stderr


def test_warehouse_init_twice_then_status(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "w.duckdb"
    first = inspire("warehouse", "init", "--warehouse", str(path))
    assert first.returncode == 0, first.stderr
    names = ", ".join(m.name for m in warehouse.load_migrations())
    assert f"applied {len(warehouse.load_migrations())} migration(s): {names}" in first.stdout
    second = inspire("--warehouse", str(path), "warehouse", "init")
    assert second.returncode == 0, second.stderr
    assert "up to date, nothing to apply" in second.stdout
    status = inspire("warehouse", "status", "--warehouse", str(path))
    assert status.returncode == 0, status.stderr
    for name in ("raw_http", "references", "eval_scores", "latest_split_versions"):
        assert name in status.stdout
    count = len(warehouse.load_migrations())
    assert "_migrations" in status.stdout and re.search(rf"│ +{count} │", status.stdout)


def test_warehouse_path_comes_from_the_environment(tmp_path: Path) -> None:
    import os

    path = tmp_path / "from-env.duckdb"
    env = {**os.environ, "INSPIRE_WAREHOUSE": str(path)}
    result = inspire("warehouse", "init", env=env)
    assert result.returncode == 0, result.stderr
    assert path.exists()


def test_status_of_a_missing_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    result = inspire("warehouse", "status", "--warehouse", str(tmp_path / "none.duckdb"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: no warehouse at ")
    assert "Traceback" not in result.stderr


def test_invalid_configuration_is_a_one_line_error(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "INSPIRE_LLM_BACKEND": "nonsense"}
    result = inspire("warehouse", "init", "--warehouse", str(tmp_path / "w.duckdb"), env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("error: invalid configuration: llm_backend")
    assert len(result.stderr.strip().splitlines()) == 1


# typer vendors click: its commands are not click's classes, so walk typer's own.
def _commands(group: TyperGroup, prefix: str = "") -> list[tuple[str, Any]]:
    found = []
    for name, command in group.commands.items():
        found.append((prefix + name, command))
        if isinstance(command, TyperGroup):
            found.extend(_commands(command, prefix + name + " "))
    return found


@pytest.mark.parametrize("name_command", _commands(typer.main.get_group(app)), ids=lambda c: c[0])
def test_every_command_has_help_text(name_command: tuple[str, Any]) -> None:
    name, command = name_command
    assert command.help and command.help.strip(), f"`inspire {name}` has no help text"


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
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.strip() == f"export INSPIRE_OPENALEX_URL=http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/works", params={"per_page": "3"})
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert answer.json()["meta"]["count"] == 60
    finally:
        server.terminate()
        server.wait(timeout=30)

    env = inspire("sandbox", "env", "--port", "9999", "--time-scale", "10")
    assert env.returncode == 0
    assert "export INSPIRE_S2_URL=http://127.0.0.1:9999/graph/v1" in env.stdout.splitlines()
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


def test_version_prints_the_package_version() -> None:
    from inspire_build import __version__

    result = inspire("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"inspire {__version__}\n"


def test_boolean_options_are_plain_flags_in_help() -> None:
    help_text = inspire("eval", "--help", env={**os.environ, "COLUMNS": "200"}).stdout
    json_line = next(line for line in help_text.splitlines() if "--json" in line)
    shown = json_line.split("--json", 1)[1].strip(" │")
    assert shown and not shown.startswith(("<", "[", "BOOL", "TEXT")), json_line
    assert "--no-json" not in help_text


def test_every_boolean_option_is_a_flag_without_a_value() -> None:
    root = typer.main.get_group(app)
    flags = [
        (name, param)
        for name, command in [("", root), *_commands(root)]
        for param in command.params
        if isinstance(param, TyperOption) and param.is_flag
    ]
    assert len(flags) >= 20  # --json and --offline on many commands, --hostile, --version, ...
    for name, param in flags:
        shown = param.display_type_rich(typer.Context(root))
        assert not shown, f"`inspire {name}` shows {param.opts[0]} {shown}"
        assert not param.secondary_opts, f"`inspire {name}` has {param.secondary_opts}"
        assert param.default is False, f"`inspire {name} {param.opts[0]}` defaults to True"


@pytest.mark.parametrize(
    "name", ["", *(n for n, _ in _commands(typer.main.get_group(app)))], ids=lambda n: n or "root"
)
def test_no_help_shows_a_flag_with_a_value(name: str) -> None:
    from typer.testing import CliRunner

    shown = CliRunner().invoke(app, [*name.split(), "--help"], terminal_width=200).output
    assert "--help" in shown and "<bool>" not in shown, shown
