"""Cutoff-violation audit: what each backend returns, judged before our post-filter.

For every task, the brief and each of its sentences are sent to the backend; each raw result is
judged by our own first-public dates (:func:`inspire_build.env.core.verdict`). The violation
rate is the share of returned results first public on or after the cutoff. Undated results and
the target itself (under any ID) are counted beside it: SearchEnv withholds all three.

A backend may be probed with a sample instead (:class:`Sample`): every brief still, each with
the whole brief and a seeded draw of its sentences. The row then says how many queries the
whole audit would have sent, and the rate is that sample's.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Sequence

from inspire_build.env.agents import sentences
from inspire_build.env.core import Backend, Task, Verdict, verdict


@dataclasses.dataclass(frozen=True)
class Sample:
    """``per_brief`` queries of each brief: the whole brief and ``per_brief - 1`` of its
    sentences, drawn with ``seed`` and the instance's ID (so a brief's draw does not depend on
    the other tasks). A brief with no more queries than that is probed in full."""

    per_brief: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.per_brief < 1:
            raise ValueError("a sample holds at least one query per brief (the brief)")


@dataclasses.dataclass(frozen=True)
class AuditRow:
    backend: str
    queries: int
    returned: int
    late: int
    undated: int
    target: int
    briefs: int  # tasks probed: every task, sampled or not
    population: int  # queries the whole audit sends: ``queries`` unless sampled
    sample: Sample | None = None

    @property
    def violation_rate(self) -> float:
        """Share of returned results dated at or after the cutoff."""
        return self.late / self.returned if self.returned else 0.0

    @property
    def undated_rate(self) -> float:
        return self.undated / self.returned if self.returned else 0.0

    @property
    def sampled(self) -> bool:
        return self.queries < self.population


def audit_queries(brief: str) -> list[str]:
    return list(dict.fromkeys([brief, *sentences(brief)]))


def sampled_queries(task: Task, sample: Sample | None) -> list[str]:
    """The queries ``task`` is probed with: all of :func:`audit_queries`, or ``sample``'s draw
    of them (the whole brief first, then the drawn sentences in the brief's order)."""
    queries = audit_queries(task.brief)
    if sample is None or len(queries) <= sample.per_brief:
        return queries
    whole, rest = queries[0], queries[1:]
    drawn = random.Random(f"{sample.seed}\0{task.instance_id}").sample(
        range(len(rest)), sample.per_brief - 1
    )
    return [whole, *(rest[i] for i in sorted(drawn))]


def audit_backend(
    backend: Backend,
    tasks: Sequence[Task],
    k: int = 10,
    advance: Callable[[], None] = lambda: None,
    sample: Sample | None = None,
) -> AuditRow:
    counts: Counter[Verdict] = Counter()
    queries = population = 0
    for task in tasks:
        for query in sampled_queries(task, sample):
            counts.update(verdict(work, task) for work in backend.search(query, k, task.cutoff))
            queries += 1
        population += len(audit_queries(task.brief))
        advance()
    return AuditRow(
        backend.name,
        queries,
        sum(counts.values()),
        counts[Verdict.LATE],
        counts[Verdict.UNDATED],
        counts[Verdict.TARGET],
        briefs=len(tasks),
        population=population,
        sample=sample if queries < population else None,
    )
