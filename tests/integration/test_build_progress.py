"""`inspire build` on a terminal draws a progress bar per stage, each ending full, with
Prefect's log lines above the bars; off a terminal it draws none (the log lines tell the
same)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from inspire_build.sandbox import server, world

STAGES = ("select targets", "lineage: S2 reference lists", "briefs, audits, grades",
          "write the version")  # fmt: skip
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def build(tmp_path: Path, base: str, prefect_api: str, *, terminal: bool) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
    env |= dict(line.split("=", 1) for line in server.env_lines(base, 1000))
    env |= {"INSPIRE_WAREHOUSE": str(tmp_path / f"{terminal}.duckdb"),
            "PREFECT_API_URL": prefect_api, "COLUMNS": "120", "TERM": "xterm"}  # fmt: skip
    command = [sys.executable, "-m", "inspire_build", "build", "--limit", "4"]
    if not terminal:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout + done.stderr
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, env=env, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the build closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=300) == 0, b"".join(chunks)[-3000:]
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def test_a_bar_per_stage_on_a_terminal_and_none_elsewhere(tmp_path: Path, prefect_api: str) -> None:
    generated = world.generate(world.WorldConfig(seed=5, papers=300))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        shown = build(tmp_path, base, prefect_api, terminal=True)
        plain = build(tmp_path, base, prefect_api, terminal=False)
    print(shown[-2500:])
    for stage in STAGES:
        finals = re.findall(re.escape(stage) + r"[^\n]*?(\d+)/(\d+)", shown)
        assert finals, f"no bar for {stage!r}"
        done, total = finals[-1]
        assert done == total and int(total) >= 1, (stage, finals)
    assert "lineage done:" in shown and "Finished in state Completed" in shown
    assert "━" not in plain and not any(f"{stage} " in plain for stage in STAGES[2:])
