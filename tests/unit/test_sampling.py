"""The seeded, month-stratified selection order of a split's candidates."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from inspire_build import sampling


def _candidates() -> list[tuple[str, dt.date | None]]:
    """Twelve months of 2025: January holds 40 candidates, every other month 10."""
    found: list[tuple[str, dt.date | None]] = []
    for number in range(12):
        count = 40 if number == 0 else 10
        found += [
            (f"W{number:02d}{k:03d}", dt.date(2025, number + 1, 1 + k % 28)) for k in range(count)
        ]
    return found


def test_a_prefix_spreads_across_every_month_in_proportion() -> None:
    order = sampling.selection_order(_candidates(), seed=0)
    assert sorted(order) == sorted(k for k, _ in _candidates())  # a permutation
    chosen = Counter(key[:3] for key in order[:30])  # 30 of 150: a fifth of each month
    assert set(chosen) == {f"W{n:02d}" for n in range(12)}
    assert chosen["W00"] == 8  # 40 / 5
    assert all(chosen[f"W{n:02d}"] == 2 for n in range(1, 12))  # 10 / 5


def test_the_order_is_seeded_and_a_larger_limit_keeps_the_smaller_ones_targets() -> None:
    first = sampling.selection_order(_candidates(), seed=0)
    assert first == sampling.selection_order(list(reversed(_candidates())), seed=0)
    assert first != sampling.selection_order(_candidates(), seed=1)
    assert set(first[:10]) <= set(first[:40])


def test_undated_candidates_form_their_own_stratum_and_months_are_counted() -> None:
    order = sampling.selection_order([("a", None), ("b", dt.date(2025, 3, 1))], seed=0)
    assert sorted(order) == ["a", "b"]
    assert sampling.per_month([dt.date(2025, 3, 1), dt.date(2025, 3, 9), None]) == {
        "2025-03": 2,
        "undated": 1,
    }


def test_any_strata_are_ordered_as_months_are() -> None:
    dated = [("a", dt.date(2025, 1, 3)), ("b", dt.date(2025, 1, 9)), ("c", dt.date(2025, 2, 1))]
    named = [(key, sampling.month(day)) for key, day in dated]
    assert sampling.stratified_order(named, 4) == sampling.selection_order(dated, 4)
    order = sampling.stratified_order([("x1", "T3"), ("x2", "T3"), ("y1", "T1")], 0)
    assert sorted(order) == ["x1", "x2", "y1"]
