"""evaluation/kappa.py: quadratic-weighted kappa and exact agreement, hand-computed."""

from __future__ import annotations

import pytest

from inspire_build.evaluation.kappa import exact, matrix_kappa, quadratic_kappa


def test_quadratic_kappa_by_hand() -> None:
    # Pairs (0,0), (1,1), (2,1), (3,3): each true tier once (rows 1,1,1,1), given tiers
    # (columns) 1, 2, 0, 1; weights (i-j)^2/9. Observed: the one (2,1) pair, 1/9. Expected:
    # sum of w_ij * col_j / 4 over i, j = (14*1 + 6*2 + 6*0 + 14*1) / 9 / 4 = 40/36 = 10/9.
    # kappa = 1 - (1/9) / (10/9) = 0.9.
    assert quadratic_kappa([(0, 0), (1, 1), (2, 1), (3, 3)]) == pytest.approx(0.9)


def test_full_agreement_one_value_and_exact() -> None:
    assert quadratic_kappa([(2, 2), (1, 1)]) == pytest.approx(1.0)
    assert matrix_kappa([[0.0] * 4 for _ in range(4)]) == 1.0  # no pair: the convention
    assert exact([(1, 1), (2, 1), (0, 0), (3, 2)]) == 0.5


def test_quadratic_kappa_at_the_extremes() -> None:
    assert quadratic_kappa([(0, 0), (1, 1), (2, 2), (3, 3)]) == 1.0
    # Two labels 0 and 3, always swapped: observed disagreement at full weight.
    # rows = cols = (1, 0, 0, 1); seen = 2 * 1; expected = (1*1*1 + 1*1*1) / 2 = 1 -> 1 - 2 = -1
    assert quadratic_kappa([(0, 3), (3, 0)]) == pytest.approx(-1.0)
    # (1,1), (2,1): rows (0,1,1,0), cols (0,2,0,0); seen = w(2,1) = 1/9;
    # expected = (w11*1*2 + w21*1*2) / 2 = (0 + 2/9) / 2 = 1/9 -> kappa 0
    assert quadratic_kappa([(1, 1), (2, 1)]) == pytest.approx(0.0)
    assert exact([(1, 1), (2, 1), (0, 0)]) == pytest.approx(2 / 3)
