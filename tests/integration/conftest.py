"""Shared by the integration tests: the Sandbox build of the search environment's modules."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inspire_build import pipeline, warehouse
from inspire_build.cli import app
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import world
from inspire_build.sources import make_client


@contextlib.contextmanager
def sandbox_split(
    root: Path, path: Path, *, papers: int, targets: int
) -> Iterator[tuple[world.World, str, str]]:
    """(world, sandbox URL, version ID) while the sandbox serves: a world of seed 5 written to
    ``root/world`` and an eval version of ``targets`` built in-process into ``path``."""
    generated = world.generate(world.WorldConfig(seed=5, papers=papers))
    world.write(generated, root / "world")
    with sandbox.running(generated, sandbox.SandboxConfig(time_scale=1000)) as base:
        settings = sandbox.settings_for(base, warehouse=path, llm_backend="rules")
        with warehouse.open_warehouse(path) as con:
            client = make_client(settings, con)
            version = pipeline.build_split(con, client, settings, "eval", targets)["version_id"]
        yield generated, base, version


@pytest.fixture(scope="session")
def env_build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """(warehouse, folder, sandbox URL): an eval version of a few targets with the corpus of
    the whole world (its files in ``folder/world``), made once per test process. A module
    fixture defined in one test module and imported by others runs again in each of them:
    test_env_sandbox, test_eval_report and test_llm_agent_sandbox each built this (~7 CPU-s)."""
    root = tmp_path_factory.mktemp("env-build")
    path = root / "w.duckdb"
    with sandbox_split(root, path, papers=800, targets=14) as (_, base, version):
        built_corpus = CliRunner().invoke(
            app, ["corpus", "build", "--world", str(root / "world"), "--warehouse", str(path)]
        )
        assert built_corpus.exit_code == 0, built_corpus.output
        assert "corpus: " in built_corpus.output and "sandbox-world records" in built_corpus.output
        assert version.startswith("eval-")
        yield path, root, base
