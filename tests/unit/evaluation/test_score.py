"""score(): what it means by a mean, computed by hand on two instances."""

from __future__ import annotations

from inspire_build.evaluation.score import score

QRELS = {"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"d": 1, "e": 1}}


def test_a_metric_no_instance_has_is_undefined_not_zero() -> None:
    scores = score(QRELS, {"q1": ["a", "x", "b"], "q2": ["d"]}, samples=50)
    # hits>=3 exists for q1 only (3 antecedents), where 2 are found: 0 over one instance
    assert scores.per_instance["q2"]["hits>=3"] is None
    assert scores.aggregate["hits>=3"] == 0.0 and "hits>=3" in scores.intervals
    # no instance has 5 antecedents: no mean, no interval
    assert scores.aggregate["hits>=5"] is None and "hits>=5" not in scores.intervals
    assert scores.aggregate["anyhit@10"] == 1.0


def test_an_instance_the_run_skips_scores_0_and_is_named() -> None:
    scores = score(QRELS, {"q1": ["a"]}, samples=50)
    assert scores.missing_instances == ("q2",)
    assert scores.per_instance["q2"]["anyhit@10"] == 0.0
    assert scores.aggregate["anyhit@10"] == 0.5
    assert score(QRELS, {"q1": ["a"], "q2": []}, samples=50).missing_instances == ()
