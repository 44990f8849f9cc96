"""95% bootstrap intervals over instances, vectorised, with a fixed seed.

Means are resampled directly; the funnel's ratios (gain kept, rank quality) are recomputed from
their resampled numerator and denominator sums, so each interval is of the statistic reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

# numpy is imported where an interval is drawn: a build imports this module (through the card)
# and draws none, and numpy costs a CLI process ~0.1 CPU-s to import.
if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

SEED = 20261202
SAMPLES = 1000


def _indices(n: int, samples: int, seed: int) -> np.ndarray:
    import numpy as np

    return np.random.default_rng(seed).integers(0, n, size=(samples, n))


def mean_interval(
    values: Sequence[float], samples: int = SAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the resampled mean."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (0.0, 0.0)
    means = data[_indices(data.size, samples, seed)].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def ratio_interval(
    numerators: Sequence[float],
    denominators: Sequence[float],
    samples: int = SAMPLES,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Interval of sum(numerators) / sum(denominators) under resampling of instances. A
    resample whose denominators sum to 0 has no ratio and is left out, not counted as 0 (which
    pulled the interval below its own estimate); None when no resample has one."""
    import numpy as np

    top, bottom = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if top.size == 0:
        return None
    picks = _indices(top.size, samples, seed)
    sums = bottom[picks].sum(axis=1)
    defined = sums != 0
    if not defined.any():
        return None
    ratios = top[picks].sum(axis=1)[defined] / sums[defined]
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def paired_difference(
    a: Sequence[float], b: Sequence[float], samples: int = SAMPLES, seed: int = SEED
) -> tuple[float, float, float]:
    """Mean of a - b over the same instances, with its 95% interval."""
    import numpy as np

    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    low, high = mean_interval(diff.tolist(), samples, seed)
    return float(diff.mean()) if diff.size else 0.0, low, high


def grouped_interval(
    groups: Sequence[Sequence[T]],
    statistic: Callable[[list[T]], float],
    samples: int = SAMPLES,
    seed: int = SEED,
) -> tuple[float, float]:
    """Interval of ``statistic`` over the pooled items of resampled groups: the groups (an
    instance's references) are drawn with replacement, never the items one by one, since the
    items of one group are not independent."""
    import numpy as np

    if not groups:
        return (0.0, 0.0)
    picks = _indices(len(groups), samples, seed)
    values = [statistic([item for i in row for item in groups[i]]) for row in picks]
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)
