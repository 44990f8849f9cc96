"""Per-instance metrics, one documented pure function each (SPEC §4).

Conventions, matching trec_eval (``ndcg_cut_10``, ``recall_10``, ``recip_rank``):

- ``ranking`` is the submitted order with duplicates already removed (first position kept);
- ``gains`` maps each graded antecedent to its gain; ungraded documents gain 0;
- positions are 1-based; the discount is ``1 / log2(rank + 1)`` (Järvelin and Kekäläinen),
  never ``1 / rank``;
- gains are linear by default (T3=3, T2=2, T1=1), as in trec_eval; ``exponential_gains`` gives
  the Burges variant ``2**tier - 1``.

None of these functions modifies its inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

K = 10


def linear_gains(tiers: Mapping[str, int]) -> dict[str, float]:
    """gain = tier (trec_eval's linear gain)."""
    return {doc: float(tier) for doc, tier in tiers.items() if tier > 0}


def exponential_gains(tiers: Mapping[str, int]) -> dict[str, float]:
    """gain = 2**tier - 1 (Burges et al., 2005)."""
    return {doc: float(2**tier - 1) for doc, tier in tiers.items() if tier > 0}


def dcg(ranking: Sequence[str], gains: Mapping[str, float], k: int = K) -> float:
    """DCG@k = sum over ranks i <= k of gain(d_i) / log2(i + 1)."""
    return sum(gains.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))


def ideal_dcg(gains: Mapping[str, float], k: int = K) -> float:
    """IDCG@k: the DCG of every graded document in gain-descending order."""
    ordered = sorted(gains.values(), reverse=True)[:k]
    return sum(g / math.log2(i + 2) for i, g in enumerate(ordered))


def ndcg_at_k(ranking: Sequence[str], gains: Mapping[str, float], k: int = K) -> float:
    """nDCG@k = DCG@k / IDCG@k; 0 when nothing is graded."""
    ideal = ideal_dcg(gains, k)
    return dcg(ranking, gains, k) / ideal if ideal else 0.0


def recall_at_k(ranking: Sequence[str], gains: Mapping[str, float], k: int = K) -> float:
    """Recall@k = |graded in the top k| / |graded|; 0 when nothing is graded."""
    relevant = {doc for doc, gain in gains.items() if gain > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def reciprocal_rank(ranking: Sequence[str], gains: Mapping[str, float]) -> float:
    """MRR's per-instance term: 1 / rank of the first graded document, at any depth; else 0."""
    for i, doc in enumerate(ranking):
        if gains.get(doc, 0.0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def hits_at_k(ranking: Sequence[str], gains: Mapping[str, float], k: int = K) -> int:
    """How many graded documents the top k holds."""
    return sum(1 for doc in ranking[:k] if gains.get(doc, 0.0) > 0)


def any_hit_at_k(ranking: Sequence[str], gains: Mapping[str, float], k: int = K) -> float:
    """AnyHit@k: 1 if the top k holds any graded document, else 0."""
    return 1.0 if hits_at_k(ranking, gains, k) else 0.0


def at_least_hits(
    ranking: Sequence[str], gains: Mapping[str, float], n: int, k: int = K
) -> float | None:
    """≥n hits: 1 if the top k holds at least n graded documents; None (not counted) for an
    instance with fewer than n graded documents."""
    if sum(1 for g in gains.values() if g > 0) < n:
        return None
    return 1.0 if hits_at_k(ranking, gains, k) >= n else 0.0


def dedupe(ranking: Sequence[str]) -> list[str]:
    """The ranking with each document at its first position only."""
    return list(dict.fromkeys(ranking))
