"""A build that cannot finish fails with one line and an exit code, never a traceback, and its
failure is recorded in ``build_runs`` with the reason."""

from __future__ import annotations

import duckdb

from inspire_build.local_server import free_port

from .conftest import Suite


def test_an_unreachable_source_fails_in_one_line_and_is_recorded(suite: Suite) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = suite.env("unreachable", closed, INSPIRE_HTTP_MAX_RETRIES="1")
    result = suite.run(env, "build", "--split", "eval", "--limit", "3", log="build-unreachable")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "gave up on GET" in errors[0]
    con = duckdb.connect(env["INSPIRE_WAREHOUSE"], read_only=True)
    runs = con.execute("SELECT status, reason FROM build_runs").fetchall()
    con.close()
    assert len(runs) == 1 and runs[0][0] == "failed"
    assert "RetriesExhausted" in runs[0][1] and "gave up on GET" in runs[0][1]
