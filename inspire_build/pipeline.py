"""The build in this process, no Prefect: :func:`build_split`, for tests, benchmarks and
notebooks that want a split version in seconds. It runs the build of ``inspire_build/driver/``,
as the ``build-split`` flow does (which adds task runs, its log and its artifacts); the steps
that build calls (``driver/steps.py``) are named here too, for the callers that run them one by
one.
"""

from __future__ import annotations

from typing import Any

import duckdb

from inspire_build import driver, splits
from inspire_build.config import Settings
from inspire_build.driver.steps import (
    check_openalex_key,
    check_sources,
    chunks,
    lineage,
    lineage_chunks,
    measured_rates,
    plan_of,
    select,
)
from inspire_build.http import HttpClient

__all__ = [
    "build_split",
    "check_openalex_key",
    "check_sources",
    "chunks",
    "lineage",
    "lineage_chunks",
    "measured_rates",
    "plan_of",
    "select",
    "write",
]


def write(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    label: str | None,
    targets: list[str],
) -> dict[str, Any]:
    """The last step alone: write the split version of the accepted targets among
    ``targets``, and return its row with its notes."""
    return splits.write_version(con, settings, split, label, targets).as_dict()


def build_split(
    con: duckdb.DuckDBPyConnection,
    client: HttpClient,
    settings: Settings,
    split: str,
    limit: int | None = None,
) -> dict[str, Any]:
    """Select (the first ``limit`` targets, else the split's limit), then build round by
    round: resolve chunk by chunk, each chunk's LLM steps starting beside the next chunk's
    lineage, as in the flow; write one split version and return its row."""
    return driver.build(con, client, settings, split, limit=limit)
