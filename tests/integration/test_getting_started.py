"""docs/getting-started.md's commands run as written, against a sandbox: every `inspire` line of
its code blocks, in order, exits 0, but the review server and what needs a curator's decisions
made in it (`--apply-reviews`), which the review tests drive through the app. Where the guide
exports keys, the test exports the sandbox's settings instead."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from inspire_build.sandbox import server, world
from tests.conftest import PROJECT_ROOT, run_inspire

GUIDE = PROJECT_ROOT / "docs" / "getting-started.md"
CURATORS = ("inspire review serve", "inspire build --split eval --apply-reviews")


def guide_commands(text: str) -> list[list[str]]:
    """The `inspire` lines of the guide's bash blocks, comments dropped, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    chosen = [ln for ln in lines if ln.startswith("inspire ") and not ln.startswith(CURATORS)]
    return [shlex.split(line)[1:] for line in chosen]


def test_the_guide_names_the_whole_walk() -> None:
    named = {args[0] for args in guide_commands(GUIDE.read_text(encoding="utf-8"))}
    assert {"plan", "build", "cost", "audit", "export", "review", "agent", "eval"} <= named


def test_the_guides_commands_run_as_written(tmp_path: Path, prefect_api: str) -> None:
    commands = guide_commands(GUIDE.read_text(encoding="utf-8"))
    generated = world.generate(world.WorldConfig(seed=13, papers=1000))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        env = {
            **os.environ,
            **dict(line.split("=", 1) for line in server.shell_lines(base, time_scale=1000)),
            "INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"),
            "PREFECT_HOME": str(tmp_path / "prefect"),
            "PREFECT_API_URL": prefect_api,
            "INSPIRE_LLM_API_KEY": "sk-sandbox-guide-test",
            "INSPIRE_LLM_PRICES": json.dumps({"sandbox-gpt": [0.15, 0.6]}),
            # A 1,000-paper world's windows are too thin for the boundary's verdict (the demo's
            # dense world passes it); the walk is what this test is about.
            "INSPIRE_WINDOW_ATTACK_MAX_TOP1": "1.0",
            "INSPIRE_MIN_ANONYMITY": "1",
        }
        for args in commands:
            done = run_inspire(*args, env=env, timeout=900, cwd=tmp_path)
            said = f"inspire {' '.join(args)}:\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
            assert done.returncode == 0, said
            assert "Traceback" not in done.stderr, said
    assert (tmp_path / "release" / "eval" / "public" / "README.md").is_file()
    assert (tmp_path / "run.jsonl").is_file() and (tmp_path / "traj.jsonl").is_file()
