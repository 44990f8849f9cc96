"""The ``build-split`` flow: select targets, resolve lineage, brief/audit/grade, write a version.

Wiring only: each task is a thin wrapper over an ``inspire_build`` function. Lineage resolves
the targets chunk by chunk (``chunk_size``: a chunk's references are fetched in shared batches)
in the flow's thread; as each chunk is written, a task run starts its LLM steps in the build's
pool (:class:`gold.Steps`) and the next chunk is fetched beside them. The task runs return
records; the flow's thread alone writes, a target at a time. Only this flow-run process opens
the warehouse; a second build waits for the first, and every build is recorded in
``build_runs``.
A rerun with the same config is answered from the raw response store and the LLM call log, so
it makes no HTTP or LLM call, and rewrites the same version.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import uuid
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import Any, NamedTuple, cast
from uuid import UUID

import duckdb
from prefect import flow, get_run_logger, runtime, task
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import TerminationSignal
from prefect.futures import PrefectFuture
from prefect.states import Cancelled as CancelledState
from prefect.states import Failed as FailedState
from prefect.utilities.annotations import quote

from flows import console
from flows import progress as stages
from inspire_build import (
    boundary_store,
    build_runs,
    dask_runner,
    exports,
    gold,
    pipeline,
    plan,
    resolve,
    warehouse,
)
from inspire_build.config import Settings, get_settings
from inspire_build.errors import Cancelled, InspireError
from inspire_build.http import ResponseStore
from inspire_build.instances import Walk
from inspire_build.models import TargetStatus
from inspire_build.review import apply
from inspire_build.selection import Selection
from inspire_build.sources import make_client
from inspire_build.tables import reading_copy

# Tasks take live connections, which Prefect must not try to hash for its cache.
NO_STORE: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
LINEAGE_SHARE = 50.0  # the build's progress artifact: lineage is its first half
SELECTION, LINEAGE, LLM_STEPS, WRITE = pipeline.STEPS  # the bars `inspire build` draws


@task(name="select-targets", **NO_STORE)
def select_targets(client: Any, con: Any, settings: Settings, split: str) -> Selection:
    return pipeline.select(client, con, settings, split)


@task(name="resolve-lineage", **NO_STORE)
def resolve_chunk(
    client: Any,
    con: Any,
    settings: Settings,
    selection: Selection,
    chunk: list[str],
    before: int,
    total: int,
    shown: Any,
    memo: resolve.Memo,
) -> list[str]:
    """Resolve and write the lineage of ``chunk``, which follows ``before`` of the ``total``
    targets the build has reached; returns those left as candidates."""
    logger = get_run_logger()

    def progress(done: int, _: int) -> None:
        _advanced(logger, shown, before + done, total)

    return pipeline.lineage(con, client, settings, selection, progress, chunk, memo)


@task(name="resolve-lineage", **NO_STORE)
def resolve_remote(
    settings: Settings,
    copy: Path,
    split: str,
    chunk: list[str],
    known: dict[str, Any],
    offsets: Any,
) -> tuple[list[Any], list[dict[str, object]]]:
    """Resolve ``chunk`` on a Dask worker, from the build's read-only copy of the warehouse;
    returns its lineage and the responses fetched, which the flow process writes."""
    return dask_runner.lineage_records(settings, copy, split, chunk, known, offsets)


@task(name="brief-audit-grade", **NO_STORE)
def gold_chunk(started: list[Future[gold.Records]]) -> Any:
    """The LLM steps of a chunk of targets, ``started`` in the build's pool (beside the other
    chunks' steps and the next chunks' lineage): the task run lasts while they run, and returns
    their outcomes. The flow's thread writes each target's records as the target ends, and
    reports a target's error; this run only ends Cancelled or Failed with it, in one line."""
    try:
        return [future.result().verdict.kind.value for future in started]
    except (CancelledError, Cancelled) as error:  # the build stopped: its steps were dropped
        return CancelledState(message=str(error) or "the build stopped")
    except Exception as error:
        return FailedState(message=f"a target's LLM steps failed: {error}")


@task(name="write-version", **NO_STORE)
def write_version(
    con: Any, settings: Settings, split: str, label: str | None, targets: list[str]
) -> dict[str, Any]:
    return pipeline.write(con, settings, split, label, targets)


@task(name="apply-reviews", **NO_STORE)
def apply_reviews_task(
    con: Any, settings: Settings, split: str, label: str | None
) -> dict[str, Any]:
    return apply.apply_reviews(con, settings, split, label)


@flow(name="build-split", log_prints=True)
def build_split(
    split: str = "eval",
    limit: int | None = None,
    instances: int | None = None,
    label: str | None = None,
    llm_backend: str | None = None,
    source_mode: str | None = None,
    concurrency: int | None = None,
    chunk_size: int | None = None,
    warehouse_path: str | None = None,
    llm_concurrency: int | None = None,
    runner: str | None = None,
    dask_address: str | None = None,
    apply_reviews: bool = False,
    llm_budget_usd: float | None = None,
) -> Any:
    """Build one split version end to end and return its row (into ``warehouse_path``, else
    the configured warehouse); a :class:`Cancelled` build ends its flow run Cancelled.
    ``runner="dask"`` resolves the lineage chunks on Dask workers (at ``dask_address``, else on
    a LocalCluster). ``instances`` builds until that many are accepted (``limit`` caps the
    candidates it may walk); ``llm_budget_usd`` stops it before a call would spend more.
    ``apply_reviews`` runs no step: it writes the split's latest
    version again with the curators' standing reviews applied, as a new version."""
    logger = get_run_logger()
    settings = get_settings().overridden(
        split,
        limit=limit,
        instances=instances,
        llm_backend=llm_backend,
        source_mode=source_mode,
        concurrency=concurrency,
        llm_concurrency=llm_concurrency,
        warehouse=warehouse_path,
        chunk_size=chunk_size,
        runner=runner,
        dask_address=dask_address,
        llm_budget_usd=llm_budget_usd,
    )
    if not apply_reviews:  # a configuration error fails at once, before any request
        pipeline.check_sources(settings, split)
    if settings.runner == "dask" and not apply_reviews:
        dask_runner.require()  # a configuration error fails at once, before any request
    requested = dt.datetime.now(dt.UTC)
    try:
        with warehouse.open_warehouse(
            settings.warehouse, wait_s=3600, say=logger.info, stopped=console.signalled
        ) as con:
            run_id = runtime.flow_run.id or uuid.uuid4().hex
            if closed := build_runs.begin(con, run_id, split, requested):
                logger.info(f"closed {closed} earlier build(s) that died before finishing")
            try:
                made = _reviewed if apply_reviews else _build
                version = made(logger, con, settings, split, label)
            except (Exception, TerminationSignal) as error:
                stopped = console.as_cancelled(error)
                if isinstance(stopped, duckdb.Error):  # a full disk: said in one line
                    stopped = warehouse.translate(stopped, settings.warehouse) or stopped
                _finish(con, settings.warehouse, run_id, stopped)
                if stopped is not error:
                    raise stopped from error
                raise
            build_runs.finish(con, run_id, version_id=version["version_id"])
            return version
    except (Cancelled, TerminationSignal) as error:  # the open transaction rolled back
        stopped = console.as_cancelled(error)
        logger.warning(str(stopped))
        return CancelledState(message=str(stopped))  # the flow run is Cancelled, not Failed


def _finish(con: Any, path: Any, run_id: str, error: BaseException) -> None:
    """Record the build failed (or cancelled). DuckDB invalidates a database after a failed
    write (a full disk), so on a second failure the row is written through a new connection;
    if even that fails, the next build closes the row as interrupted."""
    try:
        build_runs.finish(con, run_id, error=error)
    except duckdb.Error:
        con.close()
        try:
            fresh = warehouse.connect(path, create=False)
        except (duckdb.Error, InspireError):
            return
        try:
            build_runs.finish(fresh, run_id, error=error)
        except duckdb.Error:
            pass
        finally:
            fresh.close()


def _build(logger: Any, con: Any, settings: Settings, split: str, label: str | None) -> Any:
    client = make_client(settings, con)
    measured = pipeline.measured_rates(con, settings, split)  # before selection rewrites them
    stages.advance(SELECTION, 0, 1)
    selection = select_targets(client, con, settings, split)
    stages.advance(SELECTION, 1, 1)
    logger.info(f"{split}: {len(selection.selected)} target(s) selected")
    shown = cast(  # a sync call outside an event loop returns the ID itself
        UUID,
        create_progress_artifact(
            0.0, key=f"{split}-build-progress", description=f"{split}: lineage, then LLM steps"
        ),
    )
    console.checkpoint()
    works = [selection.records[t] for t in selection.selected if t in selection.records]
    planned = pipeline.plan_of(settings, split, works, measured)
    for line in plan.lines(planned, settings.llm_model):
        logger.info(f"plan: {line}")
    walk, llm = pipeline.start_walk(settings, selection), gold.make_llm(settings, con)
    while part := walk.next_round():
        if walk.wanted is not None:
            logger.info(
                f"{len(walk.accepted)} of {walk.wanted} instances from {len(walk.resolved)} "
                f"candidate(s) so far: building {len(part)} more"
            )
        _round(logger, con, client, settings, selection, walk, llm, part, shown)
    notes = pipeline.end_walk(con, selection, walk)
    made = {source: stats.network for source, stats in client.stats.items()}
    for line in plan.actual_lines(planned, made, llm.calls_made, llm.budget.spent_usd):
        logger.info(f"made: {line}")
    stages.advance(WRITE, 0, 1)
    version: dict[str, Any] = write_version(con, settings, split, label, walk.kept)
    version["notes"] = [*version["notes"], *notes]
    stages.advance(WRITE, 1, 1)
    update_progress_artifact(shown, 100.0)
    return _published(logger, con, split, version)


def _round(
    logger: Any,
    con: Any,
    client: Any,
    settings: Settings,
    selection: Selection,
    walk: Walk,
    llm: Any,
    part: list[str],
    shown: Any,
) -> None:
    """Lineage of ``part`` chunk by chunk, each chunk's LLM steps beside the next chunk's
    lineage; every step of the round ends (and is written) before the walk goes on."""
    at = Reach(walk.taken - len(part), walk.taken, len(walk.resolved))
    with gold.Steps(llm, con, settings, at.ranked, client=client) as steps:
        if settings.runner == "dask":
            chunks = _lineage_on_dask(logger, con, settings, selection, shown, part, at)
        else:
            chunks = _lineage(client, con, settings, selection, steps, shown, part, at)
        resolved = [target for chunk, _, _ in chunks for target in chunk]
        logger.info(f"lineage done: {len(resolved)} of {len(part)} target(s) have antecedents")
        steps.corpus_complete()  # the retrieval checks waiting for every paper may search now
        verdicts = _store(logger, steps, chunks, len(resolved), shown)
    walk.record(resolved, pipeline.accepted_of(resolved, verdicts))


def _reviewed(logger: Any, con: Any, settings: Settings, split: str, label: str | None) -> Any:
    """The split's latest version written again with the curators' reviews applied: from the
    version's own records, with no lineage or LLM step."""
    stages.advance(WRITE, 0, 1)
    version: dict[str, Any] = apply_reviews_task(con, settings, split, label)
    stages.advance(WRITE, 1, 1)
    logger.info(f"reviews applied to {version['reviews']['base_version']}: {version['reviews']}")
    return _published(logger, con, split, version)


def _published(logger: Any, con: Any, split: str, version: dict[str, Any]) -> Any:
    """Log the version written and publish its counts and card as the build's artifact."""
    logger.info(f"version {version['version_id']}: {version['counts']}")
    for note in version["notes"]:
        logger.warning(note)
    card = exports.dataset_card(con, split, version["version_id"], None)
    create_markdown_artifact(
        key=f"{split}-version",
        markdown=version_markdown(version) + "\n\n" + card,
        description=f"The {split} version this build wrote: its counts and dataset card",
    )
    return version


# A chunk's candidates, their LLM steps, and the task run that follows those.
Chunk = tuple[list[str], list[Future[gold.Records]], "PrefectFuture[Any] | None"]


class Reach(NamedTuple):
    """Where a round stands among the candidates the walk has handed out so far."""

    before: int  # handed out in earlier rounds
    total: int  # handed out, this round's included
    ranked: int  # resolved in earlier rounds: the place of this round's first candidate


def _lineage(
    client: Any,
    con: Any,
    settings: Settings,
    selection: Selection,
    steps: gold.Steps,
    shown: Any,
    targets: list[str],
    at: Reach,
) -> list[Chunk]:
    """Resolve the lineage of ``targets`` chunk by chunk, in this thread; each chunk's
    candidates start their LLM steps (a task run of their own) while the next is fetched."""
    chunks: list[Chunk] = []
    before, candidates = at.before, at.ranked
    memo = resolve.Memo()  # what earlier chunks fetched is not asked for again
    for part in pipeline.lineage_chunks(targets, settings):
        named = resolve_chunk.with_options(
            task_run_name=f"resolve-lineage targets {before + 1}-{before + len(part)}"
        )
        held = (_opaque(client), _opaque(con), _opaque(settings), _opaque(selection))
        resolved = named(*held, part, before, at.total, shown, _opaque(memo))
        chunks.append(_steps_of(steps, resolved, candidates))
        before, candidates = before + len(part), candidates + len(resolved)
        console.checkpoint()
    return chunks


def _lineage_on_dask(
    logger: Any,
    con: Any,
    settings: Settings,
    selection: Selection,
    shown: Any,
    targets: list[str],
    at: Reach,
) -> list[Chunk]:
    """Resolve every chunk of ``targets`` on the Dask workers at once, from a read-only copy
    of the warehouse, and write each chunk's responses and lineage in the chunks' order; then
    run the LLM steps of every chunk on the workers too (:func:`_steps_on_dask`)."""
    copy = Path(str(settings.warehouse) + ".reading-copy")
    offsets = boundary_store.cutoff_offsets(con, settings)
    parts = pipeline.lineage_chunks(targets, settings)
    resolved_parts: list[tuple[int, list[str]]] = []  # (candidates before, the chunk's)
    before, candidates = at.before, at.ranked
    with dask_runner.started(settings, logger.info) as runner:
        try:
            reading_copy.write(con, copy)
            futures = [
                runner.submit(
                    resolve_remote.with_options(
                        task_run_name=f"resolve-lineage targets {first + 1}-{first + len(part)}"
                    ),
                    parameters={
                        "settings": settings,  # a runner's own submit would not unquote
                        "copy": copy,
                        "split": selection.split,
                        "chunk": part,
                        "known": {t: selection.records[t] for t in part if t in selection.records},
                        "offsets": offsets,
                    },
                )
                for first, part in zip(
                    itertools.accumulate([at.before, *map(len, parts)]), parts, strict=False
                )
            ]
            for part, future in zip(parts, futures, strict=True):
                results, responses = future.result()
                ResponseStore(con).save(responses)
                resolved = pipeline.write_lineage(con, results, selection.split)
                resolved_parts.append((candidates, resolved))
                before, candidates = before + len(part), candidates + len(resolved)
                _advanced(logger, shown, before, at.total)
        finally:
            copy.unlink(missing_ok=True)
        return _steps_on_dask(runner, con, settings, resolved_parts)


@task(name="brief-audit-grade", **NO_STORE)
def steps_remote(
    settings: Settings, copy: Path, targets: list[str], first_rank: int, workers: int
) -> list[gold.Records]:
    """The LLM steps of ``targets`` on a Dask worker, from the build's read-only copy made once
    lineage was complete; returns each target's records, which the flow process writes."""
    return dask_runner.steps_records(settings, copy, targets, first_rank, workers)


def _steps_on_dask(
    runner: Any, con: Any, settings: Settings, parts: list[tuple[int, list[str]]]
) -> list[Chunk]:
    """Every chunk's LLM steps on the Dask workers at once. The retrieval check searches every
    paper, so they start once lineage is complete, from a read-only copy made then (its papers
    indexed); each chunk's records come back for :func:`_store` to write in the chunks' order,
    as a local build's do."""
    copy = Path(str(settings.warehouse) + ".steps-copy")
    try:
        reading_copy.write_for_steps(con, copy)
        workers = max(1, len(runner.client.scheduler_info()["workers"]))
        futures = [
            runner.submit(
                steps_remote.with_options(
                    task_run_name=f"brief-audit-grade targets {first + 1}-{first + len(part)}"
                ),
                parameters={
                    "settings": settings,
                    "copy": copy,
                    "targets": part,
                    "first_rank": first,
                    "workers": workers,
                },
            )
            if part
            else None
            for first, part in parts
        ]
        return [
            (part, [_done(records) for records in future.result()] if future else [], None)
            for (_, part), future in zip(parts, futures, strict=True)
        ]
    finally:
        copy.unlink(missing_ok=True)


def _done(records: gold.Records) -> Future[gold.Records]:
    """A target's records from a worker, as the future :func:`_store` reads them from."""
    future: Future[gold.Records] = Future()
    future.set_result(records)
    return future


def _steps_of(steps: gold.Steps, resolved: list[str], candidates: int) -> Chunk:
    """Start the LLM steps of a chunk's ``resolved`` candidates (after ``candidates`` others),
    with the task run that follows them."""
    steps_run = gold_chunk.with_options(
        task_run_name=f"brief-audit-grade targets {candidates + 1}-{candidates + len(resolved)}"
    )
    started = steps.submit(resolved)
    return resolved, started, steps_run.submit(_opaque(started)) if started else None


def _advanced(logger: Any, shown: Any, done: int, total: int) -> None:
    """Lineage's progress: the bar, the log every tenth, the artifact."""
    console.checkpoint()
    stages.advance(LINEAGE, done, total)
    if done == total or done % max(1, total // 10) == 0:
        logger.info(f"lineage: S2 reference lists {done}/{total}")
        update_progress_artifact(shown, LINEAGE_SHARE * done / max(1, total))


def _opaque(value: object) -> Any:
    """``value`` as a task parameter Prefect passes on without walking all it holds, as it
    otherwise does for each task run (a selection's records took seconds)."""
    return quote(value)


def _store(
    logger: Any, steps: gold.Steps, chunks: list[Chunk], total: int, shown: Any
) -> list[gold.Verdict]:
    """Write each target's records as soon as it and every target before it have ended;
    returns their verdicts, in order."""
    written = accepted = 0
    verdicts: list[gold.Verdict] = []
    for _, started, task_run in chunks:
        for future in started:
            verdicts.append(steps.store(future.result()))
            accepted += verdicts[-1].status is TargetStatus.ACCEPTED
            written += 1
            console.checkpoint()
            stages.advance(LLM_STEPS, written, total)
        if task_run is not None:
            task_run.wait()  # its state settles before the flow run's does
        update_progress_artifact(shown, LINEAGE_SHARE + (100 - LINEAGE_SHARE) * written / total)
        logger.info(f"briefs and grades: {written}/{total} ({accepted} accepted)")
    return verdicts


def version_markdown(version: dict[str, Any]) -> str:
    """The version's ID, label and counts, as the build's artifact in the Prefect UI."""
    lines = [
        f"# {version['version_id']}",
        "",
        f"Label: {version['label'] or '(none)'}; models {json.dumps(version['models'])}.",
        "",
        "| count | value |",
        "|---|---|",
        *(f"| {name} | {value:,} |" for name, value in sorted(version["counts"].items())),
        "",
        *(f"> {note}" for note in version["notes"]),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    from flows.console import one_line_errors_in_prefect_console

    one_line_errors_in_prefect_console()
    try:
        build_split(
            split=sys.argv[1] if len(sys.argv) > 1 else "eval",
            limit=int(sys.argv[2]) if len(sys.argv) > 2 else None,
        )
    except InspireError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
