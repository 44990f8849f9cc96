"""A build's rounds: a round's lineage chunk by chunk, each chunk's LLM steps beside the next
chunk's lineage (or every chunk on the Dask workers), and its records written in order."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from inspire_build import boundary_store, dask_runner, gold, resolve
from inspire_build.config import Settings
from inspire_build.driver import steps
from inspire_build.driver.hooks import (
    LINEAGE,
    LINEAGE_SHARE,
    LLM_STEPS,
    RESOLVE_TASK,
    STEPS_TASK,
    Hooks,
    Waitable,
    Workers,
)
from inspire_build.http import HttpClient, ResponseStore
from inspire_build.instances import Walk
from inspire_build.llm import LLM
from inspire_build.models import TargetStatus
from inspire_build.selection import Selection
from inspire_build.tables import reading_copy

# A chunk's candidates, their LLM steps, and the task that follows those.
Chunk = tuple[list[str], list[Future[gold.Records]], Waitable | None]


class Reach(NamedTuple):
    """Where a round stands among the candidates the walk has handed out so far."""

    before: int  # handed out in earlier rounds
    total: int  # handed out, this round's included
    ranked: int  # resolved in earlier rounds: the place of this round's first candidate


def _label(name: str, before: int, count: int) -> str:
    return f"{name} targets {before + 1}-{before + count}"


@dataclasses.dataclass
class Rounds:
    """The rounds of one build: what they share (the LLM, the records fetched so far)."""

    con: duckdb.DuckDBPyConnection
    client: HttpClient
    settings: Settings
    selection: Selection
    llm: LLM
    hooks: Hooks
    memo: resolve.Memo = dataclasses.field(default_factory=resolve.Memo)

    def run(self, walk: Walk, part: list[str]) -> None:
        """Lineage of ``part``, each chunk's LLM steps beside the next chunk's lineage; every
        step of the round ends (and is written) before the walk goes on."""
        at = Reach(walk.taken - len(part), walk.taken, len(walk.resolved))
        with gold.Steps(self.llm, self.con, self.settings, at.ranked, self.client) as pool:
            if self.settings.runner == "dask":
                chunks = self._on_dask(part, at)
            else:
                chunks = self._here(pool, part, at)
            resolved = [target for chunk, _, _ in chunks for target in chunk]
            self.hooks.say(
                f"lineage done: {len(resolved)} of {len(part)} target(s) have antecedents"
            )
            pool.corpus_complete()  # the retrieval checks waiting for every paper may search now
            verdicts = self._store(pool, chunks, len(resolved))
        walk.record(resolved, steps.accepted_of(resolved, verdicts))

    def _here(self, pool: gold.Steps, part: list[str], at: Reach) -> list[Chunk]:
        """Resolve ``part`` chunk by chunk in this thread; each chunk's candidates start their
        LLM steps in ``pool`` (a task of their own follows them) while the next is fetched."""
        chunks: list[Chunk] = []
        before, candidates = at.before, at.ranked
        for part_of in steps.lineage_chunks(part, self.settings):
            shown = functools.partial(self._lineage_done, before, at.total)
            args = (self.con, self.client, self.settings, self.selection, shown, part_of)
            label = _label(RESOLVE_TASK, before, len(part_of))
            resolved = self.hooks.run(RESOLVE_TASK, label, steps.lineage, *args, self.memo)
            started = pool.submit(resolved)
            label = _label(STEPS_TASK, candidates, len(resolved))
            follows = self.hooks.follow(STEPS_TASK, label, outcomes, started) if started else None
            chunks.append((resolved, started, follows))
            before, candidates = before + len(part_of), candidates + len(resolved)
        return chunks

    def _on_dask(self, part: list[str], at: Reach) -> list[Chunk]:
        """Resolve every chunk of ``part`` on the Dask workers at once, from a read-only copy
        of the warehouse, and write each chunk's responses and lineage in the chunks' order;
        then run every chunk's LLM steps on the workers too (:meth:`_steps_on_dask`)."""
        copy = Path(str(self.settings.warehouse) + ".reading-copy")
        offsets = boundary_store.cutoff_offsets(self.con, self.settings)
        parts = steps.lineage_chunks(part, self.settings)
        firsts = itertools.accumulate([at.before, *map(len, parts)])
        numbered = list(zip(firsts, parts, strict=False))  # (targets before, the chunk)
        known = self.selection.records
        resolved: list[tuple[int, list[str]]] = []  # (candidates before, the chunk's)
        candidates = at.ranked
        with self.hooks.workers(self.settings) as workers:
            try:
                reading_copy.write(self.con, copy)
                futures = _submitted(
                    workers,
                    RESOLVE_TASK,
                    steps.resolve_on_worker,
                    numbered,
                    lambda _, chunk: {
                        "settings": self.settings,
                        "copy": copy,
                        "split": self.selection.split,
                        "targets": chunk,
                        "known": {t: known[t] for t in chunk if t in known},
                        "offsets": offsets,
                    },
                )
                for (first, chunk), future in zip(numbered, futures, strict=True):
                    results, responses = future.result()
                    ResponseStore(self.con).save(responses)
                    written = steps.write_lineage(self.con, results, self.selection.split)
                    resolved.append((candidates, written))
                    candidates += len(written)
                    self._lineage_done(first, at.total, len(chunk), len(chunk))
            finally:
                copy.unlink(missing_ok=True)
            return self._steps_on_dask(workers, resolved)

    def _steps_on_dask(self, workers: Workers, parts: list[tuple[int, list[str]]]) -> list[Chunk]:
        """Every chunk's LLM steps on the Dask workers at once. The retrieval check searches
        every paper, so they start once lineage is complete, from a read-only copy made then
        (its papers indexed); each chunk's records come back for :meth:`_store` to write in the
        chunks' order, as a local build's do."""
        copy = Path(str(self.settings.warehouse) + ".steps-copy")
        try:
            reading_copy.write_for_steps(self.con, copy)
            count = workers.count
            futures = _submitted(
                workers,
                STEPS_TASK,
                dask_runner.steps_records,
                parts,
                lambda first, part: {
                    "settings": self.settings,
                    "copy": copy,
                    "targets": part,
                    "first_rank": first,
                    "workers": count,
                },
            )
            return [
                (part, [_done(records) for records in future.result()] if future else [], None)
                for (_, part), future in zip(parts, futures, strict=True)
            ]
        finally:
            copy.unlink(missing_ok=True)

    def _store(self, pool: gold.Steps, chunks: list[Chunk], total: int) -> list[gold.Verdict]:
        """Write each target's records as soon as it and every target before it have ended;
        returns their verdicts, in order."""
        written = accepted = 0
        verdicts: list[gold.Verdict] = []
        for _, started, follows in chunks:
            for future in started:
                verdicts.append(pool.store(future.result()))
                accepted += verdicts[-1].status is TargetStatus.ACCEPTED
                written += 1
                self.hooks.progress(LLM_STEPS, written, total)
            if follows is not None:
                follows.wait()  # its task's state settles before the build's does
            self.hooks.share(LINEAGE_SHARE + (100 - LINEAGE_SHARE) * written / max(1, total))
            self.hooks.say(f"briefs and grades: {written}/{total} ({accepted} accepted)")
        return verdicts

    def _lineage_done(self, before: int, total: int, done: int, _: int) -> None:
        """Lineage's progress: ``done`` of a chunk that follows ``before`` of the ``total``
        targets handed out; said every tenth."""
        done += before
        self.hooks.progress(LINEAGE, done, total)
        if done == total or done % max(1, total // 10) == 0:
            self.hooks.say(f"lineage: S2 reference lists {done}/{total}")
            self.hooks.share(LINEAGE_SHARE * done / max(1, total))


def _submitted(
    workers: Workers,
    name: str,
    step: Callable[..., Any],
    parts: list[tuple[int, list[str]]],
    parameters: Callable[[int, list[str]], dict[str, Any]],
) -> list[Any]:
    """Task ``name`` (``step``) on the workers for each of ``parts`` at once, each part its
    targets after ``first`` others (none for an empty part): their futures, in order."""
    return [
        workers.submit(name, _label(name, first, len(part)), step, parameters(first, part))
        if part
        else None
        for first, part in parts
    ]


def _done(records: gold.Records) -> Future[gold.Records]:
    """A target's records from a worker, as the future :meth:`Rounds._store` reads them from."""
    future: Future[gold.Records] = Future()
    future.set_result(records)
    return future


def outcomes(started: list[Future[gold.Records]]) -> list[str]:
    """What a chunk's LLM steps, ``started`` in the build's pool, ended with: the task that
    follows them (:meth:`Hooks.follow`) lasts while they run."""
    return [future.result().verdict.kind.value for future in started]
