"""Kills: a build SIGKILLed at three different stages, then rerun, exports the same bytes as an
uninterrupted build, with no duplicate rows; every killed build is recorded as interrupted."""

from __future__ import annotations

import os
import signal
import subprocess

import duckdb

from .conftest import TARGETS, Suite

# Log lines that open each stage: lineage is running, the LLM steps are, the version is written.
STAGES = ("target(s) selected", "lineage done: ", "briefs and grades: ")


def test_kills_at_three_stages_then_a_rerun_give_the_same_export(
    suite: Suite, sandbox: str, reference_export: list[str]
) -> None:
    env = suite.env("killed", sandbox)
    for number, marker in enumerate(STAGES, 1):
        # Its own session, so that the kill takes every process of the build with it.
        process = subprocess.Popen(
            suite.command("build", "--split", "eval", "--limit", TARGETS),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            if marker in line:
                os.killpg(process.pid, signal.SIGKILL)
                break
        process.wait(timeout=120)
        suite.keep_log(f"build-killed-{number}", "".join(seen))
        assert process.returncode == -signal.SIGKILL, f"not killed at {marker!r}:\n{seen[-20:]}"
    suite.build(env, "build-killed-rerun")
    con = duckdb.connect(env["INSPIRE_WAREHOUSE"], read_only=True)
    duplicates = con.execute(
        'SELECT (SELECT count(*) - count(DISTINCT (target_id, ref_key)) FROM "references"), '
        "(SELECT count(*) - count(DISTINCT (version_id, instance_id)) FROM instances), "
        "(SELECT count(*) - count(DISTINCT (target_id, paper_id)) FROM grades), "
        "(SELECT count(*) - count(DISTINCT brief_id) FROM briefs), "
        "(SELECT count(*) - count(DISTINCT request_key) FROM raw_http)"
    ).fetchone()
    runs = con.execute("SELECT status, count(*) FROM build_runs GROUP BY ALL ORDER BY 1").fetchall()
    con.close()
    assert duplicates == (0, 0, 0, 0, 0)
    assert runs == [("completed", 1), ("interrupted", 3)]
    assert suite.export(env, "killed") == reference_export
