"""Shared fixtures. Unit tests run on in-memory DuckDB and never touch the network."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import duckdb
import httpx
import pytest

from inspire_build import gc_policy, warehouse
from inspire_build.local_server import free_port

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# --- real recordings ----------------------------------------------------------------------------
# The responses real APIs returned stay outside the repository. RECORDINGS_VARIABLE names the
# folder that holds them in its real/ subfolder (`make record-fixtures` fills one); unset, it is
# the folder that CI lays beside the clone, shared/fixtures next to the repository's own folder.
RECORDINGS_VARIABLE = "INSPIRE_SHARED_FIXTURES"
SHARED_FIXTURES = Path(
    os.environ.get(RECORDINGS_VARIABLE) or PROJECT_ROOT.parent / "shared" / "fixtures"
)
REAL = SHARED_FIXTURES / "real"
# What the recorder writes (the APIs' answers) and what only a data provider publishes.
API_RECORDINGS = ("arxiv", "openalex", "semanticscholar")
S2_SAMPLES = "s2-datasets"


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def missing_recordings(*folders: str, real: Path = REAL) -> list[Path]:
    """The folders of ``real`` that are not there: ``real`` itself when it is missing."""
    if not real.is_dir():
        return [real]
    return [real / name for name in folders if not (real / name).is_dir()]


def require_recordings(*folders: str) -> Path:
    """REAL, when it holds ``folders``. Otherwise the test skips with one line naming what is
    missing and the variable to set; under CI=true it fails instead, so that a CI machine
    without the recordings cannot pass by skipping the tests that replay them."""
    missing = missing_recordings(*folders)
    if not missing:
        return REAL
    named = ", ".join(map(str, missing))
    if under_ci():
        pytest.fail(
            f"real recordings missing: {named}; under CI=true the tests that replay them fail, "
            f"not skip ({RECORDINGS_VARIABLE} names the folder that holds real/)",
            pytrace=False,
        )
    pytest.skip(
        f"real recordings missing: {named} (set {RECORDINGS_VARIABLE} to the folder that holds "
        "real/, or fill one with `make record-fixtures`)"
    )


@pytest.fixture(scope="session")
def real_recordings() -> Path:
    """REAL with the APIs' recorded answers (arXiv, OpenAlex, S2), else skip (fail under CI)."""
    return require_recordings(*API_RECORDINGS)


@pytest.fixture(scope="session")
def s2_samples() -> Path:
    """REAL's S2 Datasets samples (bulk files), else skip (fail under CI)."""
    return require_recordings(S2_SAMPLES) / S2_SAMPLES


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


def read_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """The rows of one query of the warehouse file at ``path``, opened read-only."""
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()


_TEMPLATE: list[Path] = []  # the file migrated_template() made in this process


def migrated_template() -> Path:
    """A warehouse file with every migration applied, made once per test process (in the run's
    shared folder, which the end of the run removes). Migrating a file takes 0.2 CPU-s and its
    writes (0.5 where it is the process's first bound parameter, which imports pandas); a copy
    of this one 0.04 CPU-s."""
    if not _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="migrated-", dir=os.environ.get(_SHARED)))
        with warehouse.open_warehouse(folder / "warehouse.duckdb"):
            pass
        _TEMPLATE.append(folder / "warehouse.duckdb")
    return _TEMPLATE[0]


def new_warehouse(path: Path) -> duckdb.DuckDBPyConnection:
    """A new warehouse file at ``path``, every migration applied (a copy of
    :func:`migrated_template`; ``migrate`` still runs and finds nothing to do), connected. Its
    instance key is made on first use, as in any new warehouse."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(migrated_template(), path)
    connection = warehouse.connect(path)
    assert warehouse.migrate(connection) == []
    return connection


@pytest.fixture(scope="session")
def _migrated() -> Path:
    """A warehouse file with every migration applied, made once per test process."""
    return migrated_template()


@pytest.fixture
def con(_migrated: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A migrated in-memory warehouse: a copy of the one migrated once (DuckDB copies its
    tables, views, constraints and comments) in 0.04 CPU-s, where migrating takes 0.2, most of
    it 0025_comments' 424 COMMENT statements. ``migrate`` still runs: it finds nothing to do."""
    connection = warehouse.connect(":memory:")
    # the path is pytest's own temporary folder: an ATTACH takes no bound parameter
    connection.execute(f"ATTACH '{_migrated}' AS migrated (READ_ONLY)")
    connection.execute("COPY FROM DATABASE migrated TO memory")
    connection.execute("DETACH migrated")
    assert warehouse.migrate(connection) == []
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


# One Prefect server for the whole run, shared by pytest-xdist's workers: a server takes about
# 19 CPU-seconds to start, and the suite runs on two cores. The first worker to collect a test
# that needs it starts it; the process that ran pytest_configure first (xdist's controller, or
# pytest alone) stops it at the end, so a crashed worker leaves nothing behind.
_SHARED = "PYTEST_INSPIRE_SHARED_DIR"  # not INSPIRE_*, which each test clears


def pytest_configure(config: pytest.Config) -> None:
    # The workers build, serve the sandbox and export in-process: they collect garbage as the
    # `inspire` command does (gc_policy), not at Python's default that would cost them a tenth.
    gc_policy.collect_less()
    if not hasattr(config, "workerinput"):  # the controller; its workers inherit the folder
        os.environ[_SHARED] = tempfile.mkdtemp(prefix="inspire-tests-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    shared = Path(os.environ.pop(_SHARED, ""))
    record = shared / "prefect-server.json"
    if record.is_file():
        pid = json.loads(record.read_text())["pid"]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    shutil.rmtree(shared, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the run's Prefect server as soon as the tests are known to need it: it boots (~19
    CPU-seconds, longer in wall time) while the first tests run, rather than while the first
    test that needs it waits with a core idle."""
    if config.option.collectonly:
        return
    if any("prefect_api" in getattr(item, "fixturenames", ()) for item in items):
        _prefect_server()


def _prefect_server() -> dict[str, object]:
    """The run's Prefect server, started by the first process that asks (not yet answering)."""
    shared = Path(os.environ[_SHARED])
    record = shared / "prefect-server.json"
    with (shared / "prefect-server.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker starts it; the other waits, then reads
        if not record.exists():
            record.write_text(json.dumps(_start_prefect_server(shared / "prefect")))
        started: dict[str, object] = json.loads(record.read_text())
    return started


@pytest.fixture(scope="session")
def prefect_api() -> str:
    """The run's real `prefect server start`, for its in-process builds and audits (their
    PREFECT_API_URL), so that none waits ~19 s for a temporary server of its own."""
    api = str(_prefect_server()["api"])
    # One client for every poll: httpx.get makes a client, and its SSL context, each time
    # (20-40 ms of CPU, some 5 CPU-s while a worker waited for the server to boot).
    with httpx.Client(timeout=2) as client:
        for _ in range(360):
            try:
                if client.get(api + "/health").status_code == 200:
                    return api
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
    raise RuntimeError(f"the Prefect server at {api} did not answer within 180 s")


# What no test asks of the run's server: its UI (`make serve`'s own server shows it) and the
# services behind schedules, automations, late or paused runs and workers. Off, the server
# spends 15-25% less CPU on each build and audit (measured: 3.2 against 3.7-4.3 CPU-s for two
# builds, an audit and an export). Task runs, logs, artifacts and events are still recorded.
_IDLE_SERVICES = ("SCHEDULER", "TRIGGERS", "LATE_RUNS", "FOREMAN", "PAUSE_EXPIRATIONS",
                  "REPOSSESSOR", "CANCELLATION_CLEANUP", "CLEANUP_RECONCILER")  # fmt: skip


def _start_prefect_server(home: Path) -> dict[str, object]:
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env |= {f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false" for name in _IDLE_SERVICES}
    env["PREFECT_UI_ENABLED"] = "false"
    command = [Path(sys.executable).parent / "prefect", "server", "start", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*map(str, command), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the worker that started it; stopped by its group
    )
    return {"api": f"http://127.0.0.1:{port}/api", "pid": process.pid}
