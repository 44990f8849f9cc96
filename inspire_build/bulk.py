"""The bulk distributions in: the OpenAlex snapshot's works (JSON Lines, gzip, in
``updated_date=…/part_*.gz`` folders), the Semantic Scholar Datasets' ``papers``,
``abstracts``, ``citations`` and ``paper-ids`` files, and arXiv's metadata snapshot
(``arxiv-metadata-oai-snapshot.json``, every version dated), read by DuckDB with explicit
columns.

Works and papers go through the sources' own ``parse`` functions, so a bulk record is the Paper
the API would have given. Each file is ingested in one transaction with its ``bulk_files`` row:
a rerun skips the files already in (same size and modification time), and a file that cannot
be read whole (a truncated ``.gz``, a malformed line) is refused, naming it, with nothing of it
written and every earlier file kept.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import itertools
import json
import multiprocessing
import re
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Any

import duckdb
import orjson

from inspire_build.errors import DataFileError, InputError
from inspire_build.models import Paper, Source
from inspire_build.sources import arxiv, openalex, semanticscholar
from inspire_build.tables import bulk as bulk_table


class Kind(StrEnum):
    OPENALEX_WORKS = "openalex-works"
    S2_PAPERS = "s2-papers"
    S2_ABSTRACTS = "s2-abstracts"
    S2_CITATIONS = "s2-citations"
    S2_PAPER_IDS = "s2-paper-ids"
    ARXIV_METADATA = "arxiv-metadata"


# A path component -> the kind of the files under it (the distributions' own folder names).
_FOLDERS = {
    "works": Kind.OPENALEX_WORKS,
    "papers": Kind.S2_PAPERS,
    "abstracts": Kind.S2_ABSTRACTS,
    "citations": Kind.S2_CITATIONS,
    "paper-ids": Kind.S2_PAPER_IDS,
    "arxiv-metadata": Kind.ARXIV_METADATA,
}
_DATE = re.compile(r"(?:updated_date=)?(\d{4}-\d{2}-\d{2})$")
_SUFFIXES = (".gz", ".jsonl", ".json")


def kind_of(path: Path) -> Kind:
    """The kind of a file, from the nearest folder (or file-name prefix) that names one."""
    for part in reversed(path.parts[:-1]):
        if part in _FOLDERS:
            return _FOLDERS[part]
        if part.startswith("updated_date="):
            return Kind.OPENALEX_WORKS
    for prefix, kind in sorted(_FOLDERS.items(), key=lambda item: -len(item[0])):
        if path.name.startswith(prefix):
            return kind
    raise InputError(
        f"{path}: cannot tell which distribution this is; put it under a folder named "
        f"{', '.join(sorted(_FOLDERS))} or updated_date=YYYY-MM-DD, or pass --kind"
    )


def release_of(path: Path) -> dt.date | None:
    """The release a path names: OpenAlex's ``updated_date=YYYY-MM-DD`` folder, or an S2
    release folder ``YYYY-MM-DD``; the nearest one wins."""
    for part in reversed(path.parts[:-1]):
        if found := _DATE.fullmatch(part):
            return dt.date.fromisoformat(found.group(1))
    return None


def expand(paths: Iterable[str]) -> list[Path]:
    """Files, folders (every data file under them) and globs -> the files, in one order: by
    release, then path (so that a newer release's record replaces an older one)."""
    found: set[Path] = set()
    for text in paths:
        matches = [Path(text)]
        if any(ch in text for ch in "*?["):
            path = Path(text)
            matches = sorted(Path(path.anchor or ".").glob(str(path.relative_to(path.anchor))))
            if not matches:
                raise InputError(f"{text}: no file matches")
        for match in matches:
            if match.is_dir():
                found.update(p for p in match.rglob("*") if p.is_file() and _is_data(p))
            elif match.is_file():
                found.add(match)
            else:
                raise InputError(f"{match}: no such file or folder")
    if not found:
        raise InputError("no data files (.gz, .jsonl, .json) under the paths given")
    return sorted(found, key=lambda p: (release_of(p) or dt.date.min, str(p)))


def _is_data(path: Path) -> bool:
    return path.name.endswith(_SUFFIXES) and not path.name.startswith(".")


# --- rows -> Paper records (pure) ---------------------------------------------------------------


def openalex_paper(row: Mapping[str, str | None]) -> Paper:
    """One snapshot work, its columns as JSON text -> the Paper ``openalex.parse`` gives."""
    return openalex.parse({k: json.loads(v) for k, v in row.items() if v is not None})


# The Datasets' ``papers`` names -> the Graph API's (the S2 records' shape `parse_paper` reads).
_S2_NAMES = {
    "corpusid": "corpusId",
    "externalids": "externalIds",
    "title": "title",
    "authors": "authors",
    "venue": "venue",
    "year": "year",
    "referencecount": "referenceCount",
    "s2fieldsofstudy": "s2FieldsOfStudy",
    "publicationdate": "publicationDate",
}


def s2_paper(row: Mapping[str, str | None], abstract: str | None = None) -> Paper:
    """One Datasets ``papers`` line, its columns as JSON text -> the Paper ``parse_paper``
    gives; the paperId is the last part of its ``url``."""
    record: dict[str, Any] = {
        _S2_NAMES[k]: json.loads(v) for k, v in row.items() if v is not None and k in _S2_NAMES
    }
    text = row.get("url")
    url = json.loads(text) if text else None
    if isinstance(url, str) and "/paper/" in url:
        record["paperId"] = url.rsplit("/", 1)[-1]
    if abstract is not None:
        record["abstract"] = abstract
    return semanticscholar.parse_paper(record)


def arxiv_paper(row: Mapping[str, str | None]) -> Paper:
    """One line of arXiv's metadata snapshot, its columns as JSON text -> the Paper
    ``arxiv.parse_metadata`` gives."""
    return arxiv.parse_metadata({k: json.loads(v) for k, v in row.items() if v is not None})


def work_facets(row: Mapping[str, str | None], paper: Paper) -> dict[str, object]:
    """What a split's candidate filter tests in a snapshot work, read as OpenAlex's filter
    reads it: ``primary_topic.field.id``, ``locations.source.id`` (arXiv's),
    ``publication_date`` and ``referenced_works_count``."""
    topic = json.loads(row.get("primary_topic") or "null")
    field = topic.get("field") if isinstance(topic, dict) else None
    field_id = str(field.get("id", "")) if isinstance(field, dict) else ""
    number = field_id.rsplit("/", 1)[-1]
    locations = json.loads(row.get("locations") or "null")
    on_arxiv = any(
        isinstance(place, dict)
        and isinstance(place.get("source"), dict)
        and str(place["source"].get("id", "")).endswith(openalex.ARXIV_SOURCE)
        for place in (locations if isinstance(locations, list) else [])
    )
    return {
        "primary_field": int(number) if number.isdigit() else None,
        "on_arxiv": on_arxiv,
        "published": paper.publication_date.isoformat() if paper.publication_date else None,
        "listed_references": paper.reference_count,
    }


def _record_id(paper: Paper) -> str | None:
    return {
        Source.OPENALEX: paper.ids.openalex,
        Source.S2: paper.ids.corpus_id,
        Source.ARXIV: paper.ids.arxiv,
    }[paper.source]


# --- ingest -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Ingested:
    path: Path
    kind: Kind
    release: dt.date | None
    rows: int
    bytes: int
    seconds: float
    skipped: bool = False  # already in, unchanged

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        if self.skipped:
            return f"{self.path}: already in ({self.rows:,} rows), skipped"
        per_s = self.rows / max(self.seconds, 1e-9)
        return (
            f"{self.path}: {self.kind.value}, {self.rows:,} rows, {self.bytes / 1e6:.1f} MB in "
            f"{self.seconds:.1f} s ({self.mb_per_s:.1f} MB/s, {per_s:,.0f} rows/s)"
        )


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[str],
    *,
    kind: Kind | None = None,
    release: dt.date | None = None,
    say: Callable[[Ingested], None] | None = None,
    jobs: int = 1,
) -> list[Ingested]:
    """Ingest every file under ``paths``, each in its own transaction and in release order;
    ``say`` hears of each as it ends. ``kind`` and ``release`` stand in for what a path does not
    name. With ``jobs`` > 1, worker processes read and parse the next files while this one
    writes (parsing, not DuckDB, bounds works: 0.3 ms each)."""
    planned = [(path, kind or kind_of(path), release_of(path) or release) for path in expand(paths)]
    undated = [str(path) for path, _, day in planned if day is None]
    if undated:
        raise InputError(
            f"no release date for {', '.join(undated[:3])}{' …' if len(undated) > 3 else ''}: "
            "its path names none (updated_date=YYYY-MM-DD, or a YYYY-MM-DD folder); pass --release"
        )
    held = {str(p.resolve()): bulk_table.done_file(con, str(p.resolve())) for p, _, _ in planned}
    todo = [i for i, (p, _, _) in enumerate(planned) if held[str(p.resolve())] != _stat(p)]
    done = []
    with tempfile.TemporaryDirectory(prefix="inspire-bulk-") as tmp, _Stager(jobs, tmp) as stager:
        for position, (path, kind_, day) in enumerate(planned):
            stager.ahead([planned[i][:2] for i in todo if i >= position][: max(jobs, 1) + 1])
            if position in todo:
                result = _ingest_file(con, path, kind_, day, stager.staged(path, kind_))
            else:
                rows = next(r[3] for r in bulk_table.files(con) if r[0] == str(path.resolve()))
                result = Ingested(path, kind_, day, int(rows), path.stat().st_size, 0.0, True)
            done.append(result)
            if say is not None:
                say(result)
    return done


def _stat(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


class _Stager:
    """Reads and parses files into staged JSON Lines: in this process (``jobs`` 1), or in a
    pool of ``jobs`` spawned processes, a few files ahead of the one being written."""

    def __init__(self, jobs: int, folder: str) -> None:
        self._folder, self._futures = folder, dict[Path, Any]()
        self._names = itertools.count()  # a staged file's name; never reused while it waits
        context = multiprocessing.get_context("spawn")  # never fork a process holding DuckDB
        self._pool = ProcessPoolExecutor(jobs, mp_context=context) if jobs > 1 else None

    def __enter__(self) -> _Stager:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def ahead(self, files: Sequence[tuple[Path, Kind]]) -> None:
        for path, kind in files:
            if self._pool is not None and path not in self._futures:
                target = str(Path(self._folder) / f"{next(self._names)}.jsonl")
                self._futures[path] = self._pool.submit(stage_file, kind, path, target)

    def staged(self, path: Path, kind: Kind) -> tuple[Path | None, float]:
        """The file checked whole and, for the kinds parsed in Python, staged; and the seconds
        that took. A bad file raises DataFileError, naming it."""
        future = self._futures.pop(path, None)
        if future is not None:
            result: tuple[Path | None, float] = future.result()
            return result
        return stage_file(kind, path, str(Path(self._folder) / "inline.jsonl"))


def stage_file(kind: Kind, path: Path, target: str) -> tuple[Path | None, float]:
    """Check ``path`` whole and parse its records into ``target`` (None for the kinds DuckDB
    loads itself); returns that and the seconds taken. Runs in a worker process too, so it opens
    only an in-memory DuckDB."""
    started = time.monotonic()
    _check_whole(path)
    staged = None
    if kind not in _SQL_KINDS:
        reader = duckdb.connect()
        try:
            staged = _stage(reader, kind, path, Path(target))
        except duckdb.Error as error:
            raise DataFileError(f"{path}: cannot read it, nothing of it kept ({error})") from None
        finally:
            reader.close()
    return staged, time.monotonic() - started


def _ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    kind: Kind,
    release: dt.date | None,
    staged: tuple[Path | None, float],
) -> Ingested:
    started = time.monotonic()
    name, (size, modified) = str(path.resolve()), _stat(path)
    records, stage_s = staged
    file_row = {
        "path": name,
        "kind": kind.value,
        "release": release,
        "bytes": size,
        "modified_ns": modified,
        "seconds": stage_s,
        "ingested_at": dt.datetime.now(dt.UTC),
    }
    try:
        rows = bulk_table.replace_file(con, kind.value, Path(name), release, records, file_row)
    except duckdb.Error as error:
        raise DataFileError(f"{path}: cannot ingest it, nothing of it kept ({error})") from None
    finally:
        if records is not None:
            records.unlink(missing_ok=True)
    return Ingested(path, kind, release, rows, size, stage_s + time.monotonic() - started)


_SQL_KINDS = {Kind.S2_ABSTRACTS, Kind.S2_CITATIONS, Kind.S2_PAPER_IDS}
_PARSERS: dict[Kind, Callable[[Mapping[str, str | None]], Paper]] = {
    Kind.OPENALEX_WORKS: openalex_paper,
    Kind.S2_PAPERS: s2_paper,
    Kind.ARXIV_METADATA: arxiv_paper,
}


def _stage(con: duckdb.DuckDBPyConnection, kind: Kind, path: Path, staged: Path) -> Path:
    """The file's records parsed, as JSON Lines for DuckDB to load: (source, record_id, paper,
    ids). A line the parser cannot read at all is refused with its number."""
    parse = _PARSERS[kind]
    with staged.open("wb") as out:
        for number, row in enumerate(bulk_table.read_rows(con, kind.value, path), 1):
            try:
                paper = parse(row)
            except (ValueError, TypeError) as error:
                raise DataFileError(
                    f"{path}:{number}: not a {kind.value} record ({error})"
                ) from None
            record_id = _record_id(paper)
            if record_id is None:
                raise DataFileError(f"{path}:{number}: a {kind.value} record without its ID")
            typed = [[i.scheme.value, i.value] for i in paper.ids.typed()]
            line = {
                "source": paper.source.value,
                "record_id": record_id,
                "paper": orjson.Fragment(paper.model_dump_json()),
                "ids": typed,
                **(work_facets(row, paper) if kind is Kind.OPENALEX_WORKS else {}),
            }
            out.write(orjson.dumps(line) + b"\n")
    return staged


def _check_whole(path: Path) -> None:
    """A ``.gz`` file must decompress to its end-of-stream marker: DuckDB reads a gzip file cut
    at a line's end as if it were whole."""
    if not path.name.endswith(".gz"):
        return
    try:
        with gzip.open(path, "rb") as stream:
            while stream.read(1 << 22):
                pass
    except (OSError, EOFError, zlib.error) as error:
        raise DataFileError(
            f"{path}: the gzip file is truncated or corrupt ({error}); nothing of it kept"
        ) from None
