"""Score a run (and optional trajectories) against qrels: per instance and in aggregate."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from inspire_build.evaluation import bootstrap, funnel
from inspire_build.evaluation.metrics import (
    any_hit_at_k,
    at_least_hits,
    dedupe,
    exponential_gains,
    hits_at_k,
    linear_gains,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)

GAINS: dict[str, Callable[[Mapping[str, int]], dict[str, float]]] = {
    "linear": linear_gains,
    "exp": exponential_gains,
}
TABLE2 = ("ndcg@10", "recall@10", "mrr", "anyhit@10", "hits>=3", "hits>=5")
# Per-instance funnel figures that a paired comparison can take (the paper's Table 4 columns
# among them); gain kept and rank quality are ratios of sums, with no per-instance value.
FUNNEL_PAIRED = ("exposed_gain", "selected_gain", "no_relevant_exposed", "total_calls")


@dataclasses.dataclass(frozen=True)
class Scores:
    """Scores of every judged instance; the submitted instance IDs that were not judged (sorted)
    are kept aside, never scored; ``version`` or ``qrels_file`` says what was scored against."""

    per_instance: dict[str, dict[str, float | None]]
    aggregate: dict[str, float | None]  # None: no instance has a value (hits>=5 of few gold)
    intervals: dict[str, tuple[float, float]]
    unknown_ids: int  # submitted paper IDs that are no judged instance's antecedent
    curve: dict[float, float] | None
    unknown_instances: tuple[str, ...] = ()  # run instance IDs with no qrels
    unknown_trajectories: tuple[str, ...] = ()  # trajectory instance IDs with no qrels
    revealed: tuple[str, ...] = ()  # scored instances whose session was told its scores
    missing_instances: tuple[str, ...] = ()  # judged instances with no line in the run: 0
    version: str | None = None
    qrels_file: str | None = None


def score(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str]],
    trajectories: Mapping[str, funnel.Trajectory] | None = None,
    *,
    gains: str = "linear",
    samples: int = bootstrap.SAMPLES,
    known: Callable[[str], bool] = lambda _: True,
) -> Scores:
    """Every instance of ``qrels`` is scored; one with no submission scores 0. Submitted
    instances that ``qrels`` lacks are listed in ``unknown_instances``, not scored."""
    to_gain = GAINS[gains]
    per: dict[str, dict[str, float | None]] = {}
    rows: list[funnel.FunnelRow] = []
    unknown = 0
    for instance, tiers in sorted(qrels.items()):
        g = to_gain(tiers)
        ranking = dedupe(run.get(instance, ()))
        unknown += sum(1 for doc in ranking if not known(doc))
        per[instance] = {
            "ndcg@10": ndcg_at_k(ranking, g),
            "recall@10": recall_at_k(ranking, g),
            "mrr": reciprocal_rank(ranking, g),
            "anyhit@10": any_hit_at_k(ranking, g),
            "hits>=3": at_least_hits(ranking, g, 3),
            "hits>=5": at_least_hits(ranking, g, 5),
            "hits@10": float(hits_at_k(ranking, g)),
        }
        if trajectories is not None:
            row = funnel.instance_funnel(ranking, g, trajectories.get(instance))
            rows.append(row)
            per[instance].update(
                {
                    "exposed_gain": row.exposed_gain,
                    "selected_gain": row.selected_gain,
                    "no_relevant_exposed": row.no_relevant_exposed,
                    "total_calls": float(row.calls),
                }
            )
    aggregate: dict[str, float | None] = {}
    intervals: dict[str, tuple[float, float]] = {}
    for metric in (*TABLE2, "hits@10"):  # every per-instance metric has its mean
        values = [v for v in (p[metric] for p in per.values()) if v is not None]
        aggregate[metric] = sum(values) / len(values) if values else None  # not 0: undefined
        if values:
            intervals[metric] = bootstrap.mean_interval(values, samples)
    curve = None
    if trajectories is not None:
        aggregate.update(funnel.aggregate(rows))
        intervals.update(_funnel_intervals(rows, samples))
        curve = funnel.oracle_curve(run, {i: to_gain(t) for i, t in qrels.items()}, trajectories)
    return Scores(
        per,
        aggregate,
        intervals,
        unknown,
        curve,
        unknown_instances=tuple(sorted(set(run) - set(qrels))),
        unknown_trajectories=tuple(sorted(set(trajectories or ()) - set(qrels))),
        revealed=tuple(
            sorted(i for i, t in (trajectories or {}).items() if t.revealed and i in qrels)
        ),
        missing_instances=tuple(sorted(set(qrels) - set(run))),
    )


def _funnel_intervals(
    rows: Sequence[funnel.FunnelRow], samples: int
) -> dict[str, tuple[float, float]]:
    """The funnel's 95% intervals: of its means over instances, and of its ratios of sums
    where they are defined (an undefined one has a None aggregate and no interval)."""
    intervals = {
        name: bootstrap.mean_interval([float(getattr(r, field)) for r in rows], samples)
        for name, field in (
            ("exposed_gain", "exposed_gain"),
            ("selected_gain", "selected_gain"),
            ("no_relevant_exposed", "no_relevant_exposed"),
            ("total_calls", "calls"),
        )
    }
    for name, (top, bottom) in (
        ("gain_kept", ([r.gain_selected_raw for r in rows], [r.gain_exposed_raw for r in rows])),
        ("rank_quality", ([r.final for r in rows], [r.selected_gain for r in rows])),
    ):
        interval = bootstrap.ratio_interval(top, bottom, samples)
        if interval is not None:
            intervals[name] = interval
    return intervals


def paired(
    a: Scores, b: Scores, metrics: Sequence[str], samples: int = bootstrap.SAMPLES
) -> dict[str, tuple[float, float, float]]:
    """Metric -> (mean of A - B, 95% interval low, high), over the instances both scored.

    A metric is paired only over instances where both runs have a value (the multi-hit
    metrics exist only for instances with enough antecedents).
    """
    shared = sorted(set(a.per_instance) & set(b.per_instance))
    differences = {}
    for metric in metrics:
        pairs = [(a.per_instance[i].get(metric), b.per_instance[i].get(metric)) for i in shared]
        kept = [(x, y) for x, y in pairs if x is not None and y is not None]
        differences[metric] = bootstrap.paired_difference(
            [x for x, _ in kept], [y for _, y in kept], samples
        )
    return differences
