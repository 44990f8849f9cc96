"""evaluation/metrics.py: the metrics equal pytrec_eval to 1e-9, and hand-computed values."""

from __future__ import annotations

import math

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from inspire_build.evaluation import metrics

DOCS = [f"d{i}" for i in range(30)]


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 6))):
        judged = draw(
            st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=15)
        )
        qrels[f"q{q}"] = judged
        run[f"q{q}"] = draw(st.lists(st.sampled_from(DOCS), max_size=25, unique=True))
    return qrels, run


def pytrec(
    qrels: dict[str, dict[str, int]], run: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    scored = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in run.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recip_rank"})
    result: dict[str, dict[str, float]] = evaluator.evaluate(scored)
    return result


@settings(max_examples=300, deadline=None)
@given(collections())
def test_metrics_equal_pytrec_eval(
    data: tuple[dict[str, dict[str, int]], dict[str, list[str]]],
) -> None:
    qrels, run = data
    reference = pytrec(qrels, run)
    for q, judged in qrels.items():
        gains = metrics.linear_gains(judged)
        ranking = run[q]
        expected = reference.get(q, {"ndcg_cut_10": 0.0, "recall_10": 0.0, "recip_rank": 0.0})
        assert abs(metrics.ndcg_at_k(ranking, gains) - expected["ndcg_cut_10"]) < 1e-9
        assert abs(metrics.recall_at_k(ranking, gains) - expected["recall_10"]) < 1e-9
        assert abs(metrics.reciprocal_rank(ranking, gains) - expected["recip_rank"]) < 1e-9


def test_hand_computed_metrics() -> None:
    gains = {"a": 3.0, "b": 2.0, "c": 1.0}
    ranking = ["x", "b", "a"]
    dcg = 2 / math.log2(3) + 3 / math.log2(4)
    ideal = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert metrics.ndcg_at_k(ranking, gains) == pytest.approx(dcg / ideal, abs=1e-12)
    assert metrics.recall_at_k(ranking, gains) == pytest.approx(2 / 3)
    assert metrics.reciprocal_rank(ranking, gains) == 0.5
    assert metrics.any_hit_at_k(ranking, gains) == 1.0
    assert metrics.at_least_hits(ranking, gains, 3) == 0.0
    assert metrics.at_least_hits(ranking, gains, 5) is None  # only 3 antecedents: not counted
    assert metrics.exponential_gains({"a": 3, "b": 1, "z": 0}) == {"a": 7.0, "b": 1.0}
    assert metrics.dedupe(["a", "b", "a"]) == ["a", "b"]
    assert metrics.ndcg_at_k([], gains) == 0.0 and metrics.ndcg_at_k(["a"], {}) == 0.0
