"""`inspire snapshot ingest` over real records: the OpenAlex single-work recordings written as
snapshot parts (``updated_date=2026-07-23/part_*.gz``, the day they were recorded), and the S2
Datasets samples as they are. Each bulk record is the Paper the source's `parse` gives for the
same record; a truncated part is refused by name, with the earlier parts' rows intact."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from inspire_build import bulk, warehouse
from inspire_build.models import Paper
from inspire_build.sources import openalex, semanticscholar
from tests.conformance.conftest import REAL
from tests.conftest import run_inspire

WORKS = REAL / "openalex" / "single_works"
RELEASE = dt.date(2023, 12, 19)  # the S2 samples' folder names none


def _recorded_works() -> list[dict[str, Any]]:
    """The 25 recordings' works, each once (three recordings are one book)."""
    works: dict[str, dict[str, Any]] = {}
    for cassette in sorted(WORKS.glob("*.yaml")):
        for interaction in yaml.safe_load(cassette.read_text())["interactions"]:
            work = json.loads(interaction["response"]["body"]["string"])
            works.setdefault(work["id"], work)
    return list(works.values())


def _write_parts(folder: Path, works: list[dict[str, Any]], parts: int) -> list[Path]:
    folder.mkdir(parents=True)
    paths = []
    for number in range(parts):
        path = folder / f"part_{number:03d}.gz"
        lines = "".join(json.dumps(w) + "\n" for w in works[number::parts])
        path.write_bytes(gzip.compress(lines.encode()))
        paths.append(path)
    return paths


def _papers(warehouse: Path, source: str) -> dict[str, Paper]:
    con = duckdb.connect(str(warehouse), read_only=True)
    rows = con.execute(
        "SELECT record_id, paper FROM bulk_records WHERE source = ?", [source]
    ).fetchall()
    con.close()
    return {r: Paper.model_validate_json(p) for r, p in rows}


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    works = _recorded_works()
    assert len(works) == 23
    _write_parts(tmp_path / "openalex" / "works" / "updated_date=2026-07-23", works, 2)
    return tmp_path / "openalex"


def test_snapshot_parts_and_s2_samples_ingest_as_the_parsers_read_them(
    tmp_path: Path, snapshot: Path, s2_samples: Path
) -> None:
    db = tmp_path / "w.duckdb"
    ingested = run_inspire("--warehouse", db, "snapshot", "ingest", snapshot, "--keep-all")
    assert ingested.returncode == 0, ingested.stderr
    assert "part_000.gz: openalex-works, 12 rows," in ingested.stdout
    assert "part_001.gz: openalex-works, 11 rows," in ingested.stdout
    s2 = run_inspire("--warehouse", db, "snapshot", "ingest", s2_samples, "--release", "2023-12-19")
    assert s2.returncode == 0, s2.stderr
    # none of the sample's 100 citations is made by a paper of the papers sample, let alone one
    # on arXiv: the default filter counts them all, --keep-all reads that file alone again
    assert "4 file(s) ingested, 0 already in: 300 rows, 100 filtered out" in s2.stdout
    assert "citations-sample.jsonl: s2-citations, 0 rows (100 filtered out)" in s2.stdout
    s2 = run_inspire(
        "--warehouse", db, "snapshot", "ingest", s2_samples, "--release", "2023-12-19", "--keep-all"
    )
    assert "1 file(s) ingested, 3 already in: 100 rows, 0 filtered out" in s2.stdout
    works = _papers(db, "openalex")
    assert len(works) == 23
    article = works["W1982728624"]
    assert article == openalex.parse(
        next(w for w in _recorded_works() if w["id"].endswith("W1982728624"))
    )
    assert article.ids.doi == "10.1371/journal.pone.0000030"
    assert len(article.referenced_works or ()) == 76
    con = duckdb.connect(str(db), read_only=True)
    facets = con.execute(
        "SELECT record_id, primary_field, on_arxiv, published::VARCHAR, listed_references "
        "FROM bulk_records WHERE record_id IN ('W9783904', 'W6885490810') ORDER BY 1"
    ).fetchall()
    con.close()
    assert facets == [  # what the candidate filter tests, from the recordings by hand
        ("W6885490810", None, False, "2015-12-02", 0),  # no primary topic
        ("W9783904", 17, False, "2012-01-01", 14),
    ]
    papers = _papers(db, "s2")
    assert len(papers) == 100
    first = json.loads((s2_samples / "papers" / "papers-sample.jsonl").read_text().splitlines()[0])
    paper = papers[str(first["corpusid"])]
    assert paper.ids.s2 == "d5ec1ea2c9261c54cf41fef1e5c9f2f8abe28ce2"  # from its url
    assert paper.ids.corpus_id == "108228682" and paper.year == 2018
    assert paper.fields == ("Agricultural And Food Sciences", "Chemistry")
    again = run_inspire("--warehouse", db, "snapshot", "ingest", snapshot)
    assert "0 file(s) ingested, 2 already in" in again.stdout


def test_the_default_filter_keeps_the_splits_field_and_counts_what_it_left_out(
    tmp_path: Path, snapshot: Path
) -> None:
    """The recordings hold two Computer Science works (W9783904 and W2476684680, both in
    part_000) and none on arXiv: the default splits' filter keeps those two and counts the other
    21; --keep-all then reads both parts again and keeps every work."""
    db = tmp_path / "w.duckdb"
    ingested = run_inspire("--warehouse", db, "snapshot", "ingest", snapshot)
    assert ingested.returncode == 0, ingested.stderr
    assert "works kept: on arXiv, or of primary field 17" in ingested.stdout
    assert "part_000.gz: openalex-works, 2 rows (10 filtered out)," in ingested.stdout
    assert "part_001.gz: openalex-works, 0 rows (11 filtered out)," in ingested.stdout
    assert "2 rows, 21 filtered out" in ingested.stdout
    assert sorted(_papers(db, "openalex")) == ["W2476684680", "W9783904"]
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT rows, filtered_out FROM bulk_files ORDER BY path").fetchall()
    con.close()
    assert rows == [(2, 10), (0, 11)]
    everything = run_inspire("--warehouse", db, "snapshot", "ingest", snapshot, "--keep-all")
    assert "2 file(s) ingested, 0 already in: 23 rows, 0 filtered out" in everything.stdout
    works = _papers(db, "openalex")
    assert len(works) == 23
    assert all(works[w["id"].rsplit("/", 1)[1]] == openalex.parse(w) for w in _recorded_works())


def test_a_truncated_part_is_refused_by_name_and_a_rerun_completes(
    tmp_path: Path, snapshot: Path
) -> None:
    db = tmp_path / "w.duckdb"
    part = snapshot / "works" / "updated_date=2026-07-23" / "part_002.gz"
    whole = gzip.compress(b"".join(json.dumps(w).encode() + b"\n" for w in _recorded_works()[:5]))
    part.write_bytes(whole[: len(whole) - 6])  # the data is there; the gzip trailer is not
    failed = run_inspire("--warehouse", db, "snapshot", "ingest", snapshot, "--keep-all")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "part_002.gz" in failed.stderr and "truncated" in failed.stderr
    con = duckdb.connect(str(db), read_only=True)
    kept = con.execute("SELECT path, rows FROM bulk_files ORDER BY path").fetchall()
    held = con.execute("SELECT count(*) FROM bulk_records").fetchone()
    con.close()
    assert [(Path(p).name, r) for p, r in kept] == [("part_000.gz", 12), ("part_001.gz", 11)]
    assert held == (23,)
    part.write_bytes(whole)
    rerun = run_inspire("--warehouse", db, "snapshot", "ingest", snapshot, "--keep-all")
    assert rerun.returncode == 0, rerun.stderr
    assert "1 file(s) ingested, 2 already in: 5 rows" in rerun.stdout
    assert len(_papers(db, "openalex")) == 23  # the five were in the first parts already


def test_s2_records_match_the_graph_apis_parse_of_the_same_fields(s2_samples: Path) -> None:
    line = json.loads((s2_samples / "papers" / "papers-sample.jsonl").read_text().splitlines()[0])
    api_shaped = {
        "paperId": line["url"].rsplit("/", 1)[-1],
        "corpusId": line["corpusid"],
        "externalIds": line["externalids"],
        "title": line["title"],
        "authors": line["authors"],
        "venue": line["venue"],
        "year": line["year"],
        "referenceCount": line["referencecount"],
        "s2FieldsOfStudy": line["s2fieldsofstudy"],
        "publicationDate": line["publicationdate"],
    }
    row = {k: json.dumps(v) for k, v in line.items()}
    assert bulk.s2_paper(row) == semanticscholar.parse_paper(api_shaped)


def test_parsing_in_worker_processes_gives_the_same_records(
    tmp_path: Path, snapshot: Path, s2_samples: Path
) -> None:
    held = {}
    for jobs in (1, 2):
        con = duckdb.connect(str(tmp_path / f"{jobs}.duckdb"))
        warehouse.migrate(con)
        done = bulk.ingest(con, [str(snapshot), str(s2_samples)], release=RELEASE, jobs=jobs)
        assert [r.rows for r in done if r.kind is bulk.Kind.OPENALEX_WORKS] == [12, 11]
        held[jobs] = con.execute(
            "SELECT source, record_id, paper, primary_field, published FROM bulk_records "
            "ORDER BY 1, 2"
        ).fetchall()
        con.close()
    assert len(held[1]) == 23 + 100 and held[1] == held[2]
