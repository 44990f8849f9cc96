"""The real recordings stay outside the repository. Without them the tests that replay them skip,
each with one line naming what is missing and the variable to set, except under CI=true, where
they fail (a CI machine must not pass by skipping them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import API_RECORDINGS, PROJECT_ROOT, RECORDINGS_VARIABLE, missing_recordings

# Every kind of test that replays recordings: a session fixture that imports them all
# (test_real_recordings), a parametrized one, and one outside tests/conformance/.
REPLAYING = [
    "tests/conformance/test_real_recordings.py",
    "tests/conformance/test_sandbox_shapes.py",
    "tests/integration/test_bulk_build.py::"
    "test_a_build_from_bulk_tables_asks_5_percent_and_agrees_on_every_status",
]


def replaying(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env[RECORDINGS_VARIABLE] = str(tmp_path / "nothing")
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               "-p", "no:xdist", *REPLAYING]  # fmt: skip
    return subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)


def test_missing_recordings_skip_each_test_with_one_line_naming_them(tmp_path: Path) -> None:
    done = replaying(tmp_path, None)
    assert done.returncode == 0, done.stdout[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " skipped" in summary and "passed" not in summary and "error" not in summary
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    reason = (
        f"real recordings missing: {tmp_path / 'nothing' / 'real'} (set {RECORDINGS_VARIABLE} "
        "to the folder that holds real/, or fill one with `make record-fixtures`)"
    )
    assert len(skipped) == int(summary.split()[0]) > 15  # one line a test, all alike
    assert all(line.endswith(": " + reason) for line in skipped)


def test_missing_recordings_fail_under_ci_naming_them(tmp_path: Path) -> None:
    done = replaying(tmp_path, "true")
    assert done.returncode == 1
    assert "passed" not in done.stdout.strip().splitlines()[-1]
    assert (
        f"real recordings missing: {tmp_path / 'nothing' / 'real'}; under CI=true the tests "
        "that replay them fail, not skip"
    ) in done.stdout


def test_a_missing_folder_is_named_when_the_rest_is_there(tmp_path: Path) -> None:
    real = tmp_path / "real"
    assert missing_recordings("arxiv", real=real) == [real]  # the whole folder, once
    for name in API_RECORDINGS:
        (real / name).mkdir(parents=True)
    assert missing_recordings(*API_RECORDINGS, real=real) == []
    assert missing_recordings("openalex", "s2-datasets", real=real) == [real / "s2-datasets"]
