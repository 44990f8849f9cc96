"""`inspire build --runner dask`: lineage's chunks on a 2-worker LocalCluster (every port
pinned, to free ones), against the default runner over the same sandbox world and instance
key: the exports are byte-identical; and the shared limiter spaces the calls of both workers
as one."""

from __future__ import annotations

import collections
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from inspire_build import dask_runner
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.sandbox import server, world
from inspire_build.sandbox.openai_api import OpenAIConfig
from tests.conftest import run_inspire

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")

KEY = bytes(range(32)).hex()
WORKERS = 2
# The sandbox's limits at 1,000 times the real ones, as in the other build tests: the spacing of
# both workers' calls is the limiter test's to prove (below). At 4 times, a build's ~28 S2 and
# ~10 arXiv calls waited ~15 s of wall time; a 429 is retried, and the bytes are still compared.
SCALE = 1000


@pytest.fixture(scope="module")
def generated() -> world.World:
    """The world of both builds' tests, generated once (0.6 CPU-s each time); none changes it."""
    return world.generate(world.WorldConfig(seed=13, papers=1000))


def _free_ports(count: int) -> int:
    """The first of ``count`` consecutive ports that are free now."""
    for _ in range(200):
        first = random.randint(20_000, 60_000)
        try:
            for port in range(first, first + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError("no free run of ports")


def _dask_ports() -> dict[str, str]:
    first = _free_ports(2 + dask_runner.PORTS_PER_WORKER * WORKERS)
    return {
        "INSPIRE_DASK_SCHEDULER_PORT": str(first),
        "INSPIRE_DASK_DASHBOARD_PORT": str(first + 1),
        "INSPIRE_DASK_WORKER_PORT": str(first + 2),
        "INSPIRE_DASK_WORKERS": str(WORKERS),
    }


def _build_and_export(
    tmp_path: Path,
    name: str,
    base: str,
    prefect_api: str,
    *extra: str,
    llm: dict[str, str] | None = None,
    targets: int = 24,
) -> tuple[dict[str, bytes], collections.Counter[str]]:
    env = {
        **os.environ,
        "INSPIRE_WAREHOUSE": str(tmp_path / name / "w.duckdb"),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_URL": prefect_api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        **dict(line.split("=", 1) for line in server.env_lines(base, time_scale=SCALE)),
        "INSPIRE_LLM_BACKEND": "rules",
        "INSPIRE_INSTANCE_KEY": KEY,
        "INSPIRE_CHUNK_SIZE": "6",
        **_dask_ports(),
        **(llm or {}),
    }
    before = httpx.get(base + "/_sandbox/stats").json()["counts"]
    for command in (
        ("build", "--split", "eval", "--limit", str(targets), *extra),
        ("export", "--force", "--split", "eval", "--out", str(tmp_path / name / "export")),
    ):
        result = run_inspire(*command, env=env, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    after = httpx.get(base + "/_sandbox/stats").json()["counts"]
    calls = collections.Counter({k: v - before.get(k, 0) for k, v in after.items()})
    folder = tmp_path / name / "export"
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return files, calls


def test_a_dask_build_exports_the_bytes_of_a_local_one(
    tmp_path: Path, prefect_api: str, generated: world.World
) -> None:
    with server.running(generated, server.SandboxConfig(time_scale=SCALE)) as base:
        local, local_calls = _build_and_export(tmp_path, "local", base, prefect_api)
        dask, dask_calls = _build_and_export(
            tmp_path, "dask", base, prefect_api, "--runner", "dask"
        )
    assert sorted(dask) == sorted(local) and len(local) >= 4
    for name in local:
        assert dask[name] == local[name], name
    s2 = sum(n for k, n in dask_calls.items() if k.startswith("s2 "))
    # A 429 is retried and loses nothing (the bytes above); on a loaded machine a request can
    # leave a few ms after its slot, so the spacing itself is the limiter test's to prove.
    assert s2 > 0
    assert not (tmp_path / "dask" / "w.duckdb.reading-copy").exists()
    assert not (tmp_path / "dask" / "w.duckdb.steps-copy").exists()


def test_llm_steps_on_dask_workers_keep_the_calls_in_flight_and_the_bytes(
    tmp_path: Path, prefect_api: str, generated: world.World
) -> None:
    """The openai backend against the sandbox's truthful model: the LLM steps run on the
    workers, at most INSPIRE_LLM_CONCURRENCY calls in flight over both (a Dask semaphore), and
    the export is the local build's, byte for byte."""
    config = server.SandboxConfig(time_scale=SCALE, openai=OpenAIConfig(seed=2, latency_s=0.05))
    llm = {"INSPIRE_LLM_BACKEND": "openai", "INSPIRE_LLM_CONCURRENCY": "3"}
    with server.running(generated, config) as base:
        local, _ = _build_and_export(tmp_path, "local", base, prefect_api, llm=llm, targets=12)
        dask, dask_calls = _build_and_export(
            tmp_path, "dask", base, prefect_api, "--runner", "dask", llm=llm, targets=12
        )
        most = httpx.get(base + "/v1/_sandbox/calls").json()["most_in_flight"]
    assert sorted(dask) == sorted(local) and len(local) >= 4
    for name in local:
        assert dask[name] == local[name], name
    assert dask_calls["openai chat 200"] > 0  # the dask build asked the model
    assert 1 < most <= 3
    ran = httpx.post(
        prefect_api + "/task_runs/filter",
        json={"task_runs": {"name": {"like_": "brief-audit-grade"}}, "limit": 200},
    ).json()
    inputs = [set(run["task_inputs"]) for run in ran]
    assert any("started" in names for names in inputs)  # the local build's, in its process
    assert any("first_rank" in names for names in inputs)  # the dask build's, on workers


def test_the_shared_limiter_spaces_two_workers_calls_as_one(tmp_path: Path) -> None:
    """Each worker takes slots as fast as it can; the slots of both, merged, are still
    ``interval`` apart (a limiter per process would give each worker its own spacing). The slots
    the limiter handed out are compared, not when each thread woke: on a loaded machine a
    thread wakes late, and the gap after it looks short."""
    settings = Settings(
        **{k.removeprefix("INSPIRE_").lower(): int(v) for k, v in _dask_ports().items()}
    )
    interval, each = 0.05, 12

    def take(name: str) -> list[float]:
        limiter = dask_runner.SharedRate(name, interval, time.sleep)
        taken = []
        for _ in range(each):
            taken.append(limiter.acquire())
        return taken

    scheduler, workers = dask_runner.cluster_spec(settings)
    with (
        distributed.SpecCluster(scheduler=scheduler, workers=workers, silence_logs=40) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert cluster.scheduler_address.endswith(f":{settings.dask_scheduler_port}")
        futures = [client.submit(take, "test", pure=False, workers=[w]) for w in workers]
        times = sorted(t for future in futures for t in future.result())
        hosts = {info["id"] for info in client.scheduler_info()["workers"].values()}
    assert hosts == set(workers) and len(times) == WORKERS * each
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert min(gaps) >= interval * 0.9, gaps
    assert times[-1] - times[0] >= interval * (len(times) - 1) * 0.9


def test_runner_dask_without_the_extra_is_refused_in_one_line() -> None:
    command = [
        sys.executable,
        "-c",
        "import sys; sys.modules['prefect_dask'] = None\n"
        "from inspire_build import dask_runner\n"
        "try:\n    dask_runner.require()\nexcept Exception as e:\n    print(e)",
    ]
    shown = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "runner 'dask' needs the dask extra: pip install 'inspire-build[dask]'"


def test_a_worker_that_cannot_see_the_reading_copy_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="shared volume"):
        dask_runner.steps_records(Settings(), tmp_path / "absent.steps-copy", ["W1"], 0, 2)


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("tcp://93.184.216.34:8786", True),  # a public network, in the clear
        ("tcp://dask.example.org:8786", True),  # a name that resolves to a public address
        ("tls://93.184.216.34:8786", False),
        ("tcp://10.0.0.5:8786", False),
        ("tcp://127.0.0.1:8786", False),
        ("tcp://scheduler:8786", False),  # a name on a private network (a compose service)
        ("tcp://localhost:8786", False),
    ],
)
def test_a_scheduler_reached_in_the_clear_over_a_public_network_is_refused(
    address: str, refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = {"dask.example.org": "93.184.216.34", "scheduler": "10.0.0.7", "localhost": "::1"}

    def resolve(host: str, *_: object) -> list[tuple[object, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (names[host], 0))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    if refused:
        with pytest.raises(InputError, match="tls://"):
            dask_runner._refuse_in_clear(address)
    else:
        dask_runner._refuse_in_clear(address)
