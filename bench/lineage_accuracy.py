"""Lineage accuracy and HTTP calls on a sandbox world, against its ground truth.

Run: .venv/bin/python bench/lineage_accuracy.py [--papers 2000] [--targets 60] [--seed 0]
Prints merge precision/recall, first-public-date exact match, status sums, HTTP calls per
source beside the bound (about the fewest: resolve.lower_bound; a run may beat it by a
call or two), and the calls of a second run (0 expected).
"""

from __future__ import annotations

import argparse
import json
import time

import _checkout  # noqa: F401  (this checkout first on the path)

from inspire_build import warehouse
from inspire_build.resolve import lower_bound, resolve_lineage
from inspire_build.sandbox import server, world
from inspire_build.sandbox.truth import score
from inspire_build.selection import select_targets
from inspire_build.sources import make_client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument("--targets", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    generated = world.generate(world.WorldConfig(seed=args.seed, papers=args.papers))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        chosen = select_targets(client, con, settings, "eval", limit=args.targets).selected
        before = {name: stats.network for name, stats in client.stats.items()}
        started = time.perf_counter()
        results = resolve_lineage(chosen, client)
        elapsed = time.perf_counter() - started
        calls = {name: stats.network - before[name] for name, stats in client.stats.items()}
        rerun = make_client(settings, con, mode="auto")
        resolve_lineage(chosen, rerun)
    scores = score(generated, results)
    print(
        f"world: {args.papers:,} papers (seed {args.seed}); targets: {scores.targets}; "
        f"mentions: {scores.mentions:,}; merged references: {scores.entries:,}"
    )
    print(f"merge precision (pairwise): {scores.pair_precision:.4f} (target >= 0.99)")
    print(f"merge recall (pairwise):    {scores.pair_recall:.4f} (target >= 0.97)")
    print(
        f"first public date exact:    {scores.date_exact:.4f} over {scores.dated_entries:,} "
        "dated references (target >= 0.99)"
    )
    print(f"statuses add up for every target: {scores.status_sums_ok}; {scores.statuses}")
    bound = lower_bound(results)
    total, total_bound = sum(calls.values()), sum(bound.values())
    for name in ("openalex", "s2", "arxiv"):
        print(
            f"HTTP calls {name:8s}: {calls[name]:5d}  bound {bound[name]:5d}  "
            f"ratio {calls[name] / max(1, bound[name]):.2f}"
        )
    print(
        f"HTTP calls total   : {total:5d}  bound {total_bound:5d}  "
        f"ratio {total / total_bound:.2f} (target <= 1.10); {elapsed:.1f} s"
    )
    second = sum(s.network for s in rerun.stats.values())
    print(f"second run HTTP calls: {second} (target 0)")
    named = {
        "merge_precision": round(scores.pair_precision, 4),
        "merge_recall": round(scores.pair_recall, 4),
        "date_exact": round(scores.date_exact, 4),
        "status_sums_ok": scores.status_sums_ok,
        "http_calls": total,
        "http_calls_bound": total_bound,
        "http_calls_ratio": round(total / total_bound, 3),
        "resolve_s": round(elapsed, 2),
        "second_run_calls": second,
    }
    print(json.dumps(named))


if __name__ == "__main__":
    main()
