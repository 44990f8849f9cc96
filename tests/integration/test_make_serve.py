"""`make serve` on a port of its own: it says "Served" only once the deployments are registered,
and the UI it serves points at that port, not at 4200."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from inspire_build.config import PROJECT_ROOT
from tests.reliability.conftest import free_port


def make(target: str, run: Path, port: int) -> subprocess.CompletedProcess[str]:
    venv = Path(sys.executable).parent.parent
    return subprocess.run(
        ["make", "-s", target, f"VENV={venv}", f"RUN={run}", f"PREFECT_PORT={port}"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")},
        timeout=240,
    )


def test_make_serve_waits_for_the_deployments_and_points_the_ui_at_its_port(
    tmp_path: Path,
) -> None:
    port = free_port()
    try:
        served = make("serve", tmp_path, port)
        assert served.returncode == 0, served.stdout + served.stderr
        assert f"Served on http://127.0.0.1:{port}" in served.stdout
        base = f"http://127.0.0.1:{port}"
        count = httpx.post(f"{base}/api/deployments/count", json={}, timeout=10).json()
        assert count >= 4  # registered before "Served" was said
        ui = httpx.get(f"{base}/ui-settings", timeout=10).json()
        assert ui["api_url"] == f"{base}/api"
    finally:
        make("stop", tmp_path, port)
