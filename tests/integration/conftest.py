"""Shared by the integration tests: the Sandbox build of the search environment's modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inspire_build import pipeline, warehouse
from inspire_build.cli import app
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import world
from inspire_build.sources import make_client


@pytest.fixture(scope="session")
def env_build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """(warehouse, folder, sandbox URL): an eval version of a few targets with the corpus of
    the whole world (its files in ``folder/world``), made once per test process. A module
    fixture defined in one test module and imported by others runs again in each of them:
    test_env_sandbox, test_eval_report and test_llm_agent_sandbox each built this (~7 CPU-s)."""
    root = tmp_path_factory.mktemp("env-build")
    generated = world.generate(world.WorldConfig(seed=5, papers=800))
    world.write(generated, root / "world")
    path = root / "w.duckdb"
    with sandbox.running(generated, sandbox.SandboxConfig(time_scale=1000)) as base:
        settings = sandbox.settings_for(base, warehouse=path, llm_backend="rules")
        with warehouse.open_warehouse(path) as con:
            client = make_client(settings, con)
            version = pipeline.build_split(con, client, settings, "eval", 14)["version_id"]
        built_corpus = CliRunner().invoke(
            app, ["corpus", "build", "--world", str(root / "world"), "--warehouse", str(path)]
        )
        assert built_corpus.exit_code == 0, built_corpus.output
        assert "corpus: " in built_corpus.output and "sandbox-world records" in built_corpus.output
        assert version.startswith("eval-")
        yield path, root, base
