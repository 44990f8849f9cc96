"""env/audit.py: which queries a brief is probed with, whole or sampled, and what a row says."""

from __future__ import annotations

import datetime as dt

import pytest

from inspire_build.env import audit
from inspire_build.env.core import Task, Work

CUTOFF = dt.date(2024, 6, 1)
BRIEF = (
    "Sparse retrieval fails on long documents. Indexes grow too large. Queries drift over "
    "time. Updates must be cheap. Memory is bounded. Latency matters most."
)  # the whole brief and its 6 sentences: 7 queries


class Dated:
    """Answers every query with one work before the cutoff and one on it."""

    name = "dated"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        self.queries.append(query)
        return [Work("early", cutoff - dt.timedelta(days=1)), Work("late", cutoff)][:k]

    def read(self, paper_id: str) -> Work | None:
        return None


def _tasks(n: int) -> list[Task]:
    return [Task(f"i{i}", BRIEF, CUTOFF) for i in range(n)]


def test_without_a_sample_every_sentence_is_a_query() -> None:
    (task,) = _tasks(1)
    assert audit.sampled_queries(task, None) == audit.audit_queries(BRIEF)
    assert len(audit.audit_queries(BRIEF)) == 7


def test_a_sample_keeps_the_whole_brief_and_draws_its_sentences_in_order() -> None:
    task, other = _tasks(2)
    whole = audit.audit_queries(BRIEF)
    drawn = audit.sampled_queries(task, audit.Sample(3, seed=0))
    assert len(drawn) == 3 and drawn[0] == BRIEF
    assert set(drawn) <= set(whole)
    assert drawn[1:] == [q for q in whole[1:] if q in drawn[1:]]  # the brief's order
    # The same seed and instance draw the same sentences, wherever the task stands.
    assert audit.sampled_queries(task, audit.Sample(3, seed=0)) == drawn
    assert audit.sampled_queries(_tasks(1)[0], audit.Sample(3, seed=0)) == drawn
    # Another seed or instance draws otherwise (for some of them: 15 draws of 2 in 6).
    seeds = {tuple(audit.sampled_queries(task, audit.Sample(3, seed=s))) for s in range(8)}
    instances = {tuple(audit.sampled_queries(t, audit.Sample(3))) for t in _tasks(8)}
    assert len(seeds) > 1 and len(instances) > 1
    assert audit.sampled_queries(other, audit.Sample(1)) == [BRIEF]


def test_a_brief_with_no_more_queries_than_the_sample_is_probed_whole() -> None:
    (task,) = _tasks(1)
    assert audit.sampled_queries(task, audit.Sample(7)) == audit.audit_queries(BRIEF)
    assert audit.sampled_queries(task, audit.Sample(50)) == audit.audit_queries(BRIEF)


def test_a_sample_of_no_query_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one query"):
        audit.Sample(0)


def test_a_sampled_row_counts_what_it_asked_and_what_the_whole_audit_would() -> None:
    backend = Dated()
    row = audit.audit_backend(backend, _tasks(4), k=10, sample=audit.Sample(2, seed=5))
    assert len(backend.queries) == row.queries == 8  # the brief and one sentence, four times
    assert (row.briefs, row.population, row.sampled) == (4, 28, True)
    assert row.sample == audit.Sample(2, seed=5)
    assert (row.returned, row.late, row.violation_rate) == (16, 8, 0.5)


def test_an_unsampled_row_names_no_sample() -> None:
    whole = audit.audit_backend(Dated(), _tasks(2))
    same = audit.audit_backend(Dated(), _tasks(2), sample=audit.Sample(7))  # nothing left out
    for row in (whole, same):
        assert (row.queries, row.population, row.briefs) == (14, 14, 2)
        assert row.sample is None and not row.sampled
