"""A build from the bulk tables against one from the APIs, over the same sandbox world: the
world written as the OpenAlex snapshot, the S2 Datasets and arXiv's metadata snapshot
(sandbox/bulk_files.py), ingested beside the real snapshot-shaped fixtures and S2 samples. The
bulk build makes at most 5% of the API build's lineage calls (the search identity check asks
OpenAlex once a brief in both), selects the same targets and gives every
reference the same status; each target's ``gold_completeness`` row says the bulk served it.
The ingest keeps the works `inspire snapshot ingest` keeps by default (on arXiv, or in a split's
field): a cited work it left out is asked of the API."""

from __future__ import annotations

import collections
import datetime as dt
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from inspire_build import boundary, bulk, exports, pipeline, warehouse
from inspire_build.sandbox import bulk_files, server, world
from inspire_build.sources import make_client
from inspire_build.tables import versions
from tests.conformance.test_snapshot_ingest import _recorded_works, _write_parts

TARGETS = 16
KEY = SecretStr("5a" * 32)  # one instance key: the cutoffs' jitter is the same in both builds
RELEASE = dt.date(2027, 1, 1)  # after the eval window: the API need not list newer works


def _build(generated: world.World, folder: Path, ingest: list[Path], **settings: Any) -> Any:
    folder.mkdir()
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        config = server.settings_for(
            base, warehouse=folder / "w.duckdb", instance_key=KEY, **settings
        )
        con = warehouse.connect(folder / "w.duckdb")
        warehouse.migrate(con)
        works = bulk.WorkFilter.of(config.splits.values())  # as `inspire snapshot ingest`
        for path in ingest:
            bulk.ingest(con, [str(path)], release=dt.date(2023, 12, 19), works=works)
        pipeline.build_split(con, make_client(config, con), config, "eval", TARGETS)
        counts = httpx.get(base + "/_sandbox/stats").json()["counts"]
    calls = collections.Counter(
        {k: v for k, v in counts.items() if k.split()[0] in ("openalex", "s2", "arxiv")}
    )
    # The search identity check asks OpenAlex once a brief in either build (the bulk tables
    # hold no search index): those are the audit's requests, not the lineage's.
    [(searches,)] = con.execute(
        "SELECT count(*) FROM raw_http WHERE url LIKE '%search.semantic=%' AND status = 200"
    ).fetchall()
    calls["openalex 200"] -= searches
    calls = +calls  # drop a count that reached 0
    references = collections.Counter(
        con.execute(
            'SELECT target_id, coalesce(paper_id, title), status, reason FROM "references"'
        ).fetchall()
    )
    targets = set(con.execute("SELECT paper_id, status, outcome FROM targets").fetchall())
    filtered = con.execute("SELECT coalesce(sum(filtered_out), 0) FROM bulk_files").fetchone()
    completeness = con.execute(
        "SELECT served_by::VARCHAR, sum(unidentified) FROM gold_completeness GROUP BY 1"
    ).fetchall()
    exports.export(con, config, "eval", None, folder / "export", force=True)
    card = (folder / "export" / "dataset_card.md").read_text()
    sources = card.split("## Sources")[1].split("\n## ")[0]
    _attack_sources(con, versions.latest(con)["eval"], sources)
    con.close()
    return calls, references, targets, completeness, sources, filtered[0] if filtered else 0


def _attack_sources(con: Any, version: str, sources: str) -> None:
    """A competitor reads the card's Sources section for a target: none of the needles the
    export's own leak scan looks for (target IDs and their spellings, title n-grams, T3 titles)
    is in it, and it names no file of the snapshot either."""
    needles = exports.leak_needles(con, version)
    assert len(needles) > TARGETS
    assert boundary.found_in(needles, boundary.normal_text(sources)) == []
    assert "/" not in sources and ".gz" not in sources


def test_a_build_from_bulk_tables_asks_5_percent_and_agrees_on_every_status(
    tmp_path: Path, real_recordings: Path, s2_samples: Path
) -> None:
    generated = world.generate(world.WorldConfig(seed=1, papers=1200))
    dumps = tmp_path / "dumps"
    bulk_files.write(generated, dumps, RELEASE, per_part=400)
    fixtures = tmp_path / "fixtures" / "openalex" / "works" / "updated_date=2026-07-23"
    _write_parts(fixtures, _recorded_works(), 2)
    ingest = [dumps, tmp_path / "fixtures", s2_samples]

    api = _build(generated, tmp_path / "api", [])
    held = _build(generated, tmp_path / "bulk", ingest)
    off = _build(generated, tmp_path / "off", ingest, bulk=False)

    assert api[0].total() > 0 and held[0].total() <= 0.05 * api[0].total(), (held[0], api[0])
    # the default filter left out the works outside Computer Science and arXiv (the world's
    # published twins in Mathematics and Physics, and most of the recordings)
    assert held[5] > 21 and api[5] == 0
    assert held[2] == api[2]  # the same targets, each with the same outcome
    assert sum(held[1].values()) == sum(api[1].values()) > TARGETS * 10
    assert held[1] == api[1], (held[1] - api[1], api[1] - held[1])
    label = f"bulk {RELEASE}"
    [(served, unidentified)] = held[3]
    assert served == f'{{"openalex":"{label}","s2 references":"{label}"}}'
    cited_without_ids = sum(
        len([c for c in r.references if c.null_ids])
        for r in generated.records
        if any(f"arxiv:{r.arxiv}" == t for t, *_ in held[2])
    )
    assert unidentified == cited_without_ids > 0
    assert f"| {label} | {label} |" in held[4] and "| api |" not in held[4]
    assert "| api | api |" in api[4] and "bulk" not in api[4]
    assert off[0] == api[0] and off[1] == api[1]  # bulk=False: the APIs alone, as before


def test_works_newer_than_the_snapshot_are_listed_from_the_api(tmp_path: Path) -> None:
    """A snapshot released inside the split's window: the API lists only the works published
    after it, and the build selects the targets the APIs alone select."""
    generated = world.generate(world.WorldConfig(seed=1, papers=1200))
    release = dt.date(2026, 1, 1)
    bulk_files.write(generated, tmp_path / "dumps", release, per_part=400)
    api = _build(generated, tmp_path / "api", [])
    held = _build(generated, tmp_path / "bulk", [tmp_path / "dumps"])
    assert set(held[0]) == {"openalex 200"} and 0 < held[0].total() < api[0]["openalex 200"]
    assert held[2] == api[2] and held[1] == api[1]
