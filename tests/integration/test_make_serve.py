"""`make serve` on a port of its own: it says "Served" only once the deployments are registered,
the UI it serves points at that port, not at 4200, and an in-process `inspire build` run from
the project then runs on that server (its flow run is in the UI; no temporary server starts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from inspire_build.config import PROJECT_ROOT
from inspire_build.local_server import free_port
from inspire_build.sandbox import server, world


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
        served = make("serve", tmp_path / "run", port)
        assert served.returncode == 0, served.stdout + served.stderr
        assert f"Served on http://127.0.0.1:{port}" in served.stdout
        base = f"http://127.0.0.1:{port}"
        count = httpx.post(f"{base}/api/deployments/count", json={}, timeout=10).json()
        assert count >= 4  # registered before "Served" was said
        ui = httpx.get(f"{base}/ui-settings", timeout=10).json()
        assert ui["api_url"] == f"{base}/api"

        generated = world.generate(world.WorldConfig(seed=5, papers=300))
        with server.running(generated, server.SandboxConfig(time_scale=1000)) as sandbox:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
            env |= dict(line.split("=", 1) for line in server.env_lines(sandbox, 1000))
            env["INSPIRE_WAREHOUSE"] = str(tmp_path / "w.duckdb")
            built = subprocess.run(
                [sys.executable, "-m", "inspire_build", "build", "--limit", "2"],
                cwd=tmp_path,  # run/prefect.env is where `make serve` wrote it
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        assert built.returncode == 0, built.stderr[-3000:]
        assert "temporary server" not in built.stdout + built.stderr
        runs = httpx.post(f"{base}/api/flow_runs/filter", json={}, timeout=10).json()
        assert any(r["state_type"] == "COMPLETED" for r in runs), runs
    finally:
        make("stop", tmp_path / "run", port)
