"""The export bytes of one fixed in-process build, to compare two commits of a redesign.

Run: .venv/bin/python bench/export_bytes.py [--papers 1500] [--seed 7] [--limit 40]

An eval build with the rules backend over a sandbox world, with a fixed instance key and the
code fingerprint pinned (so that only behaviour, not the edit itself, moves the bytes), then
its export. It prints each file's sha256 and ends with one JSON line of them. There is no bound
to compare with: two commits agree when their lines are equal.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import _checkout  # noqa: F401  (this checkout first on the path)

from inspire_build import exports, pipeline, splits, warehouse
from inspire_build.config import get_settings
from inspire_build.sandbox import server, world
from inspire_build.sources import make_client


def export_hashes(papers: int, seed: int, limit: int) -> dict[str, str]:
    splits.code_fingerprint = lambda: "pinned"  # only behaviour counts, not the edit
    os.environ["INSPIRE_INSTANCE_KEY"] = "ab" * 32
    get_settings.cache_clear()
    generated = world.generate(world.WorldConfig(seed=seed, papers=papers))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        pipeline.build_split(con, make_client(settings, con, mode="live"), settings, "eval", limit)
        with tempfile.TemporaryDirectory() as folder:
            return exports.export(con, settings, "eval", None, Path(folder) / "export")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args()
    hashes = export_hashes(args.papers, args.seed, args.limit)
    for name, digest in hashes.items():
        print(f"{digest[:16]}  {name}")
    print(json.dumps(hashes))


if __name__ == "__main__":
    main()
