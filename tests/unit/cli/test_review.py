"""`inspire review serve`: refused with an unknown version or a bad default curator, in one
line; served on 127.0.0.1 as a real process, where a page asks the session's name (the default
offered) and a POST without the token does not record."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from inspire_build import warehouse
from inspire_build.cli import app
from inspire_build.errors import InputError
from inspire_build.local_server import free_port
from tests.unit.review.conftest import IA, VERSION, plant


@pytest.fixture
def planted_file(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    with warehouse.open_warehouse(path) as con:
        plant(con)
    return path


def test_serve_refuses_an_unknown_version_or_a_bad_default_curator(planted_file: Path) -> None:
    runner = CliRunner()
    where = ["--port", "0", "--warehouse", str(planted_file)]
    bad = runner.invoke(app, ["review", "serve", "--curator", "ada\x1b[2J", *where])
    assert isinstance(bad.exception, InputError)  # `inspire` exits 2 with its message
    assert "the default curator: a curator's name may not hold a control" in str(bad.exception)
    named = ["--curator", "ada", "--warehouse", str(planted_file)]
    unknown = runner.invoke(app, ["review", "serve", "--version", "eval-x", *named])
    assert isinstance(unknown.exception, InputError) and "unknown version 'eval-x'" in str(
        unknown.exception
    )


def test_serve_answers_on_loopback_until_interrupted(planted_file: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "inspire_build", "review", "serve", "--port", str(port),
               "--warehouse", str(planted_file)]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "INSPIRE_CURATOR": "ada"}
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert line.startswith(f"reviewing {VERSION} (2 instances) on http://127.0.0.1:")
        assert line.rstrip().endswith(
            "each browser session gives its curator's name (offered: ada)"
        )
        base = f"http://127.0.0.1:{port}"
        with httpx.Client() as client:  # one SSL context for every poll, not one each
            for _ in range(100):
                try:
                    page = client.get(base + "/")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
        assert page.status_code == 200 and 'id="curator-name" value="ada"' in page.text
        assert httpx.post(f"{base}/i/{IA}/accept", data={"reason": ""}).status_code == 403
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    con = warehouse.connect(planted_file, read_only=True)
    assert con.execute("SELECT count(*) FROM reviews").fetchone() == (0,)
    con.close()


def test_sample_prints_what_it_drew_and_how_to_review_it(planted_file: Path) -> None:
    runner = CliRunner()
    where = ["--warehouse", str(planted_file)]
    drawn = runner.invoke(app, ["review", "sample", "--n", "5", "--seed", "2", *where])
    assert drawn.exit_code == 0, drawn.output
    assert "asked for 5, but eval-planted has 2 instances: all of them are sampled" in drawn.output
    assert f"sampled 2 of 2 instances of {VERSION} (seed 2)" in drawn.output
    assert "  2025-06 T2: 1" in drawn.output and "  2025-06 T3: 1" in drawn.output
    assert f"  instance {IA} (2025-06 T2)" in drawn.output
    assert f"inspire review serve --split eval --version {VERSION}, and open" in drawn.output
    none = runner.invoke(app, ["review", "sample", "--n", "0", *where])
    assert isinstance(none.exception, InputError) and "--n must be at least 1" in str(
        none.exception
    )
    other = runner.invoke(app, ["review", "sample", "--n", "1", "--version", "eval-x", *where])
    assert isinstance(other.exception, InputError) and "unknown version 'eval-x'" in str(
        other.exception
    )
