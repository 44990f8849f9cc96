"""Concurrency: two builds started at once against one warehouse run one after the other; both
are recorded; the warehouse is intact; a command that cannot wait is refused clearly."""

from __future__ import annotations

import subprocess
import threading
import time

import duckdb

from .conftest import TARGETS, Suite

WAITING = "is in use by another process; waiting for it"


def test_two_builds_at_once_are_serialised_and_both_recorded(
    suite: Suite, sandbox: str, reference_export: list[str]
) -> None:
    env = suite.env("concurrent", sandbox)
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
    # While one build holds the lock and the other waits, a command that does not wait is
    # refused with a message and exit code 3, never a traceback.
    refused = None
    deadline = time.monotonic() + 300
    while refused is None and time.monotonic() < deadline:
        if any(WAITING in line for lines in outputs for line in lines):
            refused = suite.run(env, "warehouse", "status", log="refused-status")
        time.sleep(0.2)
    for reader in readers:
        reader.join(timeout=600)
    for index, build in enumerate(builds):
        build.wait(timeout=60)
        suite.keep_log(f"build-concurrent-{index}", "".join(outputs[index]))
        assert build.returncode == 0, "".join(outputs[index])[-3000:]
    assert refused is not None, "neither build waited for the other"
    assert refused.returncode == 3
    assert "in use by another process" in refused.stderr + refused.stdout
    assert "Traceback" not in refused.stderr + refused.stdout

    con = duckdb.connect(env["INSPIRE_WAREHOUSE"], read_only=True)
    runs = con.execute(
        "SELECT status, waited_s, version_id FROM build_runs ORDER BY started_at"
    ).fetchall()
    intact = con.execute(
        "SELECT (SELECT count(*) FROM split_versions), "
        "(SELECT count(*) - count(DISTINCT (version_id, instance_id)) FROM instances), "
        "(SELECT count(*) - count(DISTINCT brief_id) FROM briefs)"
    ).fetchone()
    con.close()
    assert [status for status, _, _ in runs] == ["completed", "completed"]
    assert runs[1][1] > runs[0][1]  # the second waited for the first
    assert runs[0][2] == runs[1][2]  # and rewrote the same version
    assert intact == (1, 0, 0)
    assert suite.export(env, "concurrent") == reference_export
