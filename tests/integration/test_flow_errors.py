"""The build-split flow outside the CLI (as a served deployment runs it): a configuration error
fails the flow run at once, before any request, in one line and with no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def test_a_flow_without_a_reachable_source_fails_at_once_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
    env |= {
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flows.build_split", "eval", "3"],
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
