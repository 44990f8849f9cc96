"""Sandbox speed: world generation time, and the sustained rate of OpenAlex OR-batches of 100.

Run: .venv/bin/python bench/sandbox_speed.py [--papers 5000] [--seconds 10] [--threads 4]
Prints each figure beside its target and the ratio. Nothing is asserted: machines are noisy.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from pathlib import Path

import requests

from inspire_build.sandbox import server, world
from inspire_build.sources import openalex

TARGET_GENERATE_S = 60.0
TARGET_BATCH_RPS = 200.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    started = time.perf_counter()
    generated = world.generate(world.WorldConfig(seed=0, papers=args.papers))
    with tempfile.TemporaryDirectory() as folder:
        world.write(generated, Path(folder))
    generate_s = time.perf_counter() - started
    print(
        f"generate {args.papers:,}-paper world: {generate_s:.1f} s "
        f"(target < {TARGET_GENERATE_S:.0f} s; {generate_s / TARGET_GENERATE_S:.2f}x of bound)"
    )

    ids = [r.openalex for r in generated.records]
    select = ",".join(openalex.WORK_FIELDS)
    config = server.SandboxConfig(time_scale=1000)  # limits out of the way: measure the service
    with server.running(generated, config) as base:
        done = 0
        lock = threading.Lock()
        deadline = time.perf_counter() + args.seconds

        def worker(seed: int) -> None:
            nonlocal done
            rng = random.Random(seed)
            session = requests.Session()
            while time.perf_counter() < deadline:
                batch = rng.sample(ids, 100)
                params = {
                    "filter": "openalex:" + "|".join(batch),
                    "select": select,
                    "per_page": "100",
                }
                response = session.get(base + "/works", params=params, timeout=30)
                response.raise_for_status()
                assert len(response.json()["results"]) == 100
                with lock:
                    done += 1

        # Warm the render cache once, as a long build would.
        requests.get(base + "/works", params={"filter": "openalex:" + "|".join(ids[:100])})
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rate = done / (time.perf_counter() - start)
    print(
        f"/works OR-batches of 100, {args.threads} client threads: {rate:.0f} requests/s "
        f"(target > {TARGET_BATCH_RPS:.0f}/s; {rate / TARGET_BATCH_RPS:.2f}x of bound)"
    )


if __name__ == "__main__":
    main()
