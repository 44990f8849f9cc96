"""Shared by the reliability suite: one sandbox world, one real Prefect server, fake keys, and
the fault-free reference build that every other build's export must equal byte for byte.

Every build here runs as a subprocess (`inspire build`, as users run it) with fake API keys and
a fake contact email set, and its output is kept in ``logs/``, so the secrets test can scan
every warehouse, log and export the suite produced.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from inspire_build.sandbox import server, world

VENV_BIN = Path(sys.executable).parent
TARGETS = "10"
# Every build of the suite shares one instance key, as a maintainer rebuilding elsewhere would
# (`inspire key export`), so their exports can be compared byte for byte. It belongs in the
# warehouse's private instance_key table and nowhere else (test_secrets).
INSTANCE_KEY = "9c" * 32
FAKE_SECRETS = {
    "INSPIRE_OPENALEX_API_KEY": "fake-openalex-key-7Qm2Zr",
    "INSPIRE_S2_API_KEY": "fake-s2-key-Vb81Kd",
    "INSPIRE_LLM_API_KEY": "sk-fake-llm-key-Hn40Pw",
    "INSPIRE_CONTACT_EMAIL": "fake.contact.Jx5@example.org",
}


@dataclasses.dataclass
class Suite:
    """Where this session's builds run and what they leave behind."""

    root: Path
    world: world.World
    base_env: dict[str, str]
    logs: list[Path] = dataclasses.field(default_factory=list)
    warehouses: list[Path] = dataclasses.field(default_factory=list)
    exports: list[Path] = dataclasses.field(default_factory=list)

    def env(self, name: str, sandbox_base: str, **extra: str) -> dict[str, str]:
        """Environment of a build into the warehouse ``name``, against a sandbox."""
        path = self.root / f"{name}.duckdb"
        if path not in self.warehouses:
            self.warehouses.append(path)
        lines = server.env_lines(sandbox_base, time_scale=1000)
        return {
            **self.base_env,
            **dict(line.split("=", 1) for line in lines),
            "INSPIRE_WAREHOUSE": str(path),
            **extra,
        }

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "inspire_build", *args]

    def run(self, env: dict[str, str], *args: str, log: str) -> subprocess.CompletedProcess[str]:
        """Run an `inspire` command to the end, keeping its output in ``logs/<log>``."""
        result = subprocess.run(
            self.command(*args), env=env, capture_output=True, text=True, timeout=600
        )
        self.keep_log(log, result.stdout + result.stderr)
        return result

    def keep_log(self, name: str, text: str) -> Path:
        path = self.root / "logs" / f"{name}.log"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.logs.append(path)
        return path

    def build(self, env: dict[str, str], log: str) -> subprocess.CompletedProcess[str]:
        built = self.run(env, "build", "--split", "eval", "--limit", TARGETS, log=log)
        assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
        return built

    def export(self, env: dict[str, str], name: str) -> list[str]:
        """Export the eval split; returns the files' hash lines, which name every byte."""
        out = self.root / "exports" / name
        result = self.run(
            env, "export", "--force", "--split", "eval", "--out", str(out), log=f"export-{name}"
        )
        assert result.returncode == 0, result.stderr[-2000:]
        self.exports.append(out)
        hashes = [
            line
            for line in result.stdout.splitlines()
            if "  public/" in line or "  private/" in line
        ]
        assert hashes
        return hashes


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory, prefect_api: str) -> Suite:
    root = tmp_path_factory.mktemp("reliability")
    base_env = {
        **os.environ,
        **FAKE_SECRETS,
        "INSPIRE_INSTANCE_KEY": INSTANCE_KEY,
        "INSPIRE_LLM_BACKEND": "rules",
        "INSPIRE_HTTP_BACKOFF_S": "0.01",  # faults are retried at once; the answers are the same
        "INSPIRE_HTTP_BACKOFF_CAP_S": "0.05",
        "PREFECT_API_URL": prefect_api,
        "PREFECT_HOME": str(root / "prefect-client"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    return Suite(root, world.generate(world.WorldConfig(seed=23, papers=900)), base_env)


@pytest.fixture(scope="session")
def sandbox(suite: Suite) -> Iterator[str]:
    """The fault-free sandbox: limits scaled 1000x, no injected faults."""
    with server.running(suite.world, server.SandboxConfig(time_scale=1000)) as base:
        yield base


@pytest.fixture(scope="session")
def reference_export(suite: Suite, sandbox: str) -> list[str]:
    """The export of an uninterrupted, fault-free build: what every other build must equal."""
    env = suite.env("reference", sandbox)
    suite.build(env, "build-reference")
    return suite.export(env, "reference")


def sandbox_calls(base: str) -> int:
    """Requests the sandbox answered, injected faults aside."""
    counts = httpx.get(base + "/_sandbox/stats").json()["counts"]
    return sum(v for k, v in counts.items() if not k.startswith("fault"))
