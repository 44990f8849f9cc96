"""Sandbox speed: world generation time, and the sustained rate of OpenAlex OR-batches of 100.

Run: .venv/bin/python bench/sandbox_speed.py [--papers 5000] [--seconds 10] [--threads 4]
The service runs in its own process (`inspire sandbox serve`), as in use, and is warmed with
one pass over the world first. Prints each figure beside its target and the ratio; nothing is
asserted, since machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _checkout  # noqa: F401  (this checkout first on the path)
import requests

from inspire_build.local_server import free_port
from inspire_build.sandbox import world
from inspire_build.sources import openalex

TARGET_GENERATE_S = 60.0
TARGET_BATCH_RPS = 200.0


def wait_until_up(base: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError("the sandbox exited before it served")
        try:
            requests.get(base + "/_sandbox/stats", timeout=1)
            return
        except requests.ConnectionError:
            time.sleep(0.1)
    raise RuntimeError("the sandbox did not start within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        generated = world.generate(world.WorldConfig(seed=0, papers=args.papers))
        world.write(generated, Path(folder))
        generate_s = time.perf_counter() - started
        print(
            f"generate {args.papers:,}-paper world: {generate_s:.1f} s "
            f"(target < {TARGET_GENERATE_S:.0f} s; {generate_s / TARGET_GENERATE_S:.2f}x of bound)"
        )

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = [
            sys.executable,
            "-m",
            "inspire_build",
            "sandbox",
            "serve",
            "--world",
            folder,
            "--port",
            str(port),
            "--time-scale",
            "1000",
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        try:
            wait_until_up(base, process)
            rate = measure(base, [r.openalex for r in generated.records], args)
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(
        f"/works OR-batches of 100, {args.threads} client threads: {rate:.0f} requests/s "
        f"(target > {TARGET_BATCH_RPS:.0f}/s; {rate / TARGET_BATCH_RPS:.2f}x of bound)"
    )
    figures = {"generate_s": round(generate_s, 2), "batch_rps": round(rate, 1)}
    print(json.dumps(figures))


def measure(base: str, ids: list[str], args: argparse.Namespace) -> float:
    select = ",".join(openalex.WORK_FIELDS)

    def batch(session: requests.Session, chosen: list[str]) -> None:
        params = {"filter": "openalex:" + "|".join(chosen), "select": select, "per_page": "100"}
        response = session.get(base + "/works", params=params, timeout=60)
        response.raise_for_status()
        # Count the works without parsing 0.5 MB per answer: parsing in the client's threads
        # would measure the client's GIL, not the service. Each work object opens this way.
        if response.content.count(b'{"id":"https://openalex.org/W') != len(chosen):
            raise RuntimeError("the sandbox answered a batch with fewer works than asked for")

    warm = requests.Session()
    for start in range(0, len(ids), 100):  # render every work once, as a long build would
        batch(warm, ids[start : start + 100])

    done = 0
    lock = threading.Lock()
    deadline = time.perf_counter() + args.seconds

    def worker(seed: int) -> None:
        nonlocal done
        rng, session = random.Random(seed), requests.Session()
        while time.perf_counter() < deadline:
            batch(session, rng.sample(ids, 100))
            with lock:
                done += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done / (time.perf_counter() - start)


if __name__ == "__main__":
    main()
