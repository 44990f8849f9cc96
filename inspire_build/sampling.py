"""Pure: the seeded order in which a split's candidates are selected.

Every prefix of the order is a sample stratified by month, in proportion to each month's
candidates: within a month the candidates are shuffled by a seeded hash, and the k-th of a
month of n sits at (k + offset) / n, with one seeded offset in [0, 1) per month (systematic
sampling). So a build with a limit spreads its targets across the whole window instead of
taking its earliest months, and a larger limit keeps every target a smaller one chose.
The same order over any strata (:func:`stratified_order`) draws curators' review samples.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from collections.abc import Sequence


def _unit(*parts: object) -> float:
    """A seeded number in [0, 1) from its parts."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def month(day: dt.date | None) -> str:
    return day.strftime("%Y-%m") if day else "undated"


def selection_order(candidates: Sequence[tuple[str, dt.date | None]], seed: int) -> list[str]:
    """Candidate IDs (each with its first public date) in the order a limit selects them."""
    return stratified_order([(key, month(day)) for key, day in candidates], seed)


def stratified_order(items: Sequence[tuple[str, str]], seed: int) -> list[str]:
    """Item IDs (each with its stratum's name) in a seeded order whose every prefix takes from
    each stratum in proportion to its size, as :func:`selection_order` does with months."""
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for key, stratum in items:
        by_stratum[stratum].append(key)
    placed: list[tuple[float, str]] = []
    for name, keys in by_stratum.items():
        shuffled = sorted(keys, key=lambda k: (_unit(seed, "candidate", k), k))
        offset = _unit(seed, "month", name)  # "month": the salt selection_order always had
        placed += [((rank + offset) / len(keys), key) for rank, key in enumerate(shuffled)]
    return [key for _, key in sorted(placed)]


def per_month(days: Sequence[dt.date | None]) -> dict[str, int]:
    """How many of these dates fall in each month, in month order."""
    counts: dict[str, int] = defaultdict(int)
    for day in days:
        counts[month(day)] += 1
    return dict(sorted(counts.items()))
