"""Build runs: one row per build, so that concurrent, failed and killed builds all leave a record.

A build records itself once it holds the warehouse's write lock. Holding the lock proves that no
other build process is alive, so any row still ``running`` then belongs to a process that died
(killed, or its machine lost) and is closed as ``interrupted``.
"""

from __future__ import annotations

import datetime as dt
import os

import duckdb

from inspire_build import warehouse
from inspire_build.errors import Cancelled

KEY = ["run_id"]


def begin(
    con: duckdb.DuckDBPyConnection, run_id: str, split: str, requested_at: dt.datetime
) -> int:
    """Record a build that has just got the lock; returns how many dead builds it closed."""
    now = dt.datetime.now(dt.UTC)
    with warehouse.transaction(con):
        closed = warehouse.update_where(
            con,
            "build_runs",
            {
                "status": "interrupted",
                "finished_at": now,
                "reason": "its process ended before the build finished (killed or crashed)",
            },
            {"status": "running"},
        )
        warehouse.upsert(
            con,
            "build_runs",
            [
                {
                    "run_id": run_id,
                    "split": split,
                    "status": "running",
                    "reason": None,
                    "version_id": None,
                    "requested_at": requested_at,
                    "started_at": now,
                    "waited_s": (now - requested_at).total_seconds(),
                    "finished_at": None,
                    "pid": os.getpid(),
                }
            ],
            KEY,
        )
    return closed


def finish(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    version_id: str | None = None,
    error: BaseException | None = None,
) -> None:
    """Close a build's row: completed with its version, cancelled (a Cancelled error), or
    failed with the error's message."""
    status = "completed" if error is None else "failed"
    if isinstance(error, Cancelled):
        status = "cancelled"
    warehouse.update_where(
        con,
        "build_runs",
        {
            "status": status,
            "reason": f"{type(error).__name__}: {error}" if error else None,
            "version_id": version_id,
            "finished_at": dt.datetime.now(dt.UTC),
        },
        {"run_id": run_id},
    )
