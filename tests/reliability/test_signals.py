"""Ctrl-C and SIGTERM cancel a build within seconds: exit 130 with one line and no traceback,
its `build_runs` row says cancelled, its Prefect flow run ends Cancelled, and no version is
written. Ctrl-C goes to the whole process group, as a terminal sends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from inspire_build.sandbox import server, world

WORLD = world.generate(world.WorldConfig(seed=5, papers=600))


def build_until(
    marker: str, tmp_path: Path, base: str, api: str | None = None
) -> tuple[subprocess.Popen[str], list[str]]:
    """`inspire build` in a session of its own, read until a line holds ``marker``; reporting
    to the Prefect server at ``api``, else to a temporary server of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "INSPIRE_"))}
    env |= dict(line.split("=", 1) for line in server.env_lines(base, 20))
    env |= {"INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"), "PREFECT_HOME": str(tmp_path)}
    if api:
        env["PREFECT_API_URL"] = api
    build = subprocess.Popen(
        [sys.executable, "-m", "inspire_build", "build", "--limit", "30"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    assert build.stdout is not None
    for line in build.stdout:
        lines.append(line)
        if marker in line:
            return build, lines
    raise AssertionError("the build ended before " + marker + ":\n" + "".join(lines[-30:]))


@pytest.mark.parametrize(
    ("name", "marker"),
    [("SIGINT", "lineage: S2 reference lists"), ("SIGTERM", "lineage done")],
)
def test_a_signal_cancels_a_build_within_seconds(
    tmp_path: Path, name: str, marker: str, prefect_api: str
) -> None:
    number = getattr(signal, name)
    # Ctrl-C goes to the whole process group: the build's temporary server, in a session of its
    # own, must survive it to hear the cancellation. SIGTERM reports to the session's server.
    api = prefect_api if name == "SIGTERM" else None
    with server.running(WORLD, server.SandboxConfig(time_scale=20)) as base:
        build, lines = build_until(marker, tmp_path, base, api)
        sent = time.perf_counter()
        if number == signal.SIGINT:
            os.killpg(build.pid, number)  # as Ctrl-C: the build and everything it started
        else:
            build.send_signal(number)
        assert build.stdout is not None
        reader = threading.Thread(target=lambda: lines.extend(build.stdout or []))
        reader.start()
        build.wait(timeout=120)
        reader.join(timeout=10)
        seconds = time.perf_counter() - sent
    output = "".join(lines)
    print(f"{name}: exit {build.returncode} after {seconds:.1f} s\n{output[-1200:]}")
    assert build.returncode == 130 and seconds < 15, output[-3000:]
    assert "Traceback" not in output
    assert f"error: cancelled by {name}" in output.splitlines()
    assert f"Finished in state Cancelled('cancelled by {name}')" in output
    # Prefect links its flow run in the UI of a server that stays (the session's), never in
    # that of the build's temporary server, gone when the build ends.
    links = [line for line in output.splitlines() if "View at " in line]
    if api is None:
        assert links == []
    else:
        assert [f"{api.removesuffix('/api')}/runs/flow-run/" in line for line in links] == [True]
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    runs = con.execute("SELECT status FROM build_runs").fetchall()
    versions = con.execute("SELECT count(*) FROM split_versions").fetchone()
    con.close()
    assert runs == [("cancelled",)] and versions == (0,)


def test_ctrl_c_while_waiting_for_the_lock_leaves_without_taking_it(
    tmp_path: Path, prefect_api: str
) -> None:
    path = tmp_path / "w.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}); "
         "print('held', flush=True); time.sleep(300)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with server.running(WORLD, server.SandboxConfig(time_scale=20)) as base:
            waiting = f"in use by process {holder.pid} (python"  # named, with its command
            build, lines = build_until(waiting, tmp_path, base, prefect_api)
            sent = time.perf_counter()
            os.killpg(build.pid, signal.SIGINT)
            output, _ = build.communicate(timeout=120)
            seconds = time.perf_counter() - sent
    finally:
        holder.kill()
        holder.wait()
    output = "".join(lines) + output
    assert build.returncode == 130 and seconds < 15, output[-3000:]
    assert "Traceback" not in output and "error: cancelled by SIGINT" in output.splitlines()
    con = duckdb.connect(str(path), read_only=True)
    tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert "split_versions" not in tables  # it never took the lock, so it wrote nothing
