"""Failures said once: the build-split flow outside the CLI (as a served deployment runs it)
fails at once on a configuration error, before any request; a full disk is one line and a
failed build. Neither prints a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from inspire_build.sandbox import server, world

# The flow called as a served deployment calls it (flows/serve.py sets up Prefect's console so).
FLOW_ALONE = """import sys
from flows.build_split import build_split
from inspire_build.errors import InspireError
from inspire_build.prefect_runtime import one_line_errors_in_prefect_console

one_line_errors_in_prefect_console()
try:
    build_split(split="eval", limit=3)
except InspireError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(error.exit_code)
"""


def test_a_flow_without_a_reachable_source_fails_at_once_in_one_line(
    tmp_path: Path, prefect_api: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
    env |= {
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"),
        "PREFECT_API_URL": prefect_api,  # as a served deployment has one
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", FLOW_ALONE],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.perf_counter() - started
    output = done.stdout + done.stderr
    print(f"failed in {seconds:.1f} s:\n{output[-1500:]}")
    assert done.returncode == 2  # an InputError
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "needs INSPIRE_OPENALEX_API_KEY" in errors[0]
    assert "Traceback" not in output, output[-3000:]  # Prefect's console repeats none
    assert "Retrying" not in output and not (tmp_path / "w.duckdb").exists()


FULL_DISK = """import duckdb
import inspire_build.splits as splits


def full(*args, **kwargs):
    raise duckdb.IOException('IO Error: Could not write file "w.wal": No space left on device')


splits.write_version = full
"""


def test_a_full_disk_is_one_line_and_a_failed_build(tmp_path: Path, prefect_api: str) -> None:
    """The disk fills as the version is written (a sitecustomize module makes that write fail
    as DuckDB does on ENOSPC, in the real `inspire build` process)."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(FULL_DISK)
    generated = world.generate(world.WorldConfig(seed=5, papers=300))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
        env |= dict(line.split("=", 1) for line in server.env_lines(base, 1000))
        env |= {
            "INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"),
            "PREFECT_API_URL": prefect_api,
            "PYTHONPATH": os.pathsep.join(
                [str(tmp_path / "hook"), os.environ.get("PYTHONPATH", "")]
            ),
        }
        done = subprocess.run(
            [sys.executable, "-m", "inspire_build", "build", "--limit", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "the disk is full" in errors[0], output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    runs = con.execute("SELECT status, reason FROM build_runs").fetchall()
    con.close()
    assert [status for status, _ in runs] == ["failed"] and "disk is full" in runs[0][1]
