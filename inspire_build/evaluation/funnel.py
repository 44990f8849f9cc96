"""The exposure -> selection -> ranking funnel (SPEC §4), from logged search trajectories.

For instance i with graded antecedents G_i and gains g:

- E_i, the exposed set: every ID any trajectory step exposed, plus the submitted IDs;
- S_i, the selected set: the submitted IDs, at any depth;
- Exposed gain_i = DCG@10 of G_i ∩ E_i in ideal order / IDCG@10 of G_i (Selected gain: with S_i);
- Final_i = nDCG@10 of the submitted order.

Aggregates: means over all instances (a missing submission scores 0; a missing trajectory means
E_i = S_i); No relevant item exposed = share of instances with G_i ∩ E_i empty; Gain kept =
Σ g(G ∩ S) / Σ g(G ∩ E) with raw gains; Rank quality = mean Final / mean Selected gain; Total
calls = mean steps per instance.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from inspire_build.evaluation.metrics import K, ideal_dcg, ndcg_at_k

PROGRESS = tuple(round(p / 10, 1) for p in range(11))


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """The IDs each tool call exposed, in order; ``revealed``: its session was told its scores
    (the environment's debugging mode), so it is no fair run."""

    steps: tuple[tuple[str, ...], ...]
    revealed: bool = False


def oracle_gain(found: set[str], gains: Mapping[str, float], k: int = K) -> float:
    """DCG@k of the graded documents in ``found``, in ideal order, over IDCG@k of all of them."""
    ideal = ideal_dcg(gains, k)
    if not ideal:
        return 0.0
    return ideal_dcg({d: g for d, g in gains.items() if d in found}, k) / ideal


@dataclasses.dataclass(frozen=True)
class FunnelRow:
    exposed_gain: float
    selected_gain: float
    final: float
    no_relevant_exposed: float
    gain_exposed_raw: float
    gain_selected_raw: float
    calls: int
    unexposed_submissions: int


def instance_funnel(
    ranking: Sequence[str], gains: Mapping[str, float], trajectory: Trajectory | None
) -> FunnelRow:
    submitted = set(ranking)
    seen = {doc for step in trajectory.steps for doc in step} if trajectory else set()
    exposed = seen | submitted
    graded = {d for d, g in gains.items() if g > 0}
    return FunnelRow(
        exposed_gain=oracle_gain(exposed, gains),
        selected_gain=oracle_gain(submitted, gains),
        final=ndcg_at_k(ranking, gains),
        no_relevant_exposed=0.0 if graded & exposed else 1.0,
        gain_exposed_raw=sum(gains[d] for d in graded & exposed),
        gain_selected_raw=sum(gains[d] for d in graded & submitted),
        calls=len(trajectory.steps) if trajectory else 0,
        unexposed_submissions=len(submitted - seen) if trajectory else 0,
    )


def aggregate(rows: Sequence[FunnelRow]) -> dict[str, float | None]:
    """The funnel's aggregates over instances, with SPEC §4's JSON names; a ratio of sums
    whose denominator is 0 (nothing exposed, nothing selected) is undefined (None), not 0."""
    n = len(rows)
    if not n:
        return {}
    mean = {
        f: sum(getattr(r, f) for r in rows) / n
        for f in ("exposed_gain", "selected_gain", "final", "no_relevant_exposed", "calls")
    }
    exposed_raw = sum(r.gain_exposed_raw for r in rows)
    return {
        "exposed_gain": mean["exposed_gain"],
        "selected_gain": mean["selected_gain"],
        "ndcg@10": mean["final"],
        "no_relevant_exposed": mean["no_relevant_exposed"],
        "gain_kept": sum(r.gain_selected_raw for r in rows) / exposed_raw if exposed_raw else None,
        "rank_quality": mean["final"] / mean["selected_gain"] if mean["selected_gain"] else None,
        "total_calls": mean["calls"],
        "unexposed_submissions": float(sum(r.unexposed_submissions for r in rows)),
    }


def oracle_curve(
    rankings: Mapping[str, Sequence[str]],
    gains: Mapping[str, Mapping[str, float]],
    trajectories: Mapping[str, Trajectory],
) -> dict[float, float]:
    """Mean Exposed gain of each instance's first ceil(p × steps) steps, for p = 0, 0.1, …, 1.

    An instance without a trajectory counts its submission as one step.
    """
    curve = {}
    for p in PROGRESS:
        total = 0.0
        for instance, instance_gains in gains.items():
            trajectory = trajectories.get(instance)
            steps = trajectory.steps if trajectory else (tuple(rankings.get(instance, ())),)
            prefix = steps[: math.ceil(p * len(steps))]
            total += oracle_gain({d for step in prefix for d in step}, instance_gains)
        curve[p] = total / len(gains) if gains else 0.0
    return curve
