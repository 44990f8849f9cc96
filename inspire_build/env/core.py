"""The agent search environment: search, read and submit for one instance, under a budget.

Rules (the interface every agent shares, so no agent brings its own leaky date filter):

- Only works whose first public date is strictly before the instance's cutoff are returned or
  readable; a work with no known date is withheld. A year-only date counts from its last day.
- The target is withheld under every one of its IDs and aliases, its other versions included
  (``Task.withheld``). A read of a withheld work answers ``not_available``, exactly as for an
  unknown ID, so a refusal never tells the agent that it guessed the target. The backend is
  asked first and the verdict given after, so a refusal costs the same work for every ID.
- Each search or read costs one call and is logged as a step (tool, query, exposed IDs,
  latency), in the trajectory format ``inspire eval --trajectories`` reads. Submit is free and
  final; the submitted ranking is the run line.
- A call past the budget, or after submit, is refused with a status, not an exception, and is
  not logged: it exposed nothing.

Backends only *try* to respect the cutoff (a search is asked for works before it); every result
is checked again here, against our own first-public dates, before the agent sees it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Protocol

from inspire_build.env.limits import MAX_K
from inspire_build.errors import InvalidIdError
from inspire_build.ids import parse_any_id

MAX_RANKING = 100
# Tool calls per instance. The paper's Table 2 reports mean calls of 17.7 to 34.7 per target
# (26.3 for GPT-5.6-Sol, 34.7 for Gemini 3.5 Flash), so a budget must allow more than those.
DEFAULT_BUDGET = 50


@dataclasses.dataclass(frozen=True)
class Task:
    """One instance as the environment holds it. Agents are shown the brief and cutoff only."""

    instance_id: str
    brief: str
    cutoff: dt.date
    withheld: frozenset[str] = frozenset()  # the target's paper IDs and aliases: never shown


@dataclasses.dataclass(frozen=True)
class Work:
    """One result or record from a backend, with what the post-filter needs."""

    paper_id: str
    public_by: dt.date | None  # last day its first public record may be; None: undated
    ids: frozenset[str] = frozenset()  # other canonical IDs the backend gave for it
    title: str | None = None
    abstract: str | None = None
    year: int | None = None
    authors: tuple[str, ...] = ()
    score: float = 0.0


class Backend(Protocol):
    name: str

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        """Up to ``k`` works for ``query``, asked to be public before ``cutoff`` (not trusted)."""
        ...

    def read(self, paper_id: str) -> Work | None:
        """One work by any of its IDs, with its abstract and authors; None when unknown."""
        ...


class Verdict(StrEnum):
    SHOWN = "shown"
    LATE = "late"  # first public on or after the cutoff
    UNDATED = "undated"
    TARGET = "target"  # the target, under one of its IDs or aliases


def verdict(work: Work, task: Task) -> Verdict:
    """Whether the agent may see ``work`` on ``task``; the reason when it may not."""
    if work.paper_id in task.withheld or not task.withheld.isdisjoint(work.ids):
        return Verdict.TARGET
    if work.public_by is None:
        return Verdict.UNDATED
    if work.public_by >= task.cutoff:
        return Verdict.LATE
    return Verdict.SHOWN


class Status(StrEnum):
    OK = "ok"
    NOT_AVAILABLE = "not_available"  # unknown, undated, too recent, or the target: one answer
    BUDGET_EXHAUSTED = "budget_exhausted"
    SUBMITTED = "submitted"  # the session is over


@dataclasses.dataclass(frozen=True)
class Found:
    """A search result as the agent sees it."""

    paper_id: str
    title: str | None
    year: int | None
    score: float


@dataclasses.dataclass(frozen=True)
class SearchResult:
    status: Status
    results: tuple[Found, ...]
    budget_left: int

    @property
    def budget_exhausted(self) -> bool:
        return self.status is Status.BUDGET_EXHAUSTED


@dataclasses.dataclass(frozen=True)
class PaperView:
    """What read() shows: title, abstract, year and authors."""

    paper_id: str
    title: str | None
    abstract: str | None
    year: int | None
    authors: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ReadResult:
    status: Status
    paper: PaperView | None
    budget_left: int


@dataclasses.dataclass(frozen=True)
class SubmitResult:
    status: Status
    ranking: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Step:
    """One logged call. ``verdicts`` counts the backend's raw results, for the leak audit."""

    tool: str
    query: str
    exposed: tuple[str, ...]
    latency_ms: float
    k: int | None = None
    verdicts: tuple[tuple[Verdict, int], ...] = ()

    def line(self) -> dict[str, object]:
        """The step in the trajectory JSONL format (``evaluation/inputs.read_trajectories``)."""
        return {
            "tool": self.tool,
            "query": self.query,
            "k": self.k,
            "exposed": list(self.exposed),
            "latency_ms": round(self.latency_ms, 3),
        }


def clean_ranking(ranking: Sequence[str], limit: int = MAX_RANKING) -> tuple[str, ...]:
    """IDs stripped, blanks dropped, a duplicate (one paper in two spellings, ``ARXIV:1210.0002``
    and ``arxiv:1210.0002``) kept at its first position, at most ``limit``: a repeat would take
    one of the ranking's places."""
    kept: dict[str, str] = {}
    for text in (t.strip() for t in ranking if t and t.strip()):
        kept.setdefault(_same_paper(text), text)
    return tuple(kept.values())[:limit]


def _same_paper(text: str) -> str:
    """What two spellings of one paper share: its canonical ID, else the text itself."""
    try:
        return str(parse_any_id(text))
    except InvalidIdError:
        return text


class SearchEnv:
    """search / read / submit for one task, with a budget of tool calls and a step log.

    A session resumed from the warehouse passes the ``steps`` it already took (they count
    against the budget) and, once final, what it ``submitted``.
    """

    def __init__(
        self,
        task: Task,
        budget: int,
        backend: Backend,
        clock: Callable[[], float] = time.perf_counter,
        *,
        steps: Sequence[Step] = (),
        submitted: Sequence[str] | None = None,
    ) -> None:
        if budget < 0:
            raise ValueError("budget must be >= 0")
        self.task, self.budget, self.backend = task, budget, backend
        self.steps: list[Step] = list(steps)
        self.submitted: tuple[str, ...] | None = None if submitted is None else tuple(submitted)
        self._clock = clock

    @property
    def brief(self) -> str:
        return self.task.brief

    @property
    def cutoff(self) -> dt.date:
        return self.task.cutoff

    @property
    def budget_left(self) -> int:
        return self.budget - len(self.steps)

    def _refusal(self) -> Status | None:
        if self.submitted is not None:
            return Status.SUBMITTED
        if self.budget_left <= 0:
            return Status.BUDGET_EXHAUSTED
        return None

    def search(self, query: str, k: int = 10) -> SearchResult:
        refused = self._refusal()
        if refused is not None:
            return SearchResult(refused, (), max(0, self.budget_left))
        k = max(1, min(MAX_K, k))
        started = self._clock()
        raw = self.backend.search(query, k, self.task.cutoff)
        latency = (self._clock() - started) * 1000
        judged = [(work, verdict(work, self.task)) for work in raw]
        shown = [work for work, v in judged if v is Verdict.SHOWN][:k]
        counts = {v: sum(1 for _, w in judged if w is v) for v in Verdict}
        self.steps.append(
            Step(
                "search",
                query,
                tuple(w.paper_id for w in shown),
                latency,
                k,
                tuple((v, n) for v, n in counts.items() if n),
            )
        )
        found = tuple(Found(w.paper_id, w.title, w.year, w.score) for w in shown)
        return SearchResult(Status.OK, found, self.budget_left)

    def read(self, paper_id: str) -> ReadResult:
        refused = self._refusal()
        if refused is not None:
            return ReadResult(refused, None, max(0, self.budget_left))
        started = self._clock()
        work = self.backend.read(paper_id.strip())
        latency = (self._clock() - started) * 1000
        if work is None or verdict(work, self.task) is not Verdict.SHOWN:
            self.steps.append(Step("read", paper_id, (), latency))
            return ReadResult(Status.NOT_AVAILABLE, None, self.budget_left)
        self.steps.append(Step("read", paper_id, (work.paper_id,), latency))
        view = PaperView(work.paper_id, work.title, work.abstract, work.year, work.authors)
        return ReadResult(Status.OK, view, self.budget_left)

    def submit(self, ranking: Sequence[str]) -> SubmitResult:
        if self.submitted is not None:
            return SubmitResult(Status.SUBMITTED, self.submitted)
        self.submitted = clean_ranking(ranking)
        return SubmitResult(Status.OK, self.submitted)

    def run_line(self) -> dict[str, object]:
        """The run JSONL line; an unsubmitted session submits nothing (it scores 0)."""
        return {"instance_id": self.task.instance_id, "ranking": list(self.submitted or ())}

    def trajectory_line(self, scores_revealed: bool = False) -> dict[str, object]:
        """The trajectory JSONL line. ``scores_revealed`` marks a session that a debugging
        server answered with its scores: not a fair run."""
        return {
            "instance_id": self.task.instance_id,
            "steps": [step.line() for step in self.steps],
            "scores_revealed": scores_revealed,
        }
