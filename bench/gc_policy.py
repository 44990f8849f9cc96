"""The collector's thresholds: a build process at Python's default thresholds (700, 10, 10) and
at ``inspire_build.gc_policy``'s, alternated, in one run.

Run: .venv/bin/python bench/gc_policy.py [--papers 1200] [--targets 20] [--rounds 2]
Each round starts a fresh process per setting that does what ``inspire build`` and ``inspire
export`` do, on the same inputs: it imports the flows (Prefect with them: the live heap every
collection walks), serves a sandbox world (seed 1), builds eval with the rules backend into a
new warehouse under one instance key, and exports it. The figure is the process's CPU seconds
and its peak memory; the bound is the same process at the default thresholds; the ratio is
default CPU / gc_policy CPU (higher is better). Both must write the same counts. Nothing is
asserted, since machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  (this checkout first on the path)

DEFAULT = (700, 10, 10)  # Python's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=1200)
    parser.add_argument("--targets", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a build process: its thresholds
    args = parser.parse_args()
    if args.one:
        return one_build(tuple(map(int, args.one.split(","))), args.papers, args.targets)
    from inspire_build.gc_policy import THRESHOLDS

    runs: dict[tuple[int, ...], list[dict[str, Any]]] = {DEFAULT: [], THRESHOLDS: []}
    for _ in range(args.rounds):
        for thresholds in runs:
            asked = [sys.executable, __file__, "--one", ",".join(map(str, thresholds))]
            asked += ["--papers", str(args.papers), "--targets", str(args.targets)]
            done = subprocess.run(asked, capture_output=True, text=True, check=True)
            runs[thresholds].append(json.loads(done.stdout.splitlines()[-1]))
    cpu = {t: statistics.median(r["cpu_s"] for r in runs[t]) for t in runs}
    peak = {t: max(r["peak_mb"] for r in runs[t]) for t in runs}
    same = len({json.dumps(r["counts"], sort_keys=True) for rs in runs.values() for r in rs}) == 1
    print(
        f"build and export of {args.targets} targets, median of {args.rounds} processes each: "
        f"{cpu[THRESHOLDS]:.2f} CPU-s, peak {peak[THRESHOLDS]} MB at {THRESHOLDS}; "
        f"{cpu[DEFAULT]:.2f} CPU-s, peak {peak[DEFAULT]} MB at Python's {DEFAULT}; "
        f"ratio {cpu[DEFAULT] / cpu[THRESHOLDS]:.2f}x; same counts: {same}"
    )
    figures = {
        "build_cpu_s": round(cpu[THRESHOLDS], 2),
        "build_default_gc_cpu_s": round(cpu[DEFAULT], 2),
        "gc_ratio": round(cpu[DEFAULT] / cpu[THRESHOLDS], 3),
        "peak_mb": peak[THRESHOLDS],
        "default_gc_peak_mb": peak[DEFAULT],
        "same_counts": same,
    }
    print(json.dumps(figures))


def one_build(thresholds: tuple[int, ...], papers: int, targets: int) -> None:
    import gc
    import resource
    import time

    from pydantic import SecretStr

    import flows.build_split  # noqa: F401  (as `inspire build` runs it: Prefect imported)
    from inspire_build import exports, pipeline, warehouse
    from inspire_build.sandbox import server, world
    from inspire_build.sources import make_client

    gc.set_threshold(*thresholds)  # after the import of flows/, which sets gc_policy's
    started = time.process_time()
    generated = world.generate(world.WorldConfig(seed=1, papers=papers))
    key = SecretStr("5a" * 32)  # one instance key: the same cutoffs in every process
    with (
        server.running(generated, server.SandboxConfig(time_scale=1000)) as base,
        tempfile.TemporaryDirectory() as folder,
    ):
        path = Path(folder) / "w.duckdb"
        settings = server.settings_for(base, warehouse=path, llm_backend="rules", instance_key=key)
        with warehouse.open_warehouse(path) as con:
            row = pipeline.build_split(con, make_client(settings, con), settings, "eval", targets)
            exports.export(con, settings, "eval", None, Path(folder) / "export", force=True)
    cpu_s = time.process_time() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"cpu_s": round(cpu_s, 3), "peak_mb": peak_mb, "counts": row["counts"]}))


if __name__ == "__main__":
    main()
