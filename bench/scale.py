"""How a Sandbox build grows: calls, wall time and memory at 50, 200 and 800 targets.

Run: .venv/bin/python bench/scale.py [--sizes 50,200,800] [--papers 8000] [--time-scale 20]

Every size is a cold build (and a warm rerun) of the first N eval targets of one world, through
``bench/build.py``'s ``measure``. Between consecutive sizes it prints each figure's growth
against the growth in targets: an exponent below 1 (growth ratio = targets ratio ** exponent)
is sublinear, which shared references should give for HTTP calls and memory. The time scale
keeps 800 targets to minutes; at scale 1 the S2 reference lists alone take ~1 s per target.
Nothing is asserted: machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import math

import _checkout  # noqa: F401  (this checkout first on the path)
from build import SOURCES, Measured, measure


def exponent(small: float, large: float, n_small: int, n_large: int) -> float:
    """The k in large / small = (n_large / n_small) ** k."""
    if small <= 0 or large <= 0:
        return float("nan")
    return math.log(large / small) / math.log(n_large / n_small)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="50,200,800")
    parser.add_argument("--papers", type=int, default=8000)
    parser.add_argument("--time-scale", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    results: list[Measured] = []
    header = (
        f"{'targets':>7} {'OpenAlex':>8} {'S2':>6} {'arXiv':>6} {'calls/bound':>11} "
        f"{'wall s':>7} {'s/target':>8} {'RSS MB':>7} {'warm s':>7} {'warm calls':>10}"
    )
    print(f"world: {args.papers:,} papers (seed {args.seed}); time scale {args.time_scale:g}")
    print(header)
    for size in sizes:
        measured = measure(args.papers, size, args.time_scale, args.seed)
        results.append(measured)
        cold, warm = measured.cold, measured.warm
        calls = sum(cold.calls.values())
        bound = sum(measured.bound[s] for s in SOURCES)
        print(
            f"{size:7d} {cold.calls['openalex']:8d} {cold.calls['s2']:6d} "
            f"{cold.calls['arxiv']:6d} {calls / bound:11.2f} {cold.wall_s:7.1f} "
            f"{cold.wall_s / size:8.3f} {cold.peak_rss_mb:7.0f} {warm.wall_s:7.1f} "
            f"{sum(warm.calls.values()):10d}",
            flush=True,
        )
    print("\ngrowth exponents between sizes (1 = linear, < 1 = sublinear)")
    for before, after in zip(results, results[1:], strict=False):
        n0, n1 = before.targets, after.targets
        figures = {
            "OpenAlex calls": (before.cold.calls["openalex"], after.cold.calls["openalex"]),
            "S2 calls": (before.cold.calls["s2"], after.cold.calls["s2"]),
            "arXiv calls": (before.cold.calls["arxiv"], after.cold.calls["arxiv"]),
            "wall time": (before.cold.wall_s, after.cold.wall_s),
            "peak RSS": (before.cold.peak_rss_mb, after.cold.peak_rss_mb),
        }
        shown = ", ".join(
            f"{name} {exponent(a, b, n0, n1):.2f}" for name, (a, b) in figures.items()
        )
        print(f"  {n0} -> {n1} targets: {shown}")
    named = {
        f"{key}_{r.targets}": value
        for r in results
        for key, value in (
            ("calls", sum(r.cold.calls.values())),
            ("wall_s", round(r.cold.wall_s, 2)),
            ("peak_rss_mb", round(r.cold.peak_rss_mb, 1)),
            ("warm_calls", sum(r.warm.calls.values())),
        )
    }
    print(json.dumps(named))


if __name__ == "__main__":
    main()
