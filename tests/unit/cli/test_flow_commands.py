"""`inspire build --apply-reviews` refuses the options of a build that runs its steps, before
any warehouse or Prefect server is touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from inspire_build.cli import app


@pytest.mark.parametrize("option", [["--limit", "5"], ["--runner", "dask"]])
def test_apply_reviews_takes_no_step_options(tmp_path: Path, option: list[str]) -> None:
    path = tmp_path / "w.duckdb"
    result = CliRunner().invoke(
        app, ["build", "--apply-reviews", *option, "--warehouse", str(path)]
    )
    assert result.exit_code == 2
    assert "--apply-reviews" in result.output and "takes no --limit" in result.output
    assert not path.exists()
