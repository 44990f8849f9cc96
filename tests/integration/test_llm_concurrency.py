"""The LLM steps at concurrency 1 and 16 against the sandbox's truthful LLM (with latency, so
calls overlap): the same export bytes, and never more calls in flight than allowed; steps that
run beside lineage give the bytes of steps run after it; and a provider that answers 429 with
retry-after loses no target."""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from pydantic import SecretStr

from inspire_build import boundary, boundary_store, exports, gold, pipeline, resolve, warehouse
from inspire_build.config import Settings
from inspire_build.driver import steps as driver_steps
from inspire_build.llm import LLM
from inspire_build.sandbox import server, world
from inspire_build.sandbox.openai_api import OpenAIConfig
from inspire_build.sources import make_client
from inspire_build.tables import search as search_table
from tests import competitor
from tests.conftest import new_warehouse

EVAL = Settings().split("eval")
WINDOW = (EVAL.start, EVAL.end)  # the card states the split's window

TARGETS = 16
KEY = SecretStr("5a" * 32)  # one instance key, so that the two exports can match byte for byte


@pytest.fixture(scope="module")
def generated() -> world.World:
    """The world of every test here, generated once (0.8 CPU-s each time); none changes it."""
    return world.generate(world.WorldConfig(seed=1, papers=1200))


def _settings(base: str, out: Path, concurrency: int, **extra: Any) -> Settings:
    return server.settings_for(
        base,
        warehouse=out / "w.duckdb",
        llm_backend="openai",
        llm_model="sandbox-gpt",
        llm_concurrency=concurrency,
        instance_key=KEY,
        **extra,
    )


def _build_and_export(
    base: str,
    out: Path,
    concurrency: int,
    targets: int = TARGETS,
    build: Any = pipeline.build_split,
    **extra: Any,
) -> tuple[dict[str, str], dict[str, int]]:
    """Build eval into a fresh warehouse and export it: the files' hashes, and the endpoint's
    counts (chat calls, rate-limited ones, the most in flight at once)."""
    settings = _settings(base, out, concurrency, **extra)
    con = new_warehouse(out / "w.duckdb")
    row = build(con, make_client(settings, con), settings, "eval", targets)
    assert row["counts"]["instances"] >= targets // 4, row
    hashes = exports.export(con, settings, "eval", None, out / "export", force=True)
    con.close()
    calls: dict[str, int] = httpx.get(f"{base}/v1/_sandbox/calls", timeout=10).json()
    return hashes, calls


def test_concurrency_1_and_16_export_the_same_bytes(tmp_path: Path, generated: world.World) -> None:
    one = server.SandboxConfig(time_scale=1000, openai=OpenAIConfig(seed=1, latency_s=0.02))
    with server.running(generated, one) as base:
        alone, counts_alone = _build_and_export(base, tmp_path / "one", 1)
    with server.running(generated, one) as base:
        together, counts_together = _build_and_export(base, tmp_path / "sixteen", 16)
    most_alone, most_together = counts_alone["most_in_flight"], counts_together["most_in_flight"]
    print(f"most calls in flight: {most_alone} at concurrency 1, {most_together} at 16")
    assert most_alone == 1
    assert 1 < most_together <= 16
    assert alone == together
    assert len(alone) >= 5
    _competitor_recovers_nothing(tmp_path / "sixteen")


def _competitor_recovers_nothing(out: Path) -> None:
    """A competitor with the export of a build whose lineage chunks grew (4, 8, 4): every ID the
    warehouse knows, hashed with every public string in every format, gives no instance ID; each
    published cutoff, widened by the card's jitter, keeps the true target among the candidates,
    and the brief's bm25 rank among them is what the audit reports."""
    export = out / "export"
    lines = (export / "public" / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    public = [json.loads(line) for line in lines]
    card = (export / "dataset_card.md").read_text(encoding="utf-8")
    con = warehouse.connect(out / "w.duckdb")
    version = exports.latest_version(con, "eval")
    strings = {str(row[k]) for row in public for k in ("instance_id", "cutoff")}
    strings.update(boundary_store.public_strings(con, version), card.splitlines())
    ids = [row["instance_id"] for row in public]
    hashed = boundary.hash_attack(ids, boundary_store.candidate_ids(con), strings, version)
    assert hashed.tried > 0 and not hashed.recovered
    jitter = int(re.search(r"0 to (\d+) days", card).group(1))  # type: ignore[union-attr]
    truth = dict(con.execute("SELECT instance_id, target_id FROM eval_latest").fetchall())
    first_public = dict(con.execute("SELECT paper_id, first_public_date FROM papers").fetchall())
    _, ranks = competitor.replay(con, public, truth, first_public, jitter, WINDOW)
    inputs = [
        (r["brief"], dt.date.fromisoformat(r["cutoff"]), truth[r["instance_id"]]) for r in public
    ]
    audited = boundary_store._windows(con, Settings(), "eval", inputs, jitter).ranks
    con.close()
    assert ranks == audited  # the card's and the audit's figures are the competitor's


def test_a_provider_answering_429_with_retry_after_loses_no_target(
    tmp_path: Path, generated: world.World
) -> None:
    free = server.SandboxConfig(time_scale=1000, openai=OpenAIConfig(seed=1))
    with server.running(generated, free) as base:
        expected, _ = _build_and_export(base, tmp_path / "free", 4, targets=8)
    # 12 requests a "minute" of one second: 4 targets at once overrun it at every turn.
    strict = OpenAIConfig(seed=1, latency_s=0.02, rpm=12, rate_window_s=1.0)
    with server.running(generated, server.SandboxConfig(time_scale=1000, openai=strict)) as base:
        limited, counts = _build_and_export(base, tmp_path / "limited", 4, targets=8)
    print(counts)
    assert counts["rate_limited"] > 0  # the server did refuse calls with 429 and retry-after
    assert counts["most_in_flight"] <= 4
    assert limited == expected  # every target, every brief, grade and instance as without limits


def _steps_after_lineage(
    con: duckdb.DuckDBPyConnection, client: Any, settings: Settings, split: str, limit: int
) -> dict[str, Any]:
    """The build as it ran before the overlap: every chunk's lineage, then the LLM steps."""
    selection, memo = pipeline.select(client, con, settings, split, limit), resolve.Memo()
    candidates = [
        target
        for chunk in pipeline.lineage_chunks(selection.selected, settings)
        for target in pipeline.lineage(con, client, settings, selection, targets=chunk, memo=memo)
    ]
    gold.run(gold.make_llm(settings, con), con, settings, candidates, client=client)
    return pipeline.write(con, settings, split, None, candidates)


# Seconds a chunk's lineage waits for a grade. A grade sent beside lineage takes well under a
# second in the sandbox (1,000 times faster); 60 made this test wait twice in vain (138 s).
GRADE_WAIT_S = 10


def test_steps_beside_lineage_give_the_bytes_of_steps_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generated: world.World
) -> None:
    # Briefs of the field's problem: in a world this sparse the search check rejects most
    # first drafts of a target's own problem, and a rejected brief waits for the corpus before
    # its redraft, so no target would be graded beside lineage (the overlap this test shows).
    field = OpenAIConfig(seed=1, latency_s=0.02, brief_scope="field")
    config = server.SandboxConfig(time_scale=1000, openai=field)
    with server.running(generated, config) as base:
        after, _ = _build_and_export(
            base, tmp_path / "after", 16, build=_steps_after_lineage, chunk_size=4
        )
    # What happened when, in the build whose steps run beside lineage.
    events: list[tuple[float, str]] = []
    lock = threading.Lock()

    def noted(name: str | Any, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                events.append((time.monotonic(), name(*args) if callable(name) else name))
            return real(*args, **kwargs)

        return call

    graded = threading.Event()

    def sent(_: LLM, messages: Any, model: type) -> str:
        if model.__name__ == "GradeSheet":
            graded.set()
        return model.__name__

    def lineage(*args: Any, **kwargs: Any) -> list[str]:
        resolved = real_lineage(*args, **kwargs)
        # the next chunks wait, so that a grade comes before them; a chunk whose briefs were all
        # rejected (their redrafts wait for the corpus) sends none, so the wait is bounded
        graded.wait(GRADE_WAIT_S)
        return resolved

    real_lineage = driver_steps.lineage
    monkeypatch.setattr(driver_steps, "lineage", lineage)  # the driver's rounds call it there
    monkeypatch.setattr(LLM, "_send", noted(sent, LLM._send))
    monkeypatch.setattr(search_table, "search", noted("search", search_table.search))
    complete = gold.Steps.corpus_complete
    monkeypatch.setattr(gold.Steps, "corpus_complete", noted("corpus complete", complete))
    with server.running(generated, config) as base:
        beside, _ = _build_and_export(base, tmp_path / "beside", 16, chunk_size=4)
    assert beside == after
    names = [name for _, name in sorted(events)]
    corpus = names.index("corpus complete")
    assert "search" not in names[:corpus]  # the retrieval checks waited for every paper
    assert "BriefDraft" in names[:corpus]  # briefs were asked while lineage ran
    assert "GradeSheet" in names[:corpus]  # and so were grades, beside the waiting searches
