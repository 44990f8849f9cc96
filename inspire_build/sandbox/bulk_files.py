"""A sandbox world as the bulk distributions publish it: the OpenAlex snapshot's works
(``openalex/works/updated_date=R/part_NNN.gz``) and the S2 Datasets' ``papers``,
``abstracts``, ``citations`` and ``paper-ids`` (``s2/R/<dataset>/part-NNN.jsonl.gz``), and
arXiv's metadata snapshot (``arxiv/R/arxiv-metadata-oai-snapshot.json``, every version dated),
each record rendered as the sandbox's APIs serve it. A build can then read the world from
bulk tables and be compared with one that asked the APIs.

A record the APIs serve as a body that is not JSON (the "malformed" hostile kind) is left out:
the bulk files hold what a snapshot can hold, and the build asks the API for the rest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from inspire_build.sandbox.server import Sandbox, SandboxConfig
from inspire_build.sandbox.world import Record, World


@dataclasses.dataclass(frozen=True)
class Written:
    files: list[Path]
    works: int
    papers: int
    citations: int
    bytes: int


def write(world: World, folder: Path, release: dt.date, *, per_part: int = 5000) -> Written:
    """Write ``world`` under ``folder`` as the two distributions of ``release``; ``per_part``
    records per file. Returns what was written."""
    sandbox = Sandbox(world, SandboxConfig())
    records = [r for r in world.records if r.hostile != "malformed_json"]
    day = release.isoformat()
    works = folder / "openalex" / "works" / f"updated_date={day}"
    s2 = folder / "s2" / day
    files: list[Path] = []
    files += _parts(works, "part_{:03d}.gz", (sandbox.work(r) for r in records), per_part)
    rows = [s2_row(r, sandbox.paper(r)) for r in records]
    files += _parts(s2 / "papers", "part-{:03d}.jsonl.gz", iter(rows), per_part)
    abstracts = (
        {"corpusid": r.corpus_id, "abstract": a}
        for r in records
        if isinstance(a := sandbox.paper(r)["abstract"], str)
    )
    files += _parts(s2 / "abstracts", "part-{:03d}.jsonl.gz", abstracts, per_part)
    citations = list(_citations(sandbox, records))
    files += _parts(s2 / "citations", "part-{:03d}.jsonl.gz", iter(citations), per_part * 10)
    ids = ({"sha": r.s2, "corpusid": r.corpus_id, "primary": True} for r in records)
    files += _parts(s2 / "paper-ids", "part-{:03d}.jsonl.gz", ids, per_part)
    files.append(_arxiv_snapshot(folder / "arxiv" / day, records))
    size = sum(f.stat().st_size for f in files)
    return Written(files, len(records), len(rows), len(citations), size)


def _parts(folder: Path, pattern: str, rows: Iterator[dict[str, Any]], per_part: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    batch: list[bytes] = []
    for row in rows:
        batch.append(orjson.dumps(row) + b"\n")
        if len(batch) == per_part:
            written.append(_flush(folder / pattern.format(len(written)), batch))
            batch = []
    if batch or not written:
        written.append(_flush(folder / pattern.format(len(written)), batch))
    return written


def _flush(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(gzip.compress(b"".join(lines), compresslevel=1))
    return path


def s2_row(record: Record, paper: dict[str, Any]) -> dict[str, Any]:
    """A Graph API paper -> the Datasets ``papers`` line: lower-case names, the CorpusId a
    string, the key and url always there (a hostile record's other fields stay as served)."""
    external = paper["externalIds"]
    if isinstance(external, dict):
        external = {k: (str(v) if v is not None else None) for k, v in external.items()}
    return {
        "corpusid": record.corpus_id,
        "externalids": external,
        "url": f"https://www.semanticscholar.org/paper/{record.s2}",
        "title": paper["title"],
        "authors": paper["authors"],
        "venue": paper["venue"],
        "year": paper["year"],
        "referencecount": paper["referenceCount"],
        "s2fieldsofstudy": paper["s2FieldsOfStudy"],
        "publicationdate": paper["publicationDate"],
    }


def _citations(sandbox: Sandbox, records: list[Record]) -> Iterator[dict[str, Any]]:
    for record in records:
        for citation in record.references:
            cited = sandbox.by_key[citation.cites]
            yield {
                "citingcorpusid": str(record.corpus_id),  # a string in the real files
                "citedcorpusid": None if citation.null_ids else str(cited.corpus_id),
                "isinfluential": citation.influential,
                "contexts": citation.contexts,
                "intents": citation.intents,
            }


def _arxiv_snapshot(folder: Path, records: list[Record]) -> Path:
    """arXiv's metadata snapshot, one JSON line per paper, plain (Kaggle's file is not gzip)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "arxiv-metadata-oai-snapshot.json"
    lines = (orjson.dumps(_arxiv_line(r)) + b"\n" for r in records if r.arxiv)
    path.write_bytes(b"".join(lines))
    return path


def _arxiv_line(record: Record) -> dict[str, Any]:
    def created(day: str) -> str:
        noon = dt.datetime.fromisoformat(day).replace(hour=12, tzinfo=dt.UTC)
        return email.utils.format_datetime(noon, usegmt=True)

    return {
        "id": record.arxiv,
        "title": record.title,
        "abstract": record.abstract,
        "doi": record.doi if record.kind == "single" else None,  # as the Atom entry has it
        "categories": " ".join(record.categories),
        "versions": [{"version": f"v{n}", "created": created(d)} for n, d in record.arxiv_versions],
        "journal-ref": None,
    }
