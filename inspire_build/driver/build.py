"""A build from end to end: :func:`run` (as the flow runs it) opens the warehouse, records the
build in ``build_runs`` (:func:`recorded`) and runs :func:`build`, which selects the targets,
walks them round by round (``rounds.py``) and writes the version last."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import build_runs, dask_runner, exports, gold, plan, splits, warehouse
from inspire_build.config import Settings
from inspire_build.driver import steps
from inspire_build.driver.hooks import (
    REVIEWS_TASK,
    SELECT,
    SELECT_TASK,
    WRITE,
    WRITE_TASK,
    Hooks,
)
from inspire_build.driver.rounds import Rounds
from inspire_build.errors import InspireError
from inspire_build.http import HttpClient
from inspire_build.review import apply
from inspire_build.sources import make_client


def run(
    settings: Settings,
    split: str,
    label: str | None = None,
    *,
    reviews: bool = False,
    run_id: str | None = None,
    hooks: Hooks | None = None,
) -> dict[str, Any]:
    """A whole build, as the flow runs it: check its sources (a configuration error fails at
    once, before any request), open the warehouse (waiting for another build to end), record
    the build as ``run_id`` (:func:`recorded`), build ``split`` (:func:`build`), or with
    ``reviews`` write its latest version again with the curators' reviews applied
    (:func:`reviewed`), and publish the version; returns its row."""
    hooks = hooks or Hooks()
    if not reviews:
        steps.check_sources(settings, split)
        if settings.runner == "dask":
            dask_runner.require()
    requested = dt.datetime.now(dt.UTC)
    path = settings.warehouse
    with warehouse.open_warehouse(path, wait_s=3600, say=hooks.say, stopped=hooks.signalled) as con:

        def made() -> dict[str, Any]:
            if reviews:
                version = reviewed(con, settings, split, label, hooks)
            else:
                version = build(
                    con, make_client(settings, con), settings, split, label, None, hooks
                )
            hooks.say(f"version {version['version_id']}: {version['counts']}")
            for note in version["notes"]:
                hooks.say(note, warning=True)
            card = exports.dataset_card(con, split, version["version_id"], None)
            hooks.publish(split, version, card)
            return version

        return recorded(con, path, run_id or uuid.uuid4().hex, split, requested, made, hooks)


def recorded(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    run_id: str,
    split: str,
    requested: dt.datetime,
    made: Callable[[], dict[str, Any]],
    hooks: Hooks,
) -> dict[str, Any]:
    """``made()`` as build ``run_id`` of ``split``, recorded in ``build_runs``: running, then
    completed with its version, or cancelled or failed with the error it raises (as
    ``hooks.stopped`` gives it; a warehouse's error, such as a full disk, in one line)."""
    if closed := build_runs.begin(con, run_id, split, requested):
        hooks.say(f"closed {closed} earlier build(s) that died before finishing")
    try:
        version = made()
    except BaseException as error:
        stopped = hooks.stopped(error)
        if not isinstance(stopped, Exception):  # its row stays running: the next build closes it
            raise
        if isinstance(stopped, duckdb.Error):
            stopped = warehouse.translate(stopped, path) or stopped
        _failed(con, path, run_id, stopped)
        if stopped is not error:
            raise stopped from error
        raise
    build_runs.finish(con, run_id, version_id=version["version_id"])
    return version


def _failed(con: duckdb.DuckDBPyConnection, path: Path, run_id: str, error: Exception) -> None:
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


def build(
    con: duckdb.DuckDBPyConnection,
    client: HttpClient,
    settings: Settings,
    split: str,
    label: str | None = None,
    limit: int | None = None,
    hooks: Hooks | None = None,
) -> dict[str, Any]:
    """Select ``split``'s targets (the first ``limit``, else the split's limit), build them
    round by round, write one split version and return its row, with its notes."""
    hooks = hooks or Hooks()
    measured = steps.measured_rates(con, settings, split)  # before selection rewrites them
    hooks.progress(SELECT, 0, 1)
    selection = hooks.run(
        SELECT_TASK, SELECT_TASK, steps.select, client, con, settings, split, limit
    )
    hooks.progress(SELECT, 1, 1)
    hooks.say(f"{split}: {len(selection.selected)} target(s) selected")
    hooks.share(0.0)
    works = [selection.records[t] for t in selection.selected if t in selection.records]
    planned = steps.plan_of(settings, split, works, measured)
    for line in plan.lines(planned, settings.llm_model):
        hooks.say(f"plan: {line}")
    walk, llm = steps.start_walk(settings, selection), gold.make_llm(settings, con)
    rounds = Rounds(con, client, settings, selection, llm, hooks)
    while part := walk.next_round():
        if walk.wanted is not None:
            hooks.say(
                f"{len(walk.accepted)} of {walk.wanted} instances from {len(walk.resolved)} "
                f"candidate(s) so far: building {len(part)} more"
            )
        rounds.run(walk, part)
    notes = steps.end_walk(con, selection, walk)
    made = {source: stats.network for source, stats in client.stats.items()}
    for line in plan.actual_lines(planned, made, llm.calls_made, llm.budget.spent_usd):
        hooks.say(f"made: {line}")
    hooks.progress(WRITE, 0, 1)
    version = hooks.run(
        WRITE_TASK, WRITE_TASK, splits.write_version, con, settings, split, label, walk.kept
    )
    hooks.progress(WRITE, 1, 1)
    hooks.share(100.0)
    return {**version.as_dict(), "notes": [*version.notes, *notes]}


def reviewed(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    label: str | None,
    hooks: Hooks,
) -> dict[str, Any]:
    """The split's latest version written again with the curators' reviews applied: from the
    version's own records, with no lineage or LLM step."""
    hooks.progress(WRITE, 0, 1)
    version = hooks.run(
        REVIEWS_TASK, REVIEWS_TASK, apply.apply_reviews, con, settings, split, label
    )
    hooks.progress(WRITE, 1, 1)
    hooks.say(f"reviews applied to {version['reviews']['base_version']}: {version['reviews']}")
    return version


def summary(version: dict[str, Any]) -> str:
    """The version's ID, label and counts, in markdown."""
    counts = sorted(version["counts"].items())
    return "\n".join(
        [
            f"# {version['version_id']}",
            "",
            f"Label: {version['label'] or '(none)'}; models {json.dumps(version['models'])}.",
            "",
            "| count | value |",
            "|---|---|",
            *(f"| {name} | {value:,} |" for name, value in counts),
            "",
            *(f"> {note}" for note in version["notes"]),
        ]
    )
