"""`inspire warehouse init` and `inspire warehouse status`, run as a real process: migrations
applied once, the path from the environment, and a missing warehouse as a clear error."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from inspire_build import warehouse
from tests.conftest import run_inspire


def inspire(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args, env=env, timeout=120)


def test_warehouse_init_twice_then_status(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "w.duckdb"
    first = inspire("warehouse", "init", "--warehouse", str(path))
    assert first.returncode == 0, first.stderr
    names = ", ".join(m.name for m in warehouse.load_migrations())
    assert f"applied {len(warehouse.load_migrations())} migration(s): {names}" in first.stdout
    second = inspire("--warehouse", str(path), "warehouse", "init")
    assert second.returncode == 0, second.stderr
    assert "up to date, nothing to apply" in second.stdout
    status = inspire("warehouse", "status", "--warehouse", str(path))
    assert status.returncode == 0, status.stderr
    for name in ("raw_http", "references", "eval_scores", "latest_split_versions"):
        assert name in status.stdout
    count = len(warehouse.load_migrations())
    assert "_migrations" in status.stdout and re.search(rf"│ +{count} │", status.stdout)


def test_warehouse_path_comes_from_the_environment(tmp_path: Path) -> None:
    import os

    path = tmp_path / "from-env.duckdb"
    env = {**os.environ, "INSPIRE_WAREHOUSE": str(path)}
    result = inspire("warehouse", "init", env=env)
    assert result.returncode == 0, result.stderr
    assert path.exists()


def test_status_of_a_missing_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    result = inspire("warehouse", "status", "--warehouse", str(tmp_path / "none.duckdb"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: no warehouse at ")
    assert "Traceback" not in result.stderr


def test_paths_that_cannot_be_made_are_one_error_line(tmp_path: Path) -> None:
    """A warehouse or an --out through a file, or where nothing can be made: one line, no
    traceback (each was a 145-line traceback)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    warehouse.connect(tmp_path / "w.duckdb").close()
    cases = [
        (["--warehouse", str(blocker / "w.duckdb"), "warehouse", "init"],
         f"error: cannot make the warehouse's folder {blocker}: "),
        (["--warehouse", str(blocker / "w.duckdb"), "plan", "--split", "eval"],
         f"error: cannot make the warehouse's folder {blocker}: "),
        (["--warehouse", str(tmp_path / "w.duckdb"), "snapshot", "export", "--out",
          str(blocker / "x.parquet")], f"error: --out {blocker / 'x.parquet'} cannot be written"),
    ]  # fmt: skip
    offline = {**os.environ, "INSPIRE_OPENALEX_URL": "http://127.0.0.1:9"}  # no key needed
    for args, start in cases:
        result = inspire(*args, env=offline)
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(start), line


def test_a_plan_against_the_real_openalex_without_a_key_is_refused_at_once(
    tmp_path: Path,
) -> None:
    """As a build is: before six retries of a request the API would refuse, and before a
    warehouse is made."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INSPIRE_")}
    path = tmp_path / "w.duckdb"
    result = inspire("--warehouse", str(path), "plan", "--instances", "2", env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("error: building from the real OpenAlex needs INSPIRE_")
    assert "retry" not in result.stderr and not path.exists()
