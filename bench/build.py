"""A Sandbox build against the physical limits: HTTP calls, wall time, Prefect, memory, LLM.

Run: .venv/bin/python bench/build.py [--papers 3000] [--targets 200] [--time-scale 5]
     [--llm openai --llm-latency 1 --llm-concurrency 16]

The Sandbox runs in its own process with the real services' rate limits multiplied by
``--time-scale`` (OpenAlex 100/s, S2 1/s, arXiv one request per 3 s), and the pipeline is given
the same scaled limits, as a user with keys would configure it. ``inspire build`` runs as a
subprocess against a `prefect server start` the bench starts first (its start-up is reported
apart). For each source it prints, side by side:

- HTTP calls (every request the host answered, rate-limit refusals included) against the lower
  bound: ``resolve.lower_bound`` of an unthrottled resolve of the same targets, plus the pages
  of the split's candidate list for OpenAlex;
- wall time against the rate-limit bound: each host's lower-bound calls over its allowed rate,
  taking the slowest host;
- Prefect's overhead: the flow run's wall time less the time some task run was running (the
  LLM steps' task runs overlap the lineage's), as a share;
- the build process's peak RSS;
- LLM calls and tokens per target, and the LLM bound: the chat requests the endpoint answered
  (a call's repair retry is a request of its own, inside one call-log row) times the endpoint's
  latency (``--llm-latency``: the sandbox answers every chat request that long after it came)
  over ``--llm-concurrency``; a build's wall time should approach the larger of the lineage and
  LLM bounds, not their sum. The bound on the call log's rows alone is printed beside it;

and the same figures for a warm rerun (0 HTTP and 0 LLM calls expected). Nothing is asserted:
machines are shared and noisy. ``measure`` is reused by ``bench/scale.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  (this checkout first on the path)
import duckdb
import requests
from sandbox_speed import free_port, wait_until_up

from inspire_build import warehouse
from inspire_build.resolve import lower_bound, resolve_lineage
from inspire_build.sandbox import bulk_files, server, world
from inspire_build.selection import select_targets
from inspire_build.sources import make_client

SOURCES = ("openalex", "s2", "arxiv")
HOST_RPS = {"openalex": 100.0, "s2": 1.0, "arxiv": 1 / 3}  # the services' own limits
TARGET_CALLS_RATIO, TARGET_WALL_RATIO = 1.1, 1.3


@dataclasses.dataclass
class Run:
    """The figures of one `inspire build`."""

    wall_s: float
    calls: dict[str, int]
    refused: dict[str, int]
    llm_calls: int  # rows of the call log: a repaired call is one row, two requests
    llm_requests: int  # chat requests the endpoint answered (a rate-limit refusal is not one)
    tokens: int
    briefed: int  # targets that reached the LLM steps (the others were excluded by lineage)
    peak_rss_mb: float
    flow_s: float
    task_s: float

    @property
    def prefect_share(self) -> float:
        return (self.flow_s - self.task_s) / self.wall_s if self.wall_s else 0.0


@dataclasses.dataclass
class Measured:
    targets: int
    bound: dict[str, int]
    time_scale: float
    prefect_start_s: float
    cold: Run
    warm: Run
    llm_latency_s: float = 0.0
    llm_concurrency: int = 1

    def bound_s(self) -> dict[str, float]:
        return {s: self.bound[s] / (HOST_RPS[s] * self.time_scale) for s in SOURCES}

    def llm_bound_s(self, run: Run) -> float:
        """The LLM requests' latency if ``llm_concurrency`` of them were always in flight."""
        return run.llm_requests * self.llm_latency_s / self.llm_concurrency

    def logged_bound_s(self, run: Run) -> float:
        """The same bound counting the call log's rows (each repair retry left out)."""
        return run.llm_calls * self.llm_latency_s / self.llm_concurrency


def _stats(base: str) -> dict[str, int]:
    counts: dict[str, int] = requests.get(base + "/_sandbox/stats", timeout=10).json()["counts"]
    return counts


def _chat_requests(counts: dict[str, int]) -> int:
    """Chat requests the sandbox's OpenAI endpoint answered, each after the latency: every
    status but a rate-limit refusal's, which it answers at once."""
    return sum(v for k, v in counts.items() if k.startswith("openai chat ") and k[-3:] != "429")


def _family_counts(counts: dict[str, int], family: str) -> tuple[int, int]:
    """Requests a family answered, and how many of them were rate-limit refusals."""
    refusal = {"openalex": 403, "s2": 429, "arxiv": 503}[family]
    answered = sum(v for k, v in counts.items() if k.split()[0] == family)
    return answered, counts.get(f"{family} {refusal}", 0)


def _task_seconds(api_url: str) -> tuple[float, float]:
    """The newest flow run's wall time and the time some task run of it was running (REST API):
    the union of their spans, since the LLM steps' task runs overlap the lineage's."""
    runs = requests.post(
        api_url + "/flow_runs/filter", json={"sort": "START_TIME_DESC", "limit": 1}, timeout=30
    ).json()
    tasks = requests.post(
        api_url + "/task_runs/filter",
        json={"flow_runs": {"id": {"any_": [runs[0]["id"]]}}},
        timeout=30,
    ).json()

    def span(run: dict[str, Any]) -> tuple[dt.datetime, dt.datetime] | None:
        if not run.get("start_time") or not run.get("end_time"):
            return None
        start, end = (dt.datetime.fromisoformat(run[k]) for k in ("start_time", "end_time"))
        return start, end

    flow = span(runs[0])
    covered, reach = 0.0, None
    for start, end in sorted(s for s in map(span, tasks) if s is not None):
        start = max(start, reach) if reach is not None else start
        if end > start:
            covered += (end - start).total_seconds()
        reach = max(end, reach) if reach is not None else end
    return ((flow[1] - flow[0]).total_seconds() if flow else 0.0), covered


def _llm_log(db: Path) -> tuple[int, int, int]:
    """Calls and tokens (in + out) in the LLM call log, and the targets that have briefs."""
    con = duckdb.connect(str(db), read_only=True)
    row = con.execute(
        "SELECT (SELECT count(*) FROM llm_calls), "
        "(SELECT coalesce(sum(tokens_in + tokens_out), 0) FROM llm_calls), "
        "(SELECT count(DISTINCT target_id) FROM briefs)"
    ).fetchone()
    con.close()
    return (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)


def _build(env: dict[str, str], base: str, api_url: str, targets: int, db: Path) -> Run:
    before = _stats(base)
    llm_before = _llm_log(db) if db.exists() else (0, 0, 0)
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inspire_build",
            "build",
            "--split",
            "eval",
            "--limit",
            str(targets),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"the build failed:\n{errors.decode()[-3000:]}")
    after = _stats(base)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    calls, refused = {}, {}
    for family in SOURCES:
        calls[family], refused[family] = _family_counts(delta, family)
    (calls_after, tokens_after, briefed), (calls_before, tokens_before, _) = (
        _llm_log(db),
        llm_before,
    )
    llm_calls, tokens = calls_after - calls_before, tokens_after - tokens_before
    flow_s, task_s = _task_seconds(api_url)
    return Run(
        wall_s=wall,
        calls=calls,
        refused=refused,
        llm_calls=llm_calls,
        llm_requests=_chat_requests(delta),
        tokens=tokens,
        briefed=briefed,
        peak_rss_mb=usage.ru_maxrss / 1024,
        flow_s=flow_s,
        task_s=task_s,
    )


def _bound(generated: world.World, targets: int) -> dict[str, int]:
    """The lower bound for the targets the build selects, from an unthrottled resolve."""
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        chosen = select_targets(client, con, settings, "eval", limit=targets).selected
        selection = client.stats["openalex"].network  # the candidate list's pages
        bound = lower_bound(resolve_lineage(chosen, client))
        return {**bound, "openalex": bound["openalex"] + selection}


def measure(
    papers: int,
    targets: int,
    time_scale: float,
    seed: int = 0,
    llm: str = "rules",
    llm_latency_s: float = 0.0,
    llm_concurrency: int = 8,
    bulk_release: dt.date | None = None,
    settings: dict[str, str] | None = None,
) -> Measured:
    """Build ``targets`` eval targets of a ``papers``-record world, cold and then warm; with
    ``bulk_release``, the world's bulk files (sandbox/bulk_files.py) are ingested first;
    ``settings`` (``INSPIRE_*`` variables) go over the bench's own."""
    generated = world.generate(world.WorldConfig(seed=seed, papers=papers))
    bound = _bound(generated, targets)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        world.write(generated, root / "world")
        if bulk_release is not None:
            _ingest_bulk(generated, root, bulk_release)
        port, prefect_port = free_port(), free_port()
        base, api_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{prefect_port}/api"
        env = {
            **os.environ,
            **dict(line.split("=", 1) for line in server.env_lines(base, time_scale)),
            "INSPIRE_OPENALEX_RPS": f"{min(100.0, HOST_RPS['openalex'] * time_scale):g}",
            "INSPIRE_WAREHOUSE": str(root / "w.duckdb"),
            "INSPIRE_LLM_BACKEND": llm,
            "INSPIRE_LLM_CONCURRENCY": str(llm_concurrency),
            # One instance key per seed: the cutoffs' jitter, so the eligible references and the
            # LLM calls, are the same in every run, and runs of different code compare.
            "INSPIRE_INSTANCE_KEY": hashlib.sha256(f"bench seed {seed}".encode()).hexdigest(),
            "PREFECT_HOME": str(root / "prefect"),
            "PREFECT_API_URL": api_url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            **(settings or {}),
        }
        sandbox = subprocess.Popen(
            [sys.executable, "-m", "inspire_build", "sandbox", "serve", "--world",
             str(root / "world"), "--port", str(port), "--time-scale", f"{time_scale:g}",
             "--llm-latency", f"{llm_latency_s:g}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started = time.perf_counter()
        prefect = subprocess.Popen(
            [str(Path(sys.executable).parent / "prefect"), "server", "start", "--host",
             "127.0.0.1", "--port", str(prefect_port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_until_up(base, sandbox)
            _wait_for_prefect(api_url)
            prefect_start = time.perf_counter() - started
            cold = _build(env, base, api_url, targets, root / "w.duckdb")
            warm = _build(env, base, api_url, targets, root / "w.duckdb")
        finally:
            for process in (sandbox, prefect):
                process.terminate()
                process.wait(timeout=60)
    return Measured(
        targets, bound, time_scale, prefect_start, cold, warm, llm_latency_s, llm_concurrency
    )


def _ingest_bulk(generated: world.World, root: Path, release: dt.date) -> None:
    bulk_files.write(generated, root / "dumps", release, per_part=2000)
    subprocess.run(
        [sys.executable, "-m", "inspire_build", "--warehouse", str(root / "w.duckdb"), "snapshot",
         "ingest", str(root / "dumps")],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def _wait_for_prefect(api_url: str) -> None:
    for _ in range(360):
        try:
            if requests.get(api_url + "/health", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.5)
    raise SystemExit("the Prefect server did not start within 180 s")


def report(measured: Measured) -> None:
    bound_s = measured.bound_s()
    slowest = max(bound_s, key=lambda s: bound_s[s])
    for label, run in (("cold build", measured.cold), ("warm rerun", measured.warm)):
        print(f"== {label}: {measured.targets} targets, time scale {measured.time_scale:g}")
        for source in SOURCES:
            bound = measured.bound[source]
            print(
                f"  HTTP calls {source:8s} {run.calls[source]:6,d} (rate-limit refusals "
                f"{run.refused[source]:,d})  lower bound {bound:6,d}  "
                f"ratio {run.calls[source] / max(1, bound):.2f} (target <= {TARGET_CALLS_RATIO});"
                f"  the bound takes {bound_s[source]:.1f} s at "
                f"{HOST_RPS[source] * measured.time_scale:.3g}/s"
            )
        print(
            f"  wall time {run.wall_s:7.1f} s  rate-limit bound {bound_s[slowest]:6.1f} s "
            f"({slowest}: {measured.bound[slowest]} calls at "
            f"{HOST_RPS[slowest] * measured.time_scale:.3g}/s)  "
            f"ratio {run.wall_s / bound_s[slowest]:.2f} (target <= {TARGET_WALL_RATIO})"
        )
        print(
            f"  Prefect overhead {run.flow_s - run.task_s:5.1f} s of {run.wall_s:.1f} s "
            f"({run.prefect_share:.1%}); flow run {run.flow_s:.1f} s, tasks {run.task_s:.1f} s"
        )
        print(f"  peak RSS {run.peak_rss_mb:,.0f} MB")
        print(
            f"  LLM calls {run.llm_calls:,d} ({run.llm_calls / measured.targets:.2f} per target), "
            f"tokens {run.tokens:,d} ({run.tokens / measured.targets:,.0f} per target); "
            f"{run.briefed} of the targets reached the LLM steps"
        )
        larger = max(bound_s[slowest], measured.llm_bound_s(run))
        print(
            f"  LLM bound {measured.llm_bound_s(run):6.1f} s ({run.llm_requests:,d} requests x "
            f"{measured.llm_latency_s:g} s / {measured.llm_concurrency} in flight); wall over "
            f"the larger bound: {run.wall_s / larger:.2f}"
        )
        logged = max(bound_s[slowest], measured.logged_bound_s(run))
        print(
            f"  on the call log's {run.llm_calls:,d} rows instead (repairs left out): "
            f"{measured.logged_bound_s(run):.1f} s; wall over the larger bound: "
            f"{run.wall_s / logged:.2f}"
        )
    print(f"Prefect server start-up (apart from the builds): {measured.prefect_start_s:.1f} s")
    print(json.dumps(figures(measured)))


def figures(measured: Measured) -> dict[str, float | int]:
    """The named figures, for the last line: each run's calls, wall time and its ratio to the
    rate-limit bound, Prefect's share, RSS, LLM calls and tokens."""
    bound_s = max(measured.bound_s().values())
    cold, llm_bound_s = measured.cold, measured.llm_bound_s(measured.cold)
    logged_bound_s = measured.logged_bound_s(cold)
    named: dict[str, float | int] = {
        "wall_s": round(cold.wall_s, 2),
        "lineage_bound_s": round(bound_s, 2),
        "llm_bound_s": round(llm_bound_s, 2),
        "ratio": round(cold.wall_s / max(bound_s, llm_bound_s), 3),
        "llm_calls": cold.llm_calls,
        "llm_requests": cold.llm_requests,
        "llm_bound_logged_s": round(logged_bound_s, 2),
        "ratio_logged": round(cold.wall_s / max(bound_s, logged_bound_s), 3),
        "http_calls": sum(cold.calls.values()),
        "llm_latency_s": measured.llm_latency_s,
        "llm_concurrency": measured.llm_concurrency,
        "targets": measured.targets,
        "bound_s": round(bound_s, 2),
        "prefect_start_s": round(measured.prefect_start_s, 2),
    }
    for label, run in (("cold", measured.cold), ("warm", measured.warm)):
        named |= {
            f"{label}_wall_s": round(run.wall_s, 2),
            f"{label}_wall_ratio": round(run.wall_s / bound_s, 3) if bound_s else 0.0,
            f"{label}_calls": sum(run.calls.values()),
            f"{label}_calls_ratio": round(
                sum(run.calls.values()) / max(1, sum(measured.bound.values())), 3
            ),
            f"{label}_prefect_share": round(run.prefect_share, 4),
            f"{label}_peak_rss_mb": round(run.peak_rss_mb, 1),
            f"{label}_llm_calls": run.llm_calls,
            f"{label}_tokens": run.tokens,
        }
    return named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=3000)
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--time-scale", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--llm", choices=("rules", "openai"), default="rules")
    parser.add_argument("--llm-latency", type=float, default=0.0, help="seconds per chat call")
    parser.add_argument("--llm-concurrency", type=int, default=8)
    args = parser.parse_args()
    measured = measure(
        args.papers,
        args.targets,
        args.time_scale,
        args.seed,
        args.llm,
        args.llm_latency,
        args.llm_concurrency,
    )
    report(measured)


if __name__ == "__main__":
    main()
