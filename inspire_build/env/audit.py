"""Cutoff-violation audit: what each backend returns, judged before our post-filter.

For every task, the brief and each of its sentences are sent to the backend; each raw result is
judged by our own first-public dates (:func:`inspire_build.env.core.verdict`). The violation
rate is the share of returned results first public on or after the cutoff. Undated results and
the target itself (under any ID) are counted beside it: SearchEnv withholds all three.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence

from inspire_build.env.agents import sentences
from inspire_build.env.core import Backend, Task, Verdict, verdict


@dataclasses.dataclass(frozen=True)
class AuditRow:
    backend: str
    queries: int
    returned: int
    late: int
    undated: int
    target: int

    @property
    def violation_rate(self) -> float:
        """Share of returned results dated at or after the cutoff."""
        return self.late / self.returned if self.returned else 0.0

    @property
    def undated_rate(self) -> float:
        return self.undated / self.returned if self.returned else 0.0


def audit_queries(brief: str) -> list[str]:
    return list(dict.fromkeys([brief, *sentences(brief)]))


def audit_backend(
    backend: Backend,
    tasks: Sequence[Task],
    k: int = 10,
    advance: Callable[[], None] = lambda: None,
) -> AuditRow:
    counts: Counter[Verdict] = Counter()
    queries = 0
    for task in tasks:
        for query in audit_queries(task.brief):
            counts.update(verdict(work, task) for work in backend.search(query, k, task.cutoff))
            queries += 1
        advance()
    return AuditRow(
        backend.name,
        queries,
        sum(counts.values()),
        counts[Verdict.LATE],
        counts[Verdict.UNDATED],
        counts[Verdict.TARGET],
    )
