"""Batch mode against the sandbox's Batch API: every LLM request goes out in batch jobs, a
rerun sends nothing, and a run killed while waiting resumes the same job."""

from __future__ import annotations

import time
import types
from collections.abc import Iterator

import duckdb
import httpx
import pytest

from inspire_build import gold, warehouse
from inspire_build.config import Settings
from inspire_build.lineage_rows import write
from inspire_build.resolve import ALL_SOURCES, resolve_lineage
from inspire_build.sandbox import openai_api, server, world
from inspire_build.sandbox.llm_truth import TruthRates
from inspire_build.sandbox.openai_api import OpenAIConfig
from inspire_build.selection import select_targets
from inspire_build.sources import make_client


class Interrupted(Exception):
    pass


@pytest.fixture(scope="module")
def sandbox() -> Iterator[tuple[str, Settings, duckdb.DuckDBPyConnection, list[str]]]:
    generated = world.generate(world.WorldConfig(seed=8, papers=400))
    # No planted failures: every batch answer is valid, so none is asked again one by one.
    calm = TruthRates(**dict.fromkeys(TruthRates.names(), 0.0))
    config = server.SandboxConfig(
        time_scale=1000, openai=OpenAIConfig(batch_delay_s=0.2, truth=calm)
    )
    with server.running(generated, config) as base:
        settings = server.settings_for(
            base,
            llm_backend="openai",
            llm_model="sandbox-gpt",
            llm_api_key="sk-test",
            llm_max_retries=0,
            llm_prices={"sandbox-gpt": (1.0, 2.0)},  # USD per million tokens in, out
        )
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        chosen = select_targets(client, con, settings, "eval", limit=3).selected
        results = resolve_lineage(chosen, client)
        write(con, results, "eval", ALL_SOURCES)
        yield base, settings, con, [r.work.paper_id for r in results]
        con.close()


def counts(base: str) -> dict[str, int]:
    found: dict[str, int] = httpx.get(base + "/_sandbox/stats").json()["counts"]
    return found


def test_batch_mode_end_to_end_then_resume(
    sandbox: tuple[str, Settings, duckdb.DuckDBPyConnection, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, settings, con, targets = sandbox

    # A run killed while its first job is in flight...
    def crash(_: float) -> None:
        raise Interrupted

    # The sandbox's clock stands still meanwhile: on the real one, a loaded machine could spend
    # the job's 0.2 s before its first poll, find it completed and never sleep (the kill).
    killed = gold.make_llm(settings, con)
    with monkeypatch.context() as frozen, pytest.raises(Interrupted):
        stopped = time.monotonic()
        frozen.setattr(openai_api, "time", types.SimpleNamespace(monotonic=lambda: stopped))
        gold.run_in_batches(
            killed, con, lambda: gold.run(killed, con, settings, targets), poll_s=0.05, sleep=crash
        )
    assert con.execute("SELECT count(*) FROM llm_batches WHERE finished_at IS NULL").fetchone() == (
        1,
    )
    uploads = counts(base).get("openai files 200", 0)
    # ...resumes that job instead of uploading it again, and finishes in batch rounds.
    llm = gold.make_llm(settings, con)
    outcomes = gold.run_batched(llm, con, settings, targets, poll_s=0.05)
    after = counts(base)
    assert after.get("openai chat 200", 0) == 0  # nothing was asked one by one
    assert (
        con.execute("SELECT count(*) FROM llm_batches WHERE status = 'completed'").fetchone()[0]
        >= 2
    )
    file_calls = after["openai files 200"] - uploads
    rounds = con.execute("SELECT count(*) FROM llm_batches").fetchone()[0]
    # Each round uploads its requests and downloads its answers; the resumed round only
    # downloads: a second upload of the killed run's job would make this 2 * rounds.
    assert file_calls == 2 * rounds - 1
    assert len(outcomes) == len(set(targets))
    assert all(o.reason for o in outcomes)
    logged = con.execute("SELECT count(*) FROM llm_calls").fetchone()
    assert logged is not None and logged[0] == llm.calls_made > 0
    # Every answer came from a batch, so each costs half the price map's rate.
    costs = con.execute("SELECT tokens_in, tokens_out, cost_usd FROM llm_calls").fetchall()
    assert all(t_in > 0 for t_in, _, _ in costs)
    for t_in, t_out, cost in costs:
        assert cost == pytest.approx(0.5 * (t_in * 1.0 + t_out * 2.0) / 1_000_000)
    # An identical rerun sends nothing at all.
    again = gold.make_llm(settings, con)
    gold.run_batched(again, con, settings, targets, poll_s=0.05)
    assert again.calls_made == 0 and counts(base) == after
