"""The LLM steps at concurrency 1 and 16 against the sandbox's truthful LLM (with latency, so
calls overlap): the same export bytes, and never more calls in flight than allowed."""

from __future__ import annotations

from pathlib import Path

import httpx
from pydantic import SecretStr

from inspire_build import exports, pipeline, warehouse
from inspire_build.sandbox import server, world
from inspire_build.sandbox.openai_api import OpenAIConfig
from inspire_build.sources import make_client

TARGETS = 16
KEY = SecretStr("5a" * 32)  # one instance key, so that the two exports can match byte for byte


def _build_and_export(base: str, out: Path, concurrency: int) -> tuple[dict[str, str], int]:
    """Build eval into a fresh warehouse and export it: the files' hashes, and the most calls
    the endpoint had in flight at once during the build."""
    settings = server.settings_for(
        base,
        warehouse=out / "w.duckdb",
        llm_backend="openai",
        llm_model="sandbox-gpt",
        llm_concurrency=concurrency,
        instance_key=KEY,
    )
    con = warehouse.connect(out / "w.duckdb")
    warehouse.migrate(con)
    row = pipeline.build_split(con, make_client(settings, con), settings, "eval", TARGETS)
    assert row["counts"]["instances"] >= 5, row
    hashes = exports.export(con, settings, "eval", None, out / "export")
    con.close()
    calls = httpx.get(f"{base}/v1/_sandbox/calls", timeout=10).json()
    return hashes, calls["most_in_flight"]


def test_concurrency_1_and_16_export_the_same_bytes(tmp_path: Path) -> None:
    generated = world.generate(world.WorldConfig(seed=1, papers=1200))
    one = server.SandboxConfig(time_scale=1000, openai=OpenAIConfig(seed=1, latency_s=0.02))
    with server.running(generated, one) as base:
        alone, most_alone = _build_and_export(base, tmp_path / "one", 1)
    with server.running(generated, one) as base:
        together, most_together = _build_and_export(base, tmp_path / "sixteen", 16)
    print(f"most calls in flight: {most_alone} at concurrency 1, {most_together} at 16")
    assert most_alone == 1
    assert 1 < most_together <= 16
    assert alone == together
    assert len(alone) >= 5
