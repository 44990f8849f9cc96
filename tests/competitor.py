"""A competitor holding a version's public files: each published cutoff narrows the papers the
warehouse knows to those first public on a day it allows, and the brief is searched with bm25
among those the card's selection criteria would select. Tests compare its ranks with the
audit's (``boundary_store._windows``)."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Mapping, Sequence

import duckdb

from inspire_build import boundary
from inspire_build.tables import windows
from inspire_build.text import content_words


def replay(
    con: duckdb.DuckDBPyConnection,
    public: Sequence[Mapping[str, str]],
    truth: Mapping[str, str],
    first_public: Mapping[str, dt.date],
    jitter: int,
    split: tuple[dt.date, dt.date],
) -> tuple[list[int], list[int | None]]:
    """(window sizes, the target's rank in each) for the public instances, each window cut by
    the ``split``'s dates (the card states them); asserts each window keeps its target (the
    narrowing costs a competitor nothing)."""
    sizes, ranks = [], []
    tokens: dict[str, Counter[str]] = {}
    for row in public:
        first, last = boundary.consistent_dates(dt.date.fromisoformat(row["cutoff"]), jitter)
        first, last = max(first, split[0]), min(last, split[1])
        target = truth[row["instance_id"]]
        assert first <= first_public[target] <= last, (row["instance_id"], first, last)
        pool = windows.pool(con, "eval", first, last)
        chosen = [p for p, (_, selectable) in pool.items() if selectable]  # the card's criteria
        for paper_id in chosen:
            tokens.setdefault(paper_id, Counter(content_words(pool[paper_id][0])))
        scores = boundary.bm25_scores(content_words(row["brief"]), {p: tokens[p] for p in chosen})
        sizes.append(len(pool))
        # the attacker's best case: a paper tied with the target is no paper above it
        above = sum(1 for score in scores.values() if score > scores.get(target, math.inf))
        ranks.append(1 + above if target in scores else None)
    return sizes, ranks
