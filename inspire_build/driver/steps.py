"""The build's steps, one call each, that ``driver.py`` runs in order: select the targets, cut
them into the chunks lineage resolves, resolve and write a chunk's lineage, start and end the
walk over the candidates; and what comes before a build: its plan, and the check of its sources.

Each step reads and writes the warehouse through the connection it is given and keeps no state
between calls, so a runner may wrap any of them (a Prefect task run, a Dask worker's call).
``pipeline.py`` names them too, for the callers that run them one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import duckdb

from inspire_build import (
    boundary_store,
    dask_runner,
    gold,
    lineage_rows,
    llm_budget,
    plan,
    resolve,
)
from inspire_build.bulk_source import BulkSource
from inspire_build.classify import TargetLineage
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.grading import estimate_tokens
from inspire_build.http import HeldResponses, HttpClient
from inspire_build.instances import PRIOR_YIELD, Walk
from inspire_build.models import Paper, TargetStatus
from inspire_build.selection import Selection, select_targets
from inspire_build.sources import CODECS
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import plan_inputs
from inspire_build.tables.crosswalk import crosswalk
from inspire_build.templates import load_prompts

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


def first_chunk(settings: Settings) -> int | None:
    """The size lineage's chunks grow from: a fifth of ``chunk_size`` with a model (the openai
    backend), else None (every chunk of ``chunk_size``)."""
    return max(1, settings.chunk_size // 5) if settings.llm_backend == "openai" else None


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
    return chunks(targets, settings.chunk_size, first_chunk(settings))


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
        existing=crosswalk(reader),
        known_records=known,
        progress=progress,
        window=(config.start, config.end),
        cutoff_offset=offsets,
        memo=memo,
        bulk=BulkSource.of(reader, settings.bulk),
    )


def resolve_on_worker(
    settings: Settings,
    copy: Path,
    split: str,
    targets: Sequence[str],
    known: Mapping[str, Paper],
    offsets: Callable[[str], int],
) -> tuple[list[TargetLineage], list[dict[str, object]]]:
    """Step 2's reading half on a Dask worker: the lineage of ``targets``, reading the build's
    read-only ``copy`` of the warehouse, and the responses fetched, for the build to write."""
    con = dask_runner.opened(copy)
    try:
        store = HeldResponses(con)
        client = HttpClient(settings, CODECS, store, limits=dask_runner.SharedLimits())
        results = resolve_chunk(con, client, settings, split, targets, known, offsets=offsets)
        return results, store.saved
    finally:
        con.close()


def write_lineage(
    con: duckdb.DuckDBPyConnection, results: Sequence[TargetLineage], split: str
) -> list[str]:
    """Step 2's writing half: the chunk's rows; returns the targets left as candidates."""
    lineage_rows.write(con, results, split, resolve.ALL_SOURCES)
    return [r.work.paper_id for r in results if r.status is TargetStatus.CANDIDATE]


def accepted_of(resolved: list[str], verdicts: Sequence[gold.Verdict]) -> list[str]:
    """The accepted among a round's ``resolved`` targets, whose ``verdicts`` came in order."""
    pairs = zip(resolved, verdicts, strict=True)
    return [target for target, verdict in pairs if verdict.status is TargetStatus.ACCEPTED]


def start_walk(settings: Settings, selection: Selection) -> Walk:
    """The walk over the selected candidates: a round of all of them, or, with the split's
    ``instances``, rounds sized from the yield measured so far. Its prior is a constant, never
    an earlier build's yield: the same config must walk the same candidates in any warehouse."""
    return Walk(selection.selected, settings.split(selection.split).instances, PRIOR_YIELD)


def end_walk(con: duckdb.DuckDBPyConnection, selection: Selection, walk: Walk) -> list[str]:
    """Record the candidates over the build's count (accepted after it, or never reached), and
    return the build's notes: how many instances it lacks when the candidates ran out."""
    if walk.wanted is None:
        return []
    over = f"over the build's {walk.wanted} instances"
    lineage_table.mark_over_count(con, selection.split, walk.surplus, f"accepted, but {over}")
    unreached = [selection.row_ids.get(t, t) for t in walk.unreached]
    lineage_table.mark_over_count(con, selection.split, unreached, f"not reached: {over}")
    if not walk.short:
        return []
    return [
        f"the candidates ran out: {len(walk.accepted)} of the {walk.wanted} instances asked "
        f"for, from all {len(walk.order)} candidates selected"
    ]


Measured = tuple[plan.Profile | None, dict[str, tuple[int, float, float, float]]]


def measured_rates(con: duckdb.DuckDBPyConnection, settings: Settings, split: str) -> Measured:
    """What earlier builds of ``split`` measured (None where none briefed a target), and the
    call log's figures per step for the model; read before a build's selection rewrites the
    split's targets."""
    steps = plan_inputs.step_figures(con, settings.llm_backend, settings.model_name)
    targets = plan_inputs.target_figures(con, split)
    return plan.measured(targets, steps, settings.grade_readings), steps


def plan_of(
    settings: Settings, split: str, works: Sequence[Paper], measured: Measured
) -> plan.Plan:
    """The plan for building ``split`` from ``works``, its candidates in the walk's order: with
    the ``measured`` rates of earlier builds where there are some, else the priors."""
    config = settings.split(split)
    works = works[: config.limit] if config.limit else works
    candidates = [
        plan.Candidate(
            w.reference_count or len(w.referenced_works or ()),
            estimate_tokens(f"{w.title or ''} {w.abstract or ''}"),
        )
        for w in works
    ]
    profile, steps = measured
    limits = plan.Limits(
        chunk_size=settings.chunk_size,
        first_chunk=first_chunk(settings),
        brief_attempts=settings.brief_attempts,
        grade_readings=settings.grade_readings,
        grade_part_tokens=settings.grade_part_tokens,
        searches=True,
        rates={
            "openalex": settings.openalex_rps,
            "s2": settings.s2_rps,
            "arxiv": 1 / max(settings.arxiv_interval_s, 1e-3),
        },
        llm_concurrency=settings.llm_concurrency,
        llm_latency_s=plan.mean_latency(steps) or plan.PRIOR_LATENCY_S,
        llm_rpm=settings.llm_rpm,
        llm_tpm=settings.llm_tpm,
        price=llm_budget.prices_of(settings, settings.llm_backend, settings.llm_model),
    )
    sizes = {name: estimate_tokens(p.source) for name, p in load_prompts().items()}
    return plan.estimate(candidates, config.instances, sizes, limits, profile or plan.Profile())


def check_openalex_key(settings: Settings) -> bool:
    """Refuse the real OpenAlex without a key (each request would be retried, then fail);
    whether the real OpenAlex is the source (not a replay, nor another URL)."""
    real_openalex = settings.openalex_url == Settings.model_fields["openalex_url"].default
    if settings.source_mode == "replay" or not real_openalex:
        return False
    if settings.openalex_api_key is None:
        raise InputError(
            "building from the real OpenAlex needs INSPIRE_OPENALEX_API_KEY (required since "
            "2026-02), and network access; to build offline, point INSPIRE_*_URL at a "
            "sandbox (`inspire sandbox env`) or run `make demo`"
        )
    return True


def check_sources(settings: Settings, split: str | None = None) -> None:
    """Refuse, before any request, a build that cannot reach its sources (the real OpenAlex
    without a key) or would build a whole window from them (``split`` with neither a limit nor
    a count of instances). A configuration error is said once, never retried."""
    llm_budget.check(settings)  # a budget for a model with no price
    if not check_openalex_key(settings):
        return
    config = settings.split(split) if split else None
    if config is not None and config.limit is None and config.instances is None:
        raise InputError(
            f"building {split} from the real OpenAlex needs a size: every CS arXiv paper of "
            f"{config.start}..{config.end} is a candidate. Pass --instances N (the flow's "
            "`instances` parameter, INSPIRE_SPLITS__<SPLIT>__INSTANCES) or --limit N, and see "
            f"its cost first with `inspire plan --split {split} --instances N`"
        )
