"""Bulk data at scale: ingest throughput on a generated snapshot, and a build from the bulk
tables against the same build from the APIs.

Run: .venv/bin/python bench/bulk_scale.py [--ingest-mb 1024] [--match-share 1.0] [--jobs 2]
[--targets 200] [--papers 8000] [--time-scale 20]

- **Ingest.** A sandbox world's OpenAlex works, S2 papers and S2 citations, copied with fresh IDs
  until the gzip parts reach ``--ingest-mb`` MB; a share ``1 - --match-share`` of the papers is
  moved out of what the ingest keeps: the work gets a primary topic in Medicine and no arXiv
  location, the S2 paper no arXiv ID, so that the citations it makes are filtered out too. On
  the same files:
  ``zcat | wc -c`` (GNU gzip in a subprocess, the floor: decompressing and counting the bytes)
  and Python's gzip streaming; ``inspire snapshot ingest`` (a subprocess) with ``--jobs``
  processes and the default filter, then with ``--keep-all`` (every work parsed, as before the
  filter); with ``--jobs`` > 1, the filtered ingest in one process too. Rows/s and MB/s per
  kind, the warehouse's size, and a rerun that skips every file.
- **Bulk against API.** ``bench/build.py``'s cold build of ``--targets`` eval targets, once
  from the APIs and once after the world's bulk files were ingested: API calls and wall time.

Nothing is asserted. Ends with one JSON line of the named figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  (this checkout first on the path)
import orjson
from build import measure

from inspire_build.sandbox import bulk_files, world
from inspire_build.sandbox.server import Sandbox, SandboxConfig
from inspire_build.sources import openalex

RELEASE = dt.date(2027, 1, 1)
OUTSIDE_FIELD = {"id": "https://openalex.org/fields/27", "display_name": "Medicine"}
PART_MB = 64  # uncompressed bytes per part, about as the real snapshot's parts are cut
KINDS = ("openalex-works", "s2-papers", "s2-citations")


def _outside(work: dict[str, Any]) -> dict[str, Any]:
    """The work as one no build asks for: its topics in Medicine, its arXiv locations gone."""
    topics = [{**t, "field": OUTSIDE_FIELD} for t in work["topics"]]
    places = [p for p in work["locations"] if not (p.get("source") or {}).get("id", "").endswith(
        openalex.ARXIV_SOURCE)] or [{**work["locations"][0], "source": None}]  # fmt: skip
    return {**work, "primary_topic": topics[0], "topics": topics, "locations": places,
            "primary_location": places[0], "best_oa_location": None}  # fmt: skip


def _copies(
    generated: world.World, match_share: float
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Endless copies of the world's works, S2 papers and citations, each copy with IDs of its
    own; a seeded ``1 - match_share`` of the papers moved outside the ingest's filter (the work
    and the S2 paper alike)."""
    dice = random.Random(0)
    sandbox = Sandbox(generated, SandboxConfig())
    records = [r for r in generated.records if r.hostile is None]
    works = [sandbox.work(r) for r in records]
    papers = [bulk_files.s2_row(r, sandbox.paper(r)) for r in records]
    cites = [
        (r.corpus_id, sandbox.by_key[c.cites].corpus_id, c.influential, c.contexts, c.intents)
        for r in records
        for c in r.references
    ]
    copy = 0
    while True:
        copy += 1
        shift = copy * 10**9
        matched = [dice.random() < match_share for _ in works]
        yield (
            "works",
            [
                {
                    **(w if keep else _outside(w)),
                    "id": f"{w['id']}{copy:03d}",
                    "doi": f"https://doi.org/10.9999/c{copy}.{i}",
                }
                for i, (w, keep) in enumerate(zip(works, matched, strict=True))
            ],
        )
        yield (
            "papers",
            [
                _paper(p, copy, i, keep)
                for i, (p, keep) in enumerate(zip(papers, matched, strict=True))
            ],
        )
        yield (
            "citations",
            [
                {
                    "citingcorpusid": str(a + shift),
                    "citedcorpusid": str(b + shift),
                    "isinfluential": inf,
                    "contexts": ctx,
                    "intents": its,
                }
                for a, b, inf, ctx, its in cites
            ],
        )


def _paper(row: dict[str, Any], copy: int, number: int, matched: bool) -> dict[str, Any]:
    """An S2 ``papers`` line of a copy: its corpus ID shifted as the copy's citations are, the
    DOI its work's; no arXiv ID when its work was moved outside the filter."""
    external = {k: v for k, v in (row["externalids"] or {}).items() if matched or k != "ArXiv"}
    corpus = row["corpusid"] + copy * 10**9
    external |= {"CorpusId": str(corpus), "DOI": f"10.9999/c{copy}.{number}"}
    return {**row, "corpusid": corpus, "externalids": external}


def generate(folder: Path, target_mb: float, papers: int, match_share: float) -> dict[str, int]:
    """Gzip parts under ``folder`` (OpenAlex ``works``, S2 ``papers`` and ``citations``) until
    they hold ``target_mb`` MB; returns the bytes written and rows per kind."""
    generated = world.generate(world.WorldConfig(seed=0, papers=papers))
    out = {
        "works": folder / "openalex" / "works" / f"updated_date={RELEASE}",
        "papers": folder / "s2" / RELEASE.isoformat() / "papers",
        "citations": folder / "s2" / RELEASE.isoformat() / "citations",
    }
    for path in out.values():
        path.mkdir(parents=True)
    written, rows = 0, dict.fromkeys(out, 0)
    parts = dict.fromkeys(out, 0)
    buffers: dict[str, list[bytes]] = {kind: [] for kind in out}
    for kind, batch in _copies(generated, match_share):
        buffers[kind] += [orjson.dumps(row) + b"\n" for row in batch]
        rows[kind] += len(batch)
        if sum(map(len, buffers[kind])) >= PART_MB * 1e6:
            written += _flush(out[kind], kind, parts, buffers)
        if written >= target_mb * 1e6:
            break
    for kind in buffers:
        if buffers[kind]:
            written += _flush(out[kind], kind, parts, buffers)
    return {"bytes": written, **rows}


def _flush(folder: Path, kind: str, parts: dict[str, int], buffers: dict[str, list[bytes]]) -> int:
    name = f"part_{parts[kind]:03d}.gz" if kind == "works" else f"part-{parts[kind]:03d}.jsonl.gz"
    path = folder / name
    path.write_bytes(gzip.compress(b"".join(buffers[kind]), compresslevel=6))
    parts[kind] += 1
    buffers[kind] = []
    return path.stat().st_size


def ingest(folder: Path, warehouse: Path, jobs: int, *more: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "inspire_build", "--warehouse", str(warehouse), "snapshot",
         "ingest", str(folder), "--jobs", str(jobs), *more],
        capture_output=True, text=True, check=False, env={**os.environ},
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"snapshot ingest failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout


def per_kind(stdout: str) -> dict[str, dict[str, float]]:
    """Sum the per-file lines of ``snapshot ingest`` by kind: rows, MB, seconds, the rows
    filtered out and the works read by ``openalex.parse`` (not SQL)."""
    sums: dict[str, dict[str, float]] = {}
    for line in stdout.splitlines():
        kind = next((k for k in KINDS if f": {k}, " in line), None)
        if kind is None:
            continue
        tail = line.split(f"{kind}, ", 1)[1]
        rows = float(tail.split(" rows")[0].replace(",", ""))
        dropped = tail.split(" filtered out")[0].rsplit("(", 1)[-1] if "filtered" in tail else "0"
        mb = float(tail.split(", ")[1].split(" MB")[0])
        seconds = float(tail.split(" MB in ")[1].split(" s")[0])
        parsed = tail.split("; ")[1].split(" ")[0] if "by parse" in tail else "0"
        entry = sums.setdefault(
            kind, {"rows": 0.0, "mb": 0.0, "seconds": 0.0, "filtered": 0.0, "in_python": 0.0}
        )
        entry["filtered"] += float(dropped.replace(",", ""))
        entry["in_python"] += float(parsed.replace(",", ""))
        entry["rows"] += rows
        entry["mb"] += mb
        entry["seconds"] += seconds
    return sums


def decompress(folder: Path) -> dict[str, float]:
    """The floor: every gzip part under ``folder`` decompressed and its bytes counted, by
    ``zcat | wc -c`` (GNU gzip, one subprocess pipeline) and by Python's gzip streaming."""
    parts = sorted(str(p) for p in folder.rglob("*.gz"))
    started = time.perf_counter()
    counted = subprocess.run(
        ["sh", "-c", 'zcat -- "$@" | wc -c', "zcat", *parts],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    zcat_s = time.perf_counter() - started
    started, total = time.perf_counter(), 0
    for part in parts:
        with gzip.open(part, "rb") as stream:
            while chunk := stream.read(1 << 20):
                total += len(chunk)
    return {
        "zcat_s": zcat_s,
        "gzip_py_s": time.perf_counter() - started,
        "raw_bytes": float(counted.stdout.split()[0]),
    }


def ingest_row(target_mb: float, papers: int, jobs: int, match_share: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="inspire-bulk-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        made = generate(root / "dumps", target_mb, papers, match_share)
        print(
            f"generated {made['bytes'] / 1e6:,.0f} MB of gzip parts ({made['works']:,} works, "
            f"{made['papers']:,} S2 papers, {made['citations']:,} citations, match share "
            f"{match_share}) in "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
        floor = decompress(root / "dumps")
        if jobs > 1:  # the bound: one process
            one, _ = ingest(root / "dumps", root / "one.duckdb", 1)
            (root / "one.duckdb").unlink()
        wall, stdout = ingest(root / "dumps", root / "w.duckdb", jobs)
        one = wall if jobs == 1 else one
        kinds = per_kind(stdout)
        size = (root / "w.duckdb").stat().st_size
        rerun, again = ingest(root / "dumps", root / "w.duckdb", jobs)
        everything, _ = ingest(root / "dumps", root / "all.duckdb", jobs, "--keep-all")
        size_all = (root / "all.duckdb").stat().st_size
    mb = made["bytes"] / 1e6
    works = kinds.get("openalex-works", {"rows": 0.0, "filtered": 0.0, "in_python": 0.0})
    cites = kinds.get("s2-citations", {"rows": 0.0, "filtered": 0.0})
    figures: dict[str, Any] = {
        "ingest_gz_mb": round(mb, 1),
        "ingest_raw_mb": round(floor["raw_bytes"] / 1e6, 1),
        "match_share": match_share,
        "kept_share": round(works["rows"] / max(works["rows"] + works["filtered"], 1), 3),
        "citations_kept_share": round(cites["rows"] / max(cites["rows"] + cites["filtered"], 1), 3),
        "works_read_by_parse": int(works["in_python"]),
        "ingest_jobs": jobs,
        "ingest_wall_s": round(wall, 1),
        "ingest_one_process_s": round(one, 1),
        "ingest_speedup": round(one / wall, 2),
        "ingest_mb_per_s": round(mb / wall, 2),
        "zcat_mb_per_s": round(mb / floor["zcat_s"], 2),
        "ingest_over_zcat": round(floor["zcat_s"] / wall, 2),
        "gzip_py_mb_per_s": round(mb / floor["gzip_py_s"], 2),
        "ingest_keep_all_s": round(everything, 1),
        "ingest_keep_all_mb_per_s": round(mb / everything, 2),
        "warehouse_mb": round(size / 1e6, 1),
        "warehouse_keep_all_mb": round(size_all / 1e6, 1),
        "ingest_rerun_s": round(rerun, 1),
        "ingest_rerun_skipped": again.count(", skipped\n"),
    }
    for kind, entry in sorted(kinds.items()):
        key = kind.replace("-", "_")
        figures[f"{key}_rows_per_s"] = round(
            (entry["rows"] + entry["filtered"]) / max(entry["seconds"], 1e-9)
        )
        figures[f"{key}_mb_per_s"] = round(entry["mb"] / max(entry["seconds"], 1e-9), 2)
    _print_ingest(figures, kinds)
    return figures


def _print_ingest(figures: dict[str, Any], kinds: dict[str, dict[str, float]]) -> None:
    for kind, entry in sorted(kinds.items()):
        read = entry["rows"] + entry["filtered"]
        print(
            f"  {kind:15} {read:>12,.0f} read {entry['rows']:>12,.0f} kept {entry['mb']:>8,.0f} MB "
            f"{entry['seconds']:>7.1f} s  {read / entry['seconds']:>9,.0f} rows/s "
            f"{entry['mb'] / entry['seconds']:>6.1f} MB/s"
        )
    print(
        f"floor: zcat | wc -c {figures['zcat_mb_per_s']} MB/s of gzip "
        f"({figures['ingest_raw_mb']} MB out), Python gzip {figures['gzip_py_mb_per_s']} MB/s"
    )
    print(
        f"ingest (--jobs {figures['ingest_jobs']}, kept share {figures['kept_share']}): "
        f"{figures['ingest_wall_s']} s for {figures['ingest_gz_mb']} MB, "
        f"{figures['ingest_mb_per_s']} MB/s, {figures['ingest_over_zcat']} of zcat's rate "
        f"(goal >= 0.5 at match share 0.1); --keep-all {figures['ingest_keep_all_s']} s, "
        f"{figures['ingest_keep_all_mb_per_s']} MB/s; "
        f"one process {figures['ingest_one_process_s']} s"
    )
    print(
        f"warehouse {figures['warehouse_mb']} MB (--keep-all {figures['warehouse_keep_all_mb']} "
        f"MB); rerun {figures['ingest_rerun_s']} s, {figures['ingest_rerun_skipped']} files skipped"
    )


def build_row(papers: int, targets: int, time_scale: float) -> dict[str, Any]:
    """The same cold build from the APIs and from the bulk tables, side by side."""
    api = measure(papers, targets, time_scale)
    held = measure(papers, targets, time_scale, bulk_release=RELEASE)
    api_calls, bulk_calls = sum(api.cold.calls.values()), sum(held.cold.calls.values())
    print(f"{'build':10} {'OpenAlex':>8} {'S2':>6} {'arXiv':>6} {'calls':>6} {'wall s':>7}")
    for name, run in (("api", api.cold), ("bulk", held.cold)):
        print(
            f"{name:10} {run.calls['openalex']:8d} {run.calls['s2']:6d} {run.calls['arxiv']:6d} "
            f"{sum(run.calls.values()):6d} {run.wall_s:7.1f}"
        )
    share = bulk_calls / api_calls if api_calls else float("nan")
    print(
        f"bulk/api calls: {share:.3f} (goal <= 0.05); "
        f"wall {held.cold.wall_s / api.cold.wall_s:.2f}x"
    )
    return {
        "build_targets": targets,
        "api_calls": api_calls,
        "bulk_calls": bulk_calls,
        "bulk_call_share": round(share, 4),
        "api_wall_s": round(api.cold.wall_s, 1),
        "bulk_wall_s": round(held.cold.wall_s, 1),
    }


def dask_ports(workers: int) -> dict[str, str]:
    """A LocalCluster's settings on free ports: the scheduler, the dashboard, then three per
    worker (dask_runner.PORTS_PER_WORKER), consecutive."""
    for _ in range(200):
        first = random.randint(20_000, 60_000)
        try:
            for port in range(first, first + 2 + 3 * workers):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return {
            "INSPIRE_RUNNER": "dask",
            "INSPIRE_DASK_WORKERS": str(workers),
            "INSPIRE_DASK_SCHEDULER_PORT": str(first),
            "INSPIRE_DASK_DASHBOARD_PORT": str(first + 1),
            "INSPIRE_DASK_WORKER_PORT": str(first + 2),
        }
    raise SystemExit("no free run of ports for the LocalCluster")


def runner_row(papers: int, targets: int, time_scale: float) -> dict[str, Any]:
    """The same cold build with lineage in the flow's process and on 2 Dask workers, at the
    same sandbox limits (the limiter is shared by the workers, so they cannot go faster)."""
    local = measure(papers, targets, time_scale)
    dask = measure(papers, targets, time_scale, settings=dask_ports(2))
    print(f"{'runner':10} {'OpenAlex':>8} {'S2':>6} {'arXiv':>6} {'calls':>6} {'wall s':>7}")
    for name, run in (("local", local.cold), ("dask x2", dask.cold)):
        print(
            f"{name:10} {run.calls['openalex']:8d} {run.calls['s2']:6d} {run.calls['arxiv']:6d} "
            f"{sum(run.calls.values()):6d} {run.wall_s:7.1f}"
        )
    print(f"dask/local wall: {dask.cold.wall_s / local.cold.wall_s:.2f}x")
    return {
        "runner_targets": targets,
        "local_calls": sum(local.cold.calls.values()),
        "dask_calls": sum(dask.cold.calls.values()),
        "local_wall_s": round(local.cold.wall_s, 1),
        "dask_wall_s": round(dask.cold.wall_s, 1),
        "dask_refused": sum(dask.cold.refused.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ingest-mb", type=float, default=1024.0, help="0 skips the ingest row")
    parser.add_argument("--targets", type=int, default=200, help="0 skips the build row")
    parser.add_argument(
        "--runner-targets", type=int, default=0, help="the runner row's targets (0 skips it)"
    )
    parser.add_argument("--papers", type=int, default=8000)
    parser.add_argument("--time-scale", type=float, default=20.0)
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument(
        "--match-share", type=float, default=1.0,
        help="share of the generated works the ingest's filter keeps (1.0: all, as before)",
    )  # fmt: skip
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    if args.targets:
        figures |= build_row(args.papers, args.targets, args.time_scale)
    if args.runner_targets:
        figures |= runner_row(args.papers, args.runner_targets, args.time_scale)
    if args.ingest_mb:
        figures |= ingest_row(args.ingest_mb, min(args.papers, 2000), args.jobs, args.match_share)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
