"""Evaluation speed: 10,000 instances of 100-deep runs, with the funnel and 1,000 bootstrap
resamples, beside pytrec_eval on the same metrics (nDCG@10, Recall@10, MRR) in the same run.

Run: .venv/bin/python bench/eval_speed.py [--instances 10000] [--depth 100]
Targets: metrics within 2x of pytrec_eval; the bootstrap under 5 s. Printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import _checkout  # noqa: F401  (this checkout first on the path)
import pytrec_eval

from inspire_build.evaluation import bootstrap, funnel, metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(0)
    pool = [f"d{i}" for i in range(2000)]
    qrels = {
        f"q{i}": {d: rng.randint(1, 3) for d in rng.sample(pool, rng.randint(1, 20))}
        for i in range(args.instances)
    }
    runs = {q: rng.sample(pool, args.depth) for q in qrels}
    paths = {
        q: funnel.Trajectory(tuple(tuple(rng.sample(pool, 20)) for _ in range(10))) for q in qrels
    }

    started = time.perf_counter()
    values = []
    for q, tiers in qrels.items():
        gains = metrics.linear_gains(tiers)
        ranking = runs[q]
        values.append(
            (
                metrics.ndcg_at_k(ranking, gains),
                metrics.recall_at_k(ranking, gains),
                metrics.reciprocal_rank(ranking, gains),
            )
        )
    ours = time.perf_counter() - started

    started = time.perf_counter()
    scored = {q: {d: float(args.depth - i) for i, d in enumerate(r)} for q, r in runs.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recip_rank"})
    theirs = evaluator.evaluate(scored)
    reference = time.perf_counter() - started
    names = ("ndcg_cut_10", "recall_10", "recip_rank")
    # the speed only counts if the figures are pytrec_eval's (the unit tests check it too)
    differs = max(
        abs(mine - theirs[q][name])
        for q, row in zip(qrels, values, strict=True)
        for mine, name in zip(row, names, strict=True)
    )

    started = time.perf_counter()
    rows = [
        funnel.instance_funnel(runs[q], metrics.linear_gains(t), paths[q]) for q, t in qrels.items()
    ]
    funnel.aggregate(rows)
    funnel_s = time.perf_counter() - started

    started = time.perf_counter()
    for column in zip(*values, strict=True):
        bootstrap.mean_interval(list(column), samples=1000)
    bootstrap.ratio_interval([r.final for r in rows], [r.selected_gain for r in rows], 1000)
    boot = time.perf_counter() - started

    print(f"{args.instances:,} instances, {args.depth}-deep runs")
    print(
        f"metrics (nDCG@10, Recall@10, MRR): {ours:.2f} s; pytrec_eval {reference:.2f} s; "
        f"ratio {ours / reference:.2f} (target <= 2); largest difference from pytrec_eval "
        f"{differs:.1e} over {len(values) * 3:,} values"
    )
    print(f"funnel with 10-step trajectories: {funnel_s:.2f} s")
    print(
        f"bootstrap, 1,000 resamples x 4 statistics: {boot:.2f} s (target < 5 s; "
        f"{boot / 5:.2f}x of bound)"
    )
    named = {
        "metrics_s": ours,
        "pytrec_eval_s": reference,
        "funnel_s": funnel_s,
        "bootstrap_s": boot,
        "metrics_ratio_to_pytrec_eval": ours / reference,  # bound 2
        "bootstrap_ratio_to_bound": boot / 5,  # bound 5 s
        "largest_difference_from_pytrec_eval": differs,
    }
    print(json.dumps({name: float(f"{value:.4g}") for name, value in named.items()}))


if __name__ == "__main__":
    main()
