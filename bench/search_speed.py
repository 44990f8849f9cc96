"""Search speed: the local backend's bm25 over a sandbox world's corpus, beside the scoring it
replaced (issue 36: DuckDB's match_bm25, whose statistics count the works after the cutoff too).

Run: .venv/bin/python bench/search_speed.py [--papers 2000 20000] [--queries 200]
Each world's records become the corpus (as ``inspire corpus build --world`` does); the queries
are the first words of records' abstracts (brief-sized), each asked at a cutoff drawn from the
world's dates, as an agent's session would. Prints, per world, the index build time and the
median and 95th-percentile wall time of one search, and its median CPU time (steadier on a
shared machine). The bound is the replaced implementation, run on the same queries in
alternating rounds; the ratio is old / new (higher is better). Nothing is asserted, since
machines are noisy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _checkout  # noqa: F401  (this checkout first on the path)

from inspire_build import warehouse
from inspire_build.env import backends, store
from inspire_build.sandbox import corpus as world_corpus
from inspire_build.sandbox import world
from tests.unit.env.test_backends import whole_corpus_bm25  # the old one

Ask = tuple[str, dt.date]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--words", type=int, default=40, help="words of abstract per query")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each")
    args = parser.parse_args()
    figures = [measure(n, args.queries, args.words, args.rounds) for n in args.papers]
    print(json.dumps(figures))


def measure(papers: int, queries: int, words: int, rounds: int) -> dict[str, float]:
    generated = world.generate(world.WorldConfig(seed=0, papers=papers))
    rng = random.Random(0)
    chosen = rng.sample(generated.records, min(queries, len(generated.records)))
    dates = sorted(dt.date.fromisoformat(r.publication_date) for r in generated.records)
    asks = [(" ".join(r.abstract.split()[:words]), rng.choice(dates)) for r in chosen]
    with (
        tempfile.TemporaryDirectory() as folder,
        warehouse.open_warehouse(Path(folder) / "w.duckdb") as con,
    ):
        started = time.perf_counter()
        store.write_corpus(con, world_corpus.from_world(generated.records), "sandbox-world")
        build_s = time.perf_counter() - started
        local = backends.LocalBackend(con)
        new, old = [], []
        for _ in range(rounds):
            new.append(timed(asks, lambda q, c: local.search(q, 10, c)))
            old.append(timed(asks, lambda q, c: whole_corpus_bm25(con, q, 10, c)))
    figures = {"papers": papers, "build_s": round(build_s, 2)}
    for name, runs in (("new", new), ("old", old)):
        wall = [t for run in runs for t in run[0]]
        cpu = [t for run in runs for t in run[1]]
        figures[f"{name}_median_ms"] = round(statistics.median(wall), 2)
        figures[f"{name}_p95_ms"] = round(statistics.quantiles(wall, n=20)[-1], 2)
        figures[f"{name}_cpu_median_ms"] = round(statistics.median(cpu), 2)
    figures["ratio"] = round(figures["old_median_ms"] / figures["new_median_ms"], 2)
    figures["cpu_ratio"] = round(figures["old_cpu_median_ms"] / figures["new_cpu_median_ms"], 2)
    print(
        f"{papers:,}-paper world: index {build_s:.1f} s; search median "
        f"{figures['new_median_ms']:.1f} ms, p95 {figures['new_p95_ms']:.1f} ms, CPU "
        f"{figures['new_cpu_median_ms']:.1f} ms over {len(asks) * rounds} queries; the replaced "
        f"implementation {figures['old_median_ms']:.1f} ms, p95 {figures['old_p95_ms']:.1f} ms, "
        f"CPU {figures['old_cpu_median_ms']:.1f} ms; ratio {figures['ratio']:.2f}x "
        f"(CPU {figures['cpu_ratio']:.2f}x)"
    )
    return figures


def timed(asks: list[Ask], search: Callable[[str, dt.date], object]) -> tuple[list[float], ...]:
    """Wall and CPU milliseconds of each search, after one unmeasured call (loads the index)."""
    search(*asks[0])
    wall, cpu = [], []
    for query, cutoff in asks:
        started, started_cpu = time.perf_counter(), time.process_time()
        search(query, cutoff)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return wall, cpu


if __name__ == "__main__":
    main()
