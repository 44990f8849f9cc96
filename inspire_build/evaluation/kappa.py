"""Pure: agreement between two graders' tiers (the model against the truth, in the validity
bench; the model against a curator, in a review sample)."""

from __future__ import annotations

from collections.abc import Sequence

TIERS = (0, 1, 2, 3)


def quadratic_kappa(pairs: Sequence[tuple[int, int]], labels: Sequence[int] = TIERS) -> float:
    """Cohen's kappa with quadratic weights over (true, given) pairs; 1.0 is full agreement."""
    index = {label: i for i, label in enumerate(labels)}
    observed = [[0.0] * len(labels) for _ in labels]
    for true, given in pairs:
        observed[index[true]][index[given]] += 1
    return matrix_kappa(observed)


def matrix_kappa(observed: Sequence[Sequence[float]]) -> float:
    """Quadratic-weighted kappa of a confusion matrix (rows true, columns given)."""
    size = len(observed)
    n = sum(sum(row) for row in observed)
    if not n:
        return 1.0
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(size)) for j in range(size)]
    weight = [[(i - j) ** 2 / (size - 1) ** 2 for j in range(size)] for i in range(size)]
    seen = sum(weight[i][j] * observed[i][j] for i in range(size) for j in range(size))
    expected = sum(weight[i][j] * rows[i] * cols[j] / n for i in range(size) for j in range(size))
    return 1.0 - seen / expected if expected else 1.0


def exact(pairs: Sequence[tuple[int, int]]) -> float:
    return sum(t == g for t, g in pairs) / len(pairs) if pairs else 1.0
