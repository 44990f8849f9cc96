"""Without the real recordings the conformance tests skip, except under CI=true, where they fail
(a CI machine must not pass by skipping them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT


def conformance(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["INSPIRE_SHARED_FIXTURES"] = str(tmp_path / "nothing")
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "tests/conformance/test_sandbox_shapes.py", "-k", "openalex"]  # fmt: skip
    return subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)


def test_missing_recordings_skip_on_a_developers_machine(tmp_path: Path) -> None:
    done = conformance(tmp_path, None)
    assert done.returncode == 0 and " skipped" in done.stdout and "failed" not in done.stdout


def test_missing_recordings_fail_under_ci(tmp_path: Path) -> None:
    done = conformance(tmp_path, "true")
    assert done.returncode == 1 and "under CI=true the conformance tests fail" in done.stdout
