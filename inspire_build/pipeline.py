"""The build's steps, in order (:data:`STEPS`), as plain calls in this process: no Prefect.

``flows/build_split.py`` runs these same step functions as Prefect tasks (state, the UI, the
LLM steps in chunks, progress per step); :func:`build_split` runs them one after another, for
tests, benchmarks and notebooks that want a split version in seconds. One wiring: a step
changes here, for both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import duckdb

from inspire_build import boundary_store, gold, lineage_rows, resolve, splits, warehouse
from inspire_build.bulk_source import BulkSource
from inspire_build.classify import TargetLineage
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.http import HttpClient
from inspire_build.llm import LLM
from inspire_build.models import Paper, TargetStatus
from inspire_build.selection import Selection, select_targets

# The steps' names, in order; `inspire build` draws a progress bar for each.
SELECT, LINEAGE, LLM_STEPS, WRITE = (
    "select targets",
    "lineage: S2 reference lists",
    "briefs, audits, grades",
    "write the version",
)
STEPS = (SELECT, LINEAGE, LLM_STEPS, WRITE)


select = select_targets  # step 1: the split's targets, each recorded with a status and a reason


def chunks(targets: list[str], size: int, first: int | None = None) -> list[list[str]]:
    """``targets`` in consecutive chunks of ``size`` (``Settings.chunk_size``; the last may be
    shorter). With ``first``, they grow from that size, each twice the last, up to ``size``."""
    parts: list[list[str]] = []
    start, length = 0, min(first or size, size)
    while start < len(targets):
        parts.append(targets[start : start + length])
        start, length = start + length, min(2 * length, size)
    return parts


def lineage_chunks(targets: list[str], settings: Settings) -> list[list[str]]:
    """A build's targets in the chunks its lineage resolves: of ``chunk_size`` with the rules
    backend; with a model (the openai backend), growing from a fifth of ``chunk_size``, each
    twice the last (4, 8, 16, 20, 20, ... at 20).

    A chunk's LLM steps start once its lineage is written, so a small first chunk starts them
    seconds sooner, and chunks doubling from it each resolve while the ones before keep the LLM
    slots busy; smaller chunks share fewer batch requests (a few more HTTP calls). The rule
    reads no concurrency and no runner: the card's hash attack counts the IDs a build fetched,
    which its chunks shape (tests/integration/test_chunking.py), so every runner and every
    concurrency must chunk a build alike for its export to keep the same bytes."""
    first = max(1, settings.chunk_size // 5) if settings.llm_backend == "openai" else None
    return chunks(targets, settings.chunk_size, first)


def lineage(
    con: duckdb.DuckDBPyConnection,
    client: HttpClient,
    settings: Settings,
    selection: Selection,
    progress: Callable[[int, int], None] | None = None,
    targets: list[str] | None = None,
    memo: resolve.Memo | None = None,
) -> list[str]:
    """Step 2: resolve and write the lineage of ``targets`` (a chunk of the selected ones; all
    of them by default); returns those left as candidates. ``memo`` keeps the records fetched
    for the build's earlier chunks."""
    results = resolve_chunk(
        con,
        client,
        settings,
        selection.split,
        selection.selected if targets is None else targets,
        selection.records,
        offsets=boundary_store.cutoff_offsets(con, settings),
        memo=memo,
        progress=progress,
    )
    return write_lineage(con, results, selection.split)


def resolve_chunk(
    reader: duckdb.DuckDBPyConnection,
    client: HttpClient,
    settings: Settings,
    split: str,
    targets: Sequence[str],
    known: Mapping[str, Paper],
    *,
    offsets: Callable[[str], int],
    memo: resolve.Memo | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[TargetLineage]:
    """Step 2's reading half: the lineage of ``targets``, reading the crosswalk and the bulk
    tables through ``reader`` (the warehouse, or a worker's read-only copy of it); ``known``
    holds the targets' records selection fetched. Writes nothing."""
    config = settings.split(split)
    return resolve.resolve_lineage(
        targets,
        client,
        existing=warehouse.crosswalk(reader),
        known_records=known,
        progress=progress,
        window=(config.start, config.end),
        cutoff_offset=offsets,
        memo=memo,
        bulk=BulkSource.of(reader, settings.bulk),
    )


def write_lineage(
    con: duckdb.DuckDBPyConnection, results: Sequence[TargetLineage], split: str
) -> list[str]:
    """Step 2's writing half: the chunk's rows; returns the targets left as candidates."""
    lineage_rows.write(con, results, split, resolve.ALL_SOURCES)
    return [r.work.paper_id for r in results if r.status is TargetStatus.CANDIDATE]


def llm_steps(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    targets: list[str],
    between: Callable[[], None] = lambda: None,
    client: HttpClient | None = None,
) -> list[gold.Verdict]:
    """Step 3, once lineage is done: brief, audit and grade each target (``between`` runs
    before each one is written); with ``client``, briefs are searched on OpenAlex too."""
    return gold.run(llm, con, settings, targets, between=between, client=client)


def write(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    label: str | None,
    targets: list[str],
) -> dict[str, Any]:
    """Step 4: write the split version of the accepted targets among ``targets``."""
    return splits.write_version(con, settings, split, label, targets)


def check_sources(settings: Settings) -> None:
    """Refuse, before any request, a build that cannot reach its sources: the real OpenAlex
    without a key. A configuration error is said once, never retried."""
    real_openalex = settings.openalex_url == Settings.model_fields["openalex_url"].default
    if settings.source_mode != "replay" and real_openalex and settings.openalex_api_key is None:
        raise InputError(
            "building from the real OpenAlex needs INSPIRE_OPENALEX_API_KEY (required since "
            "2026-02), and network access; to build offline, point INSPIRE_*_URL at a "
            "sandbox (`inspire sandbox env`) or run `make demo`"
        )


def build_split(
    con: duckdb.DuckDBPyConnection,
    client: HttpClient,
    settings: Settings,
    split: str,
    limit: int | None = None,
) -> dict[str, Any]:
    """Select, resolve chunk by chunk (each chunk's LLM steps starting beside the next chunk's
    lineage, as in the flow), and write one split version; returns its row."""
    selection, memo = select(client, con, settings, split, limit), resolve.Memo()
    candidates: list[str] = []
    with gold.Steps(gold.make_llm(settings, con), con, settings, client=client) as steps:
        started = []
        for chunk in lineage_chunks(selection.selected, settings):
            resolved = lineage(con, client, settings, selection, targets=chunk, memo=memo)
            candidates += resolved
            started += steps.submit(resolved)
        steps.corpus_complete()
        for future in started:
            steps.store(future.result())
    return write(con, settings, split, None, candidates)
