"""Shared fixtures. Unit tests run on in-memory DuckDB and never touch the network."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import duckdb
import httpx
import pytest

from inspire_build import warehouse
from inspire_build.local_server import free_port

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# ../shared/fixtures, or where INSPIRE_SHARED_FIXTURES says (the test that a missing folder
# fails the conformance tests under CI=true points it at nothing).
SHARED_FIXTURES = Path(
    os.environ.get("INSPIRE_SHARED_FIXTURES") or PROJECT_ROOT.parent / "shared" / "fixtures"
)


def run_inspire(
    *args: str | Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m inspire_build ARGS``, as a user runs it, its output captured as text.
    ``env`` is the whole environment (None: this process's)."""
    return subprocess.run(
        [sys.executable, "-m", "inspire_build", *map(str, args)],
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """A migrated in-memory warehouse."""
    connection = warehouse.connect(":memory:")
    warehouse.migrate(connection)
    yield connection
    connection.close()


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never see the developer's INSPIRE_* variables or keys, nor settings another test
    read: the process-wide settings are read afresh in each test that asks for them."""
    import os

    from inspire_build.config import get_settings

    for name in list(os.environ):
        if name.startswith("INSPIRE_"):
            monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `prefect server start` for the session's in-process builds and audits (their
    PREFECT_API_URL), so that none waits ~19 s for a temporary server of its own."""
    home = tmp_path_factory.mktemp("prefect")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "prefect"),
            "server",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(360):
            try:
                if httpx.get(api + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                raise RuntimeError("prefect server start exited")
            time.sleep(0.5)
        else:
            raise RuntimeError("the Prefect server did not answer within 180 s")
        yield api
    finally:
        process.terminate()
        process.wait(timeout=60)
