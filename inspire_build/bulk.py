"""The bulk distributions in: the OpenAlex snapshot's works (JSON Lines, gzip, in
``updated_date=…/part_*.gz`` folders), the Semantic Scholar Datasets' ``papers``,
``abstracts``, ``citations`` and ``paper-ids`` files, and arXiv's metadata snapshot
(``arxiv-metadata-oai-snapshot.json``, every version dated), read by DuckDB with explicit
columns.

Works and papers are the Papers the sources' own ``parse`` functions give, so a bulk record is
the Paper the API would have given. The snapshot's works are tested in DuckDB first (a
:class:`WorkFilter`): only those a build can ask for are kept, and the kept works regular
enough for SQL are made Paper records in SQL, set-based (``tables/bulk_works.py``); the others
go to ``openalex.parse``, and are counted. The S2 citations are kept only when their citing
paper's S2 record is on arXiv (``tables.bulk.load_citations``): an ingest therefore reads the
citations files after every other file, and a papers file's arrival reads the filtered
citations files again after it. The rows filtered out are counted in each file's row. Each
``.gz`` file is read once: decompressed whole (its gzip CRC and end checked) into the ingest's
temporary folder, up to ``jobs`` + 3 files ahead of the one being written (the S2 papers
staged there too, in SQL), and loaded from there. Each file is ingested in one transaction
with its ``bulk_files`` row: a rerun skips the files already in (same size and modification
time; a file that left rows out is read again to keep all of them under ``--keep-all``), and a
file that cannot be read whole (a truncated ``.gz``, a malformed line) is refused, naming it,
with nothing of it written and every earlier file kept.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import itertools
import json
import multiprocessing
import os
import re
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import orjson

from inspire_build import warehouse
from inspire_build.config import SplitConfig
from inspire_build.errors import DataFileError, InputError
from inspire_build.models import Paper, Source
from inspire_build.sources import arxiv, openalex, semanticscholar
from inspire_build.tables import bulk as bulk_table
from inspire_build.tables import bulk_papers, bulk_works
from inspire_build.tables.bulk import Kind

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
            else:  # a device or a FIFO exists, but holds no data file
                said = "neither a file nor a folder" if match.exists() else "no such file or folder"
                raise InputError(f"{match}: {said}")
    if not found:
        raise InputError("no data files (.gz, .jsonl, .json) under the paths given")
    return sorted(found, key=lambda p: (release_of(p) or dt.date.min, str(p)))


def _is_data(path: Path) -> bool:
    return path.name.endswith(_SUFFIXES) and not path.name.startswith(".")


@dataclasses.dataclass(frozen=True)
class WorkFilter:
    """Which of the OpenAlex snapshot's works an ingest keeps: those on arXiv, and those whose
    primary topic's field is one of ``fields``. A split's candidates (its fields, on arXiv) are
    among them, and so are most works they cite, which lineage asks for by ID; a work it asks
    for that was filtered out is asked of the API. The S2 citations kept are those of the
    papers whose S2 record is on arXiv (has an arXiv ID): a build asks the bulk tables for the
    reference lists of its targets alone, which are on arXiv; a list they may lack is asked of
    the API (``tables.bulk.citations``). ``fields`` None keeps every work and citation."""

    fields: tuple[int, ...] | None

    @classmethod
    def of(cls, splits: Iterable[SplitConfig], keep_all: bool = False) -> WorkFilter:
        """The filter for a build's splits (``Settings.splits``), or one that keeps all."""
        if keep_all:
            return cls(None)
        return cls(tuple(sorted({n for s in splits for n in openalex.field_ids(s.fields)})))

    def describe(self) -> str:
        if self.fields is None:
            return "every work and citation kept"
        return (
            f"works kept: on arXiv, or of primary field {', '.join(map(str, self.fields))}; "
            "S2 citations kept: those of papers on arXiv"
        )


KEEP_ALL = WorkFilter(None)


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


def openalex_work(row: Mapping[str, Any]) -> Paper:
    """One kept snapshot work that SQL does not read (``tables.bulk_works.irregular``), its
    ``work`` whole as JSON text -> the Paper ``openalex.parse`` gives."""
    return openalex.parse(json.loads(row["work"]))  # json: it reads a number past 64 bits


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
    filtered: int = 0  # works or citations read and not kept (WorkFilter)
    in_python: int = 0  # kept works or S2 papers SQL does not read, parsed in Python

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        if self.skipped:
            return f"{self.path}: already in ({self.rows:,} rows), skipped"
        per_s = (self.rows + self.filtered) / max(self.seconds, 1e-9)
        dropped = f" ({self.filtered:,} filtered out)" if self.filtered else ""
        what = "papers" if self.kind is Kind.S2_PAPERS else "works"
        parsed = f"; {self.in_python:,} {what} read by parse" if self.in_python else ""
        return (
            f"{self.path}: {self.kind.value}, {self.rows:,} rows{dropped}, "
            f"{self.bytes / 1e6:.1f} MB in "
            f"{self.seconds:.1f} s ({self.mb_per_s:.1f} MB/s, {per_s:,.0f} rows/s){parsed}"
        )


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[str],
    *,
    kind: Kind | None = None,
    release: dt.date | None = None,
    say: Callable[[Ingested], None] | None = None,
    jobs: int = 1,
    works: WorkFilter = KEEP_ALL,
) -> list[Ingested]:
    """Ingest every file under ``paths``, each in its own transaction and in release order;
    ``say`` hears of each as it ends. ``kind`` and ``release`` stand in for what a path does not
    name; ``works`` says which snapshot works are kept. While one file is written, the next are
    decompressed (and, for the kinds parsed in Python, parsed; the S2 papers staged in SQL): in
    a thread of this process with ``jobs`` 1, else in ``jobs`` worker processes."""
    planned = _planned(paths, kind, release)
    held = {str(p.resolve()): bulk_table.done_file(con, str(p.resolve())) for p, _, _ in planned}
    todo = [i for i, (p, _, _) in enumerate(planned) if not _done(held[str(p.resolve())], p, works)]
    if works.fields is not None:
        arrive = any(planned[i][1] is Kind.S2_PAPERS for i in todo)
        planned, todo = _citations_again(con, planned, todo, held, arrive)
    done = []
    with (
        warehouse.setting(con, "threads", _threads(jobs)),
        # fewer checkpoints: each one writes the bulk tables' indexes whole (9% less CPU here)
        warehouse.setting(con, "checkpoint_threshold", "1GB"),
        tempfile.TemporaryDirectory(prefix="inspire-bulk-") as tmp,
        _Stager(jobs, tmp) as stager,
    ):
        for position, (path, kind_, day) in enumerate(planned):
            stager.ahead([planned[i][:2] for i in todo if i >= position][: _AHEAD + jobs])
            if position in todo:
                staged = stager.staged(path)
                try:
                    was_held = held[str(path.resolve())] is not None
                    result = _ingest_file(con, path, kind_, day, staged, works, was_held)
                finally:
                    staged.discard()
            else:
                row = next(r for r in bulk_table.files(con) if r[0] == str(path.resolve()))
                size = path.stat().st_size
                result = Ingested(path, kind_, day, int(row[3]), size, 0.0, True, int(row[6] or 0))
            done.append(result)
            if say is not None:
                say(result)
    return done


# Files staged ahead of the one being written, beside ``jobs``: an S2 papers file is staged in
# SQL (``stage_file``), as long as writing three or four works files takes; with fewer ahead,
# the writing waited for it (0.8 s of 15 in the bench at 128 MB). Each is a decompressed copy
# in the temporary folder meanwhile.
_AHEAD = 3


def _planned(
    paths: Sequence[str], kind: Kind | None, release: dt.date | None
) -> list[tuple[Path, Kind, dt.date | None]]:
    """The files under ``paths``, each with its kind and release, in ``expand``'s order except
    that the S2 citations come last: which of them are kept depends on the S2 papers held."""
    planned = [(path, kind or kind_of(path), release_of(path) or release) for path in expand(paths)]
    undated = [str(path) for path, _, day in planned if day is None]
    if undated:
        raise InputError(
            f"no release date for {', '.join(undated[:3])}{' …' if len(undated) > 3 else ''}: "
            "its path names none (updated_date=YYYY-MM-DD, or a YYYY-MM-DD folder); pass --release"
        )
    return sorted(planned, key=lambda planned: planned[1] is Kind.S2_CITATIONS)  # stable


def _citations_again(
    con: duckdb.DuckDBPyConnection,
    planned: list[tuple[Path, Kind, dt.date | None]],
    todo: list[int],
    held: dict[str, tuple[int, int, int] | None],
    papers_arrive: bool,
) -> tuple[list[tuple[Path, Kind, dt.date | None]], list[int]]:
    """The citations files ingested with citations filtered out that are read again, after the
    papers: every one when S2 papers arrive (a paper may be on arXiv now), else those filtered
    before an earlier ingest's papers; those of earlier ingests too while their file is still
    there (one that is gone leaves its papers' lists to the API: ``tables.bulk.citations``)."""
    named = {str(p.resolve()): i for i, (p, _, _) in enumerate(planned)}
    again = set(todo)
    for path, day, stale in bulk_table.filtered_citations(con):
        if not (papers_arrive or stale):
            continue
        if path not in named and Path(path).is_file():
            held[path] = bulk_table.done_file(con, path)
            named[path] = len(planned)
            planned = [*planned, (Path(path), Kind.S2_CITATIONS, day)]
        if path in named:
            again.add(named[path])
    return planned, sorted(again)


def _threads(jobs: int) -> int:
    """DuckDB's threads while files are written: the CPUs the stagers leave (at least one). More
    threads than CPUs spin: on 2 CPUs, 2 DuckDB threads beside the decompressing thread took 1.6
    times the CPU time of 1 for the same S2 citations."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cpus or 1) - jobs)


def _done(held: tuple[int, int, int] | None, path: Path, works: WorkFilter) -> bool:
    """Whether ``path`` is in, unchanged; a file that left works out is read again to keep all."""
    if held is None or held[:2] != _stat(path):
        return False
    return works.fields is not None or held[2] == 0


def _stat(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


@dataclasses.dataclass(frozen=True)
class Staged:
    """A file checked whole: its JSON Lines as DuckDB reads them (``data``: the file itself, or
    a decompressed copy in the ingest's temporary folder), its records parsed into JSON Lines
    for the kinds parsed in Python, or staged in SQL into Parquet for the S2 papers
    (``records``), and the seconds that took."""

    data: Path
    records: Path | None
    seconds: float
    scratch: Path  # the name its staged files take (with a suffix) in the temporary folder
    copied: bool = False  # ``data`` is a decompressed copy
    in_python: int = 0  # S2 papers SQL does not read, parsed by ``s2_paper`` while staged

    def discard(self) -> None:
        """Remove what staging and loading wrote; the file itself stays."""
        for written in (
            self.records,
            self.scratch.with_suffix(".works.jsonl"),
            self.scratch.with_suffix(".papers.jsonl"),
        ):
            if written is not None:
                written.unlink(missing_ok=True)
        if self.copied:
            self.data.unlink(missing_ok=True)


class _Stager:
    """Stages the next files while one is written: in one thread of this process (``jobs`` 1;
    zlib and DuckDB let go of the GIL), or in a pool of ``jobs`` spawned processes."""

    def __init__(self, jobs: int, folder: str) -> None:
        self._folder, self._futures = folder, dict[Path, Any]()
        self._names = itertools.count()  # a staged file's name; never reused while it waits
        context = multiprocessing.get_context("spawn")  # never fork a process holding DuckDB
        self._pool: Executor = (
            ProcessPoolExecutor(jobs, mp_context=context) if jobs > 1 else ThreadPoolExecutor(1)
        )

    def __enter__(self) -> _Stager:
        return self

    def __exit__(self, *_: object) -> None:
        self._pool.shutdown(cancel_futures=True)

    def ahead(self, files: Sequence[tuple[Path, Kind]]) -> None:
        for path, kind in files:
            if path not in self._futures:
                target = Path(self._folder) / str(next(self._names))
                self._futures[path] = self._pool.submit(stage_file, kind, path, target)

    def staged(self, path: Path) -> Staged:
        """The file checked whole and staged. A bad file raises DataFileError, naming it."""
        result: Staged = self._futures.pop(path).result()
        return result


def stage_file(kind: Kind, path: Path, target: Path) -> Staged:
    """Check ``path`` whole and stage it under the name ``target``: decompressed (a ``.gz``
    file) into ``target.jsonl``; for the kinds parsed in Python, its records parsed into
    ``target.records.jsonl``; for the S2 papers, their staged rows (``_stage_papers``) written
    to ``target.staged.parquet``, here, beside the file being written, rather than in the
    writing thread: every paper is kept, and reading them is most of their load. Runs in a
    worker process too, so it opens only an in-memory DuckDB. What a failed file left there goes
    with the folder, when the ingest stops."""
    started = time.monotonic()
    copied = path.name.endswith(".gz")
    data = _decompress(path, target.with_suffix(".jsonl")) if copied else path
    records, in_python = None, 0
    if kind in _PARSERS or kind is Kind.S2_PAPERS:
        reader = duckdb.connect(config={"threads": 1})  # one reader, feeding this thread
        try:
            if kind is Kind.S2_PAPERS:
                records = target.with_suffix(".staged.parquet")
                in_python = _stage_papers(reader, path, data, target)
                bulk_table.write_staged(reader, records)
            else:
                records = _stage(reader, kind, path, data, target.with_suffix(".records.jsonl"))
        except duckdb.Error as error:
            said = str(error).replace(str(data), str(path))  # the copy's name is no help
            raise DataFileError(f"{path}: cannot read it, nothing of it kept ({said})") from None
        finally:
            reader.close()
    return Staged(data, records, time.monotonic() - started, target, copied, in_python)


def _decompress(path: Path, target: Path) -> Path:
    """``path`` decompressed into ``target``, read to its end: a ``.gz`` file must reach its
    end-of-stream marker, with its CRC and length right (DuckDB reads a gzip file cut at a
    line's end as if it were whole, and checks no CRC). The only read of the file."""
    try:
        with gzip.open(path, "rb") as stream, target.open("wb") as out:
            shutil.copyfileobj(stream, out, 1 << 22)
    except (OSError, EOFError, zlib.error) as error:
        target.unlink(missing_ok=True)
        raise DataFileError(
            f"{path}: the gzip file is truncated or corrupt ({error}); nothing of it kept"
        ) from None
    return target


def _ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    kind: Kind,
    release: dt.date | None,
    staged: Staged,
    works: WorkFilter,
    held: bool,
) -> Ingested:
    """One transaction: drop what an earlier ingest of the file wrote (when one did), load it,
    and record it."""
    started = time.monotonic()
    name, (size, modified) = str(path.resolve()), _stat(path)
    filtered = in_python = 0
    try:
        with warehouse.transaction(con):
            if held:
                bulk_table.forget(con, name)
            if kind is Kind.OPENALEX_WORKS:
                filtered, in_python = _stage_works(con, path, staged, works)
                rows = bulk_table.load_staged(con, name, release)
            elif kind is Kind.S2_PAPERS and staged.records is not None:
                in_python = staged.in_python
                bulk_table.stage_parquet(con, staged.records)
                rows = bulk_table.load_staged(con, name, release)
            elif kind is Kind.S2_CITATIONS and works.fields is not None:
                rows, filtered = bulk_table.load_citations(con, staged.data, name, release)
            elif staged.records is None:
                rows = bulk_table.load(con, kind.value, staged.data, name, release)
            else:
                bulk_table.stage_records(con, staged.records)
                rows = bulk_table.load_staged(con, name, release)
            seconds = staged.seconds + time.monotonic() - started
            file_row = {
                "path": name,
                "kind": kind.value,
                "release": release,
                "bytes": size,
                "modified_ns": modified,
                "seconds": seconds,
                "rows": rows,
                "ingested_at": dt.datetime.now(dt.UTC),
                "filtered_out": filtered,
            }
            bulk_table.record_file(con, file_row)  # fmt: skip
    except duckdb.Error as error:
        said = str(error).replace(str(staged.data), str(path))  # the copy's name is no help
        raise DataFileError(f"{path}: cannot ingest it, nothing of it kept ({said})") from None
    return Ingested(path, kind, release, rows, size, seconds, False, filtered, in_python)


_PARSERS: dict[Kind, Callable[[Mapping[str, str | None]], Paper]] = {
    Kind.ARXIV_METADATA: arxiv_paper,
}


def _stage(
    con: duckdb.DuckDBPyConnection, kind: Kind, path: Path, data: Path, staged: Path
) -> Path:
    """The file's records parsed, as JSON Lines for DuckDB to load: (source, record_id, paper,
    ids). A line the parser cannot read at all is refused with its number."""
    parse = _PARSERS[kind]
    with staged.open("wb") as out:
        for number, row in enumerate(bulk_table.read_rows(con, kind.value, data), 1):
            try:
                paper = parse(row)
            except (ValueError, TypeError) as error:
                raise DataFileError(
                    f"{path}:{number}: not a {kind.value} record ({error})"
                ) from None
            record_id = _record_id(paper)
            if record_id is None:
                raise DataFileError(f"{path}:{number}: a {kind.value} record without its ID")
            out.write(orjson.dumps(_line(paper, record_id)) + b"\n")
    return staged


def _line(paper: Paper, record_id: str, **facets: object) -> dict[str, object]:
    """A staged record: bulk_records' and bulk_ids' columns."""
    return {
        "source": paper.source.value,
        "record_id": record_id,
        "paper": orjson.Fragment(paper.model_dump_json()),
        "ids": [[i.scheme.value, i.value] for i in paper.ids.typed()],
        **facets,
    }


def _stage_works(
    con: duckdb.DuckDBPyConnection, path: Path, staged: Staged, works: WorkFilter
) -> tuple[int, int]:
    """The snapshot works of ``path`` that ``works`` keeps, staged (``staged``, a temporary
    table): the regular ones by SQL, set-based, and the others parsed by ``openalex.parse``.
    Returns (works filtered out, works parsed in Python)."""
    filtered, _ = bulk_works.scan(con, staged.data, works.fields)
    bulk_works.stage(con)

    def facets(row: Mapping[str, Any], paper: Paper) -> dict[str, object]:
        return {
            "primary_field": row["primary_field"],
            "on_arxiv": row["on_arxiv"],
            "published": paper.publication_date,
            "listed_references": paper.reference_count,
        }

    told = _Told("kept work", "an OpenAlex work", "ID", "works")
    rows = bulk_works.irregular(con)
    parsed = _stage_parsed(con, path, staged.scratch, rows, openalex_work, told, facets)
    bulk_works.forget(con)  # a whole part, with --keep-all: not held past its file
    return filtered, parsed


def _stage_papers(con: duckdb.DuckDBPyConnection, path: Path, data: Path, scratch: Path) -> int:
    """The S2 papers of ``path`` (read from ``data``) staged (``staged``, a temporary table),
    each with whether it is on arXiv (has an arXiv ID: its citations are the ones a filtered
    ingest keeps): the regular ones by SQL, set-based, the others parsed by ``s2_paper``.
    Returns the papers parsed in Python."""
    bulk_papers.scan(con, data)
    bulk_papers.stage(con)
    told = _Told("paper", "an S2 paper", "CorpusId", "papers")
    parsed = _stage_parsed(
        con, path, scratch, bulk_papers.irregular(con), s2_paper, told,
        lambda _, paper: {"on_arxiv": paper.ids.arxiv is not None},
    )  # fmt: skip
    bulk_papers.forget(con)
    return parsed


@dataclasses.dataclass(frozen=True)
class _Told:
    """How a refused record is named: "{what} N SQL does not read: not {kind}", "... has no
    {key}"; ``records``, the name of the scratch file of the parsed ones."""

    what: str
    kind: str
    key: str
    records: str


def _stage_parsed(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    scratch: Path,
    rows: Iterable[Mapping[str, Any]],
    parse: Callable[[Any], Paper],
    told: _Told,
    facets: Callable[[Mapping[str, Any], Paper], dict[str, object]],
) -> int:
    """The records SQL does not read, parsed by the source's own ``parse``, staged beside the
    others (keyed by their OpenAlex ID or corpus ID); returns how many."""
    parsed, written = 0, scratch.with_suffix(f".{told.records}.jsonl")
    with written.open("wb") as out:
        for parsed, row in enumerate(rows, 1):
            try:
                paper = parse(row)
            except (ValueError, TypeError) as error:
                raise DataFileError(
                    f"{path}: {told.what} {parsed} SQL does not read: not {told.kind} ({error})"
                ) from None
            key = _record_id(paper)
            if key is None:
                raise DataFileError(
                    f"{path}: {told.what} {parsed} SQL does not read has no {told.key}"
                )
            out.write(orjson.dumps(_line(paper, key, **facets(row, paper))) + b"\n")
    if parsed:
        bulk_table.stage_records(con, written, more=True)
    return parsed
