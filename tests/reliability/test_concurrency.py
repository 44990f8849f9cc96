"""Concurrency: two builds started at once against one warehouse run one after the other; both
are recorded; the warehouse is intact. A command that does not wait for the lock is refused
with a message and exit code 3, never a traceback."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import duckdb

from .conftest import TARGETS, Suite

WAITING = "; waiting for it"  # "is in use by process PID (its command line); waiting for it"


def test_two_builds_at_once_are_serialised_and_both_recorded(
    suite: Suite, sandbox: str, reference_export: list[str]
) -> None:
    env = suite.env("concurrent", sandbox)
    # This process holds the lock until both builds say they wait, so they surely overlap
    # however slowly either one starts; then the two must take turns.
    holder = duckdb.connect(env["INSPIRE_WAREHOUSE"])
    builds = [
        subprocess.Popen(
            suite.command("build", "--split", "eval", "--limit", TARGETS),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs: list[list[str]] = [[], []]

    def read(index: int) -> None:
        stream = builds[index].stdout
        assert stream is not None
        outputs[index].extend(stream)

    readers = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not all(
        any(WAITING in line for line in lines) for lines in outputs
    ):
        time.sleep(0.2)
    holder.close()
    for reader in readers:
        reader.join(timeout=600)
    for index, build in enumerate(builds):
        build.wait(timeout=60)
        suite.keep_log(f"build-concurrent-{index}", "".join(outputs[index]))
        assert build.returncode == 0, "".join(outputs[index])[-3000:]
    assert any(WAITING in line for lines in outputs for line in lines)
    named = f"is in use by process {os.getpid()} ("  # this test holds it, and is named
    assert any(named in line for lines in outputs for line in lines), outputs

    con = duckdb.connect(env["INSPIRE_WAREHOUSE"], read_only=True)
    runs = con.execute(
        "SELECT status, waited_s, version_id FROM build_runs ORDER BY started_at"
    ).fetchall()
    turns = con.execute(
        "SELECT min(finished_at) <= max(started_at) FROM build_runs"
    ).fetchone()  # the second started only once the first had finished
    intact = con.execute(
        "SELECT (SELECT count(*) FROM split_versions), "
        "(SELECT count(*) - count(DISTINCT (version_id, instance_id)) FROM instances), "
        "(SELECT count(*) - count(DISTINCT brief_id) FROM briefs)"
    ).fetchone()
    con.close()
    assert [status for status, _, _ in runs] == ["completed", "completed"]
    # Both waited (for the holder, and one also for the other). Which waited longer depends
    # on where each stood in its 5 s poll when the lock came free, so only turns proves order.
    assert all(waited > 0 for _, waited, _ in runs)
    assert runs[0][2] == runs[1][2]  # and rewrote the same version
    assert turns == (True,)
    assert intact == (1, 0, 0)
    assert suite.export(env, "concurrent") == reference_export


def test_a_command_that_cannot_wait_is_refused_in_one_line(suite: Suite, sandbox: str) -> None:
    env = suite.env("locked", sandbox)
    holder = duckdb.connect(env["INSPIRE_WAREHOUSE"])  # this process holds the write lock
    try:
        refused = suite.run(env, "warehouse", "status", log="refused-status")
    finally:
        holder.close()
    output = refused.stdout + refused.stderr
    assert refused.returncode == 3, output
    assert f"in use by process {os.getpid()} (" in output and "Traceback" not in output
    assert suite.run(env, "warehouse", "status", log="status-after").returncode == 0
