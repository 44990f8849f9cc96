"""The product as users drive it: a real Prefect server (the session's), the served deployments, and
`prefect deployment run build-split/eval`. (Kills, faults and concurrency are in
tests/reliability/.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from inspire_build.sandbox import server, world

VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def sandbox_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    generated = world.generate(world.WorldConfig(seed=17, papers=1000))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        lines = server.env_lines(base, time_scale=1000)
        env = {
            **os.environ,
            **dict(line.split("=", 1) for line in lines),
            "INSPIRE_LLM_BACKEND": "rules",
            # a small world has a handful of papers per cutoff window, so the window attack
            # wins there (tests/unit/test_exports.py tests its verdict); this tests the flows
            "INSPIRE_WINDOW_ATTACK_MAX_TOP1": "1.0",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            # The served runner looks for scheduled runs every 10 s by default; each run of
            # this test would wait up to that long with the CPU idle.
            "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        }
        yield env


def run(env: dict[str, str], *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def test_prefect_deployment_run_builds_a_version(
    sandbox_env: dict[str, str], tmp_path: Path, prefect_api: str
) -> None:
    # The session's Prefect server, as `make serve` would run one; this test's flow runs are
    # told apart from other tests' by the IDs `prefect deployment run` prints.
    env = {
        **sandbox_env,
        "INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"),
        "INSPIRE_SPLITS__EVAL__LIMIT": "16",
        "INSPIRE_CHUNK_SIZE": "4",  # lineage in 4 chunks, so the LLM steps can run beside it
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_URL": prefect_api,
    }
    serving = subprocess.Popen(
        [sys.executable, "-m", "flows.serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Until serve has registered the deployment: asked of the API, which answers in
        # milliseconds, where each `prefect` command spends seconds of CPU importing Prefect.
        # One client for every poll: httpx.get makes one, and its SSL context, each time.
        with httpx.Client(timeout=10) as client:
            for _ in range(360):  # up to 3 minutes
                asked = client.get(f"{prefect_api}/deployments/name/build-split/eval")
                if asked.status_code == 200 or serving.poll() is not None:
                    break
                time.sleep(0.5)
        ran = run(
            env, str(VENV_BIN / "prefect"), "deployment", "run", "build-split/eval", "--watch"
        )
        assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
        assert "Completed" in ran.stdout + ran.stderr
        artifacts = _artifacts(prefect_api, _flow_run_id(ran))
        progress = [a["data"] for a in artifacts if a["key"] == "eval-build-progress"]
        assert progress and progress[0] == 100.0  # the build's progress, as the UI shows it
        published = [a["data"] for a in artifacts if a["key"] == "eval-version"]
        assert published and "instances" in published[0] and "# Dataset card: eval" in published[0]
        tasks = httpx.post(
            f"{prefect_api}/task_runs/filter",
            json={"flow_runs": {"id": {"any_": [_flow_run_id(ran)]}}},
            timeout=10,
        ).json()
        assert any(t["name"].startswith("brief-audit-grade targets 1-") for t in tasks)
        # The Prefect graph: the first chunk's LLM steps start before the last chunk's lineage
        # has ended.
        runs = {t["name"]: (t["start_time"], t["end_time"]) for t in tasks}
        lineage = sorted(v for k, v in runs.items() if k.startswith("resolve-lineage targets"))
        steps = sorted(v for k, v in runs.items() if k.startswith("brief-audit-grade targets"))
        assert len(lineage) == 4 and steps, sorted(runs)
        assert steps[0][0] < lineage[-1][1], (steps, lineage)
        # A brief that names its target: the served audit's flow run is Failed, with its report.
        con = duckdb.connect(str(tmp_path / "w.duckdb"))
        con.execute(
            "UPDATE instances SET brief = brief || ' ' || (SELECT title FROM targets "
            "WHERE paper_id = instances.target_id) WHERE instance_id = "
            "(SELECT min(instance_id) FROM instances)"
        )
        con.close()
        failed = run(
            env, str(VENV_BIN / "prefect"), "deployment", "run", "audit-split/default", "--watch"
        )
        assert "Failed" in failed.stdout + failed.stderr, (failed.stdout + failed.stderr)[-3000:]
        audits = _artifacts(prefect_api, _flow_run_id(failed))
        assert any(a["key"] == "eval-audit" and "FAIL" in a["data"].upper() for a in audits)
    finally:
        serving.terminate()
        serving.wait(timeout=60)
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    found = con.execute(
        "SELECT (SELECT count(*) FROM split_versions WHERE split = 'eval'), "
        "(SELECT count(*) FROM eval_latest), (SELECT count(*) FROM grades), "
        "(SELECT count(*) FROM audit_findings)"
    ).fetchone()
    con.close()
    assert found is not None and found[0] == 1 and found[1] >= 6 and found[2] > 0 and found[3] > 0
    # Nothing serves the deployments now; the CLI's audit runs in-process on the same server.
    audited = run(env, sys.executable, "-m", "inspire_build", "audit", "eval")
    assert audited.returncode == 1, audited.stderr[-2000:]  # the planted leak
    assert "Traceback" not in audited.stderr


def _flow_run_id(ran: subprocess.CompletedProcess[str]) -> str:
    """The ID `prefect deployment run` printed for the flow run it created."""
    found = re.search(r"UUID: ([0-9a-f-]{36})", ran.stdout + ran.stderr)
    assert found, (ran.stdout + ran.stderr)[-2000:]
    return found.group(1)


def _artifacts(api: str, flow_run_id: str) -> list[dict[str, Any]]:
    query = {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}}
    answer: list[dict[str, Any]] = httpx.post(
        f"{api}/artifacts/filter", json=query, timeout=10
    ).json()
    return answer
