"""The build driver's choreography, with its steps stood in for: a round's chunks as named
tasks, each chunk's LLM steps followed by a task of their own, every record written in the
targets' order once lineage is complete; a Dask round that writes what a local one writes; and
a build recorded in ``build_runs``, even when a failed write left its connection unusable."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inspire_build import gold, warehouse
from inspire_build.config import Settings
from inspire_build.driver import Hooks, recorded, rounds, steps
from inspire_build.errors import Cancelled, WarehouseError
from inspire_build.instances import Walk
from inspire_build.models import TargetOutcome, TargetStatus
from tests.conftest import new_warehouse

TARGETS = [f"t{i}" for i in range(7)]
NO_LINEAGE = {"t1", "t4"}  # lineage leaves these without antecedents
ACCEPTED = {"t0", "t3", "t6"}
RESOLVED = [t for t in TARGETS if t not in NO_LINEAGE]


class Recording(Hooks):
    """Hooks that note each task and each stage, in order, and run every task in this thread
    (a Dask round's too)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.count = 2

    def run(self, name: str, label: str, step: Callable[..., Any], *args: Any) -> Any:
        self.events.append(label)
        return step(*args)

    def follow(self, name: str, label: str, step: Callable[..., Any], *args: Any) -> Any:
        self.events.append(label)
        return Followed(self.events, label, step(*args))

    def workers(self, settings: Settings) -> Any:
        return _Context(self)

    def submit(self, name: str, label: str, step: Callable[..., Any], parameters: Any) -> Any:
        self.events.append(f"{label} on a worker")
        return _done(REMOTE[name](**parameters))

    def progress(self, stage: str, done: int, total: int) -> None:
        self.events.append(f"{stage} {done}/{total}")


@dataclasses.dataclass
class Followed:
    events: list[str]
    label: str
    outcomes: list[str]

    def wait(self) -> None:
        self.events.append(f"waited for {self.label}: {self.outcomes}")


class _Context:
    def __init__(self, workers: Recording) -> None:
        self.workers = workers

    def __enter__(self) -> Recording:
        return self.workers

    def __exit__(self, *_: object) -> None:
        pass


class Pool:
    """gold.Steps, standing in: each target's records at once; what is written, in order."""

    def __init__(self, *_: object) -> None:
        self.written: list[str] = []
        self.complete_at: int | None = None
        POOLS.append(self)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def submit(self, targets: Iterable[str]) -> list[Future[gold.Records]]:
        return [_done(_records(t)) for t in targets]

    def corpus_complete(self, index: bool = True) -> None:
        self.complete_at = len(self.written)

    def store(self, records: gold.Records) -> gold.Verdict:
        self.written.append(records.verdict.target_id)
        return records.verdict


POOLS: list[Pool] = []


def _records(target: str) -> gold.Records:
    accepted = target in ACCEPTED
    status = TargetStatus.ACCEPTED if accepted else TargetStatus.EXCLUDED
    kind = TargetOutcome.ACCEPTED if accepted else TargetOutcome.NO_ANTECEDENT
    return gold.Records(gold.Verdict(target, status, kind, "stood in"), calls=[])


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def _lineage(*args: Any) -> list[str]:
    *_, progress, chunk, _memo = args
    progress(len(chunk), len(chunk))
    return _candidates(chunk)


REMOTE: dict[str, Callable[..., Any]] = {
    "resolve-lineage": lambda targets, **_: (targets, []),
    "brief-audit-grade": lambda targets, **_: [_records(t) for t in targets],
}


@pytest.fixture(autouse=True)
def stood_in(monkeypatch: pytest.MonkeyPatch) -> None:
    POOLS.clear()
    monkeypatch.setattr(gold, "Steps", Pool)
    monkeypatch.setattr(steps, "lineage", _lineage)
    monkeypatch.setattr(steps, "write_lineage", lambda _, chunk, __: _candidates(chunk))
    for name in ("write", "write_for_steps"):
        monkeypatch.setattr(rounds.reading_copy, name, lambda *_: None)
    monkeypatch.setattr(rounds.boundary_store, "cutoff_offsets", lambda *_: None)


def _candidates(chunk: list[str]) -> list[str]:
    return [t for t in chunk if t not in NO_LINEAGE]


def _round(runner: str) -> tuple[Walk, Recording]:
    settings = Settings(chunk_size=3, llm_backend="rules", runner=runner, warehouse="w.duckdb")
    selection = dataclasses.make_dataclass("Chosen", ["split", "records"])("eval", {})
    walk, hooks = Walk(TARGETS, wanted=None), Recording()
    con = duckdb.connect(":memory:")
    warehouse.migrate(con)
    rounds.Rounds(con, None, settings, selection, None, hooks).run(walk, walk.next_round())  # type: ignore[arg-type]
    return walk, hooks


def test_a_round_names_its_tasks_and_writes_in_the_targets_order() -> None:
    walk, hooks = _round("local")
    tasks = [e for e in hooks.events if "targets" in e]
    assert tasks == [
        "resolve-lineage targets 1-3",
        "brief-audit-grade targets 1-2",  # t1 has no antecedents: the chunk's candidates
        "resolve-lineage targets 4-6",
        "brief-audit-grade targets 3-4",
        "resolve-lineage targets 7-7",
        "brief-audit-grade targets 5-5",
        "waited for brief-audit-grade targets 1-2: ['accepted', 'no_graded_antecedent']",
        "waited for brief-audit-grade targets 3-4: ['accepted', 'no_graded_antecedent']",
        "waited for brief-audit-grade targets 5-5: ['accepted']",
    ]
    assert (walk.resolved, walk.accepted) == (RESOLVED, ["t0", "t3", "t6"])
    assert POOLS[-1].written == RESOLVED
    assert POOLS[-1].complete_at == 0  # every chunk's lineage before any record is written
    assert "lineage: S2 reference lists 7/7" in hooks.events
    assert hooks.events[-2] == "briefs, audits, grades 5/5"


def test_a_dask_round_writes_what_a_local_one_writes() -> None:
    local, _ = _round("local")
    dask, hooks = _round("dask")
    assert (dask.resolved, dask.accepted) == (local.resolved, local.accepted)
    assert POOLS[-1].written == POOLS[0].written == RESOLVED
    assert [e for e in hooks.events if e.endswith("on a worker")] == [
        "resolve-lineage targets 1-3 on a worker",
        "resolve-lineage targets 4-6 on a worker",
        "resolve-lineage targets 7-7 on a worker",
        "brief-audit-grade targets 1-2 on a worker",
        "brief-audit-grade targets 3-4 on a worker",
        "brief-audit-grade targets 5-5 on a worker",
    ]


def _runs(path: Path) -> list[tuple[str, str | None, str | None]]:
    con = duckdb.connect(str(path))
    try:
        return con.execute("SELECT status, version_id, reason FROM build_runs").fetchall()
    finally:
        con.close()


def _record(path: Path, made: Callable[[], dict[str, Any]], run_id: str = "r1") -> Any:
    con = warehouse.connect(path)
    warehouse.migrate(con)
    now = dt.datetime.now(dt.UTC)
    try:
        return recorded(con, path, run_id, "eval", now, made, Hooks())
    finally:
        con.close()


def test_a_build_is_recorded_completed_with_its_version(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    assert _record(path, lambda: {"version_id": "eval-1"}) == {"version_id": "eval-1"}
    assert _runs(path) == [("completed", "eval-1", None)]


def test_a_stopped_build_is_recorded_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"

    def stopped() -> dict[str, Any]:
        raise Cancelled("cancelled by SIGTERM")

    with pytest.raises(Cancelled):
        _record(path, stopped)
    assert _runs(path) == [("cancelled", None, "Cancelled: cancelled by SIGTERM")]


def test_a_failed_write_is_recorded_through_a_fresh_connection(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    con = new_warehouse(path)

    def failed() -> dict[str, Any]:
        con.close()  # as DuckDB leaves a connection after a failed write: unusable
        raise duckdb.IOException("No space left on device")

    with pytest.raises(WarehouseError, match="the disk is full"):  # said in one line
        recorded(con, path, "r1", "eval", dt.datetime.now(dt.UTC), failed, Hooks())
    [(status, version, reason)] = _runs(path)
    assert (status, version) == ("failed", None) and reason and "disk is full" in reason
