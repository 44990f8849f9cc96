"""The build steps in order, as plain calls in this process: no Prefect.

``flows/build_split.py`` runs these steps as Prefect tasks (state, retries, the UI, chunked LLM
steps with progress). This module is the same wiring for tests, benchmarks and notebooks that
want a split version in seconds; both resolve lineage through :func:`lineage`, so both apply
the split's window on first public dates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb

from inspire_build import boundary_store, gold, lineage_rows, resolve, splits, warehouse
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.http import HttpClient
from inspire_build.models import TargetStatus
from inspire_build.selection import Selection, select_targets


def lineage(
    con: duckdb.DuckDBPyConnection,
    client: HttpClient,
    settings: Settings,
    selection: Selection,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Resolve and write every selected target's lineage; returns those left as candidates."""
    config = settings.split(selection.split)
    results = resolve.resolve_lineage(
        selection.selected,
        client,
        existing=warehouse.crosswalk(con),
        known_records=selection.records,
        progress=progress,
        window=(config.start, config.end),
        cutoff_offset=boundary_store.cutoff_offsets(con, settings),
    )
    lineage_rows.write(con, results, selection.split, resolve.ALL_SOURCES)
    return [r.work.paper_id for r in results if r.status is TargetStatus.CANDIDATE]


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
    """Select, resolve, brief/audit/grade and write one split version; returns its row."""
    selection = select_targets(client, con, settings, split, limit)
    candidates = lineage(con, client, settings, selection)
    gold.run(gold.make_llm(settings, con), con, settings, candidates)
    return splits.write_version(con, settings, split, targets=candidates)
