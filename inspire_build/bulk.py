"""The bulk distributions in: the OpenAlex snapshot's works (JSON Lines, gzip, in
``updated_date=…/part_*.gz`` folders), the Semantic Scholar Datasets' ``papers``,
``abstracts``, ``citations`` and ``paper-ids`` files, and arXiv's metadata snapshot
(``arxiv-metadata-oai-snapshot.json``, every version dated), read by DuckDB with explicit
columns.

Works and papers are the Papers the sources' own ``parse`` functions give, so a bulk record is
the Paper the API would have given. The snapshot's works are tested in DuckDB first (a
:class:`WorkFilter`): only those a build can ask for are kept, and their fields are read by
DuckDB's JSON functions where it reads them as ``parse`` does (``tables/bulk_works.py``); the
works filtered out are counted in each file's row. Each file is ingested in one transaction
with its ``bulk_files`` row: a rerun skips the files already in (same size and modification
time; a file that left works out is read again to keep all of them), and a file that cannot be
read whole (a truncated ``.gz``, a malformed line) is refused, naming it, with nothing of it
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
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Any

import duckdb
import orjson

from inspire_build.config import SplitConfig
from inspire_build.errors import DataFileError, InputError
from inspire_build.models import DatePrecision, Paper, Source
from inspire_build.sources import arxiv, openalex, semanticscholar
from inspire_build.tables import bulk as bulk_table
from inspire_build.tables import bulk_works


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


@dataclasses.dataclass(frozen=True)
class WorkFilter:
    """Which of the OpenAlex snapshot's works an ingest keeps: those on arXiv, and those whose
    primary topic's field is one of ``fields``. A split's candidates (its fields, on arXiv) are
    among them, and so are most works they cite, which lineage asks for by ID; a work it asks
    for that was filtered out is asked of the API. ``fields`` None keeps every work."""

    fields: tuple[int, ...] | None

    @classmethod
    def of(cls, splits: Iterable[SplitConfig], keep_all: bool = False) -> WorkFilter:
        """The filter for a build's splits (``Settings.splits``), or one that keeps all."""
        if keep_all:
            return cls(None)
        return cls(tuple(sorted({n for s in splits for n in openalex.field_ids(s.fields)})))

    def describe(self) -> str:
        if self.fields is None:
            return "every work kept"
        return f"works kept: on arXiv, or of primary field {', '.join(map(str, self.fields))}"


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
    """One kept snapshot work as ``tables.bulk_works.kept`` gives it -> the Paper
    ``openalex.parse`` gives. A regular work comes as the fields SQL read (``fields``) beside its
    ``id``, ``doi``, ``locations`` and abstract, which ``parse`` reads (the IDs' normalisation,
    the abstract and their problems); any other comes whole, for ``parse``."""
    if row["fields"] is None:  # json, not orjson: it reads a number past 64 bits as an int
        return openalex.parse(json.loads(row["work"]))
    named = openalex.parse(orjson.loads(row["work"]))
    read = orjson.loads(row["fields"])
    day, listed = read["publication_date"], read["referenced_works"]
    # the values are of the types parse gives (tests/unit/test_bulk_works.py holds them equal)
    return named.model_copy(
        update={
            "title": read["title"],
            "year": read["year"],
            "publication_date": dt.date.fromisoformat(day) if day else None,
            "date_precision": DatePrecision.DAY if day else None,
            "venue": read["venue"],
            "authors": tuple(read["authors"]),
            "fields": tuple(dict.fromkeys(read["fields"])),
            "reference_count": read["reference_count"],
            "referenced_works": None if listed is None else tuple(listed),
        }
    )


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
    filtered: int = 0  # works read and not kept (WorkFilter)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        if self.skipped:
            return f"{self.path}: already in ({self.rows:,} rows), skipped"
        per_s = (self.rows + self.filtered) / max(self.seconds, 1e-9)
        dropped = f" ({self.filtered:,} filtered out)" if self.filtered else ""
        return (
            f"{self.path}: {self.kind.value}, {self.rows:,} rows{dropped}, "
            f"{self.bytes / 1e6:.1f} MB in "
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
    works: WorkFilter = KEEP_ALL,
) -> list[Ingested]:
    """Ingest every file under ``paths``, each in its own transaction and in release order;
    ``say`` hears of each as it ends. ``kind`` and ``release`` stand in for what a path does not
    name; ``works`` says which snapshot works are kept. With ``jobs`` > 1, worker processes read
    and parse the next files while this one writes."""
    planned = [(path, kind or kind_of(path), release_of(path) or release) for path in expand(paths)]
    undated = [str(path) for path, _, day in planned if day is None]
    if undated:
        raise InputError(
            f"no release date for {', '.join(undated[:3])}{' …' if len(undated) > 3 else ''}: "
            "its path names none (updated_date=YYYY-MM-DD, or a YYYY-MM-DD folder); pass --release"
        )
    held = {str(p.resolve()): bulk_table.done_file(con, str(p.resolve())) for p, _, _ in planned}
    todo = [i for i, (p, _, _) in enumerate(planned) if not _done(held[str(p.resolve())], p, works)]
    done = []
    stager_of = _Stager(jobs, works)
    with tempfile.TemporaryDirectory(prefix="inspire-bulk-") as tmp, stager_of(tmp) as stager:
        for position, (path, kind_, day) in enumerate(planned):
            stager.ahead([planned[i][:2] for i in todo if i >= position][: max(jobs, 1) + 1])
            if position in todo:
                result = _ingest_file(con, path, kind_, day, stager.staged(path, kind_))
            else:
                row = next(r for r in bulk_table.files(con) if r[0] == str(path.resolve()))
                size = path.stat().st_size
                result = Ingested(path, kind_, day, int(row[3]), size, 0.0, True, int(row[6] or 0))
            done.append(result)
            if say is not None:
                say(result)
    return done


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
    """A file checked whole: its records parsed into JSON Lines (None for the kinds DuckDB
    loads itself), the seconds that took, and the works filtered out."""

    records: Path | None
    seconds: float
    filtered: int = 0


class _Stager:
    """Reads and parses files into staged JSON Lines: in this process (``jobs`` 1), or in a
    pool of ``jobs`` spawned processes, a few files ahead of the one being written."""

    def __init__(self, jobs: int, works: WorkFilter) -> None:
        self._jobs, self._works = jobs, works
        self._folder, self._futures = "", dict[Path, Any]()
        self._names = itertools.count()  # a staged file's name; never reused while it waits
        self._pool: ProcessPoolExecutor | None = None

    def __call__(self, folder: str) -> _Stager:
        self._folder = folder
        context = multiprocessing.get_context("spawn")  # never fork a process holding DuckDB
        self._pool = ProcessPoolExecutor(self._jobs, mp_context=context) if self._jobs > 1 else None
        return self

    def __enter__(self) -> _Stager:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def ahead(self, files: Sequence[tuple[Path, Kind]]) -> None:
        for path, kind in files:
            if self._pool is not None and path not in self._futures:
                target = str(Path(self._folder) / f"{next(self._names)}.jsonl")
                submitted = self._pool.submit(stage_file, kind, path, target, self._works)
                self._futures[path] = submitted

    def staged(self, path: Path, kind: Kind) -> Staged:
        """The file checked whole and, for the kinds parsed in Python, staged. A bad file raises
        DataFileError, naming it."""
        future = self._futures.pop(path, None)
        if future is not None:
            result: Staged = future.result()
            return result
        return stage_file(kind, path, str(Path(self._folder) / "inline.jsonl"), self._works)


def stage_file(kind: Kind, path: Path, target: str, works: WorkFilter = KEEP_ALL) -> Staged:
    """Check ``path`` whole and parse its records into ``target`` (the works ``works`` keeps).
    Runs in a worker process too, so it opens only an in-memory DuckDB. The whole-file check
    decompresses in a thread beside DuckDB's read (zlib lets go of the GIL)."""
    started = time.monotonic()
    staged, filtered = None, 0
    with ThreadPoolExecutor(1) as checker:
        whole = checker.submit(_check_whole, path)
        if kind not in _SQL_KINDS:
            reader = duckdb.connect()
            try:
                if kind is Kind.OPENALEX_WORKS:
                    staged, filtered = _stage_works(reader, path, Path(target), works)
                else:
                    staged = _stage(reader, kind, path, Path(target))
            except duckdb.Error as error:
                whole.result()  # a truncated file says so, rather than what DuckDB made of it
                raise DataFileError(
                    f"{path}: cannot read it, nothing of it kept ({error})"
                ) from None
            finally:
                reader.close()
        whole.result()
    return Staged(staged, time.monotonic() - started, filtered)


def _ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    kind: Kind,
    release: dt.date | None,
    staged: Staged,
) -> Ingested:
    started = time.monotonic()
    name, (size, modified) = str(path.resolve()), _stat(path)
    records, stage_s = staged.records, staged.seconds
    file_row = {
        "path": name,
        "kind": kind.value,
        "release": release,
        "bytes": size,
        "modified_ns": modified,
        "seconds": stage_s,
        "ingested_at": dt.datetime.now(dt.UTC),
        "filtered_out": staged.filtered,
    }
    try:
        rows = bulk_table.replace_file(con, kind.value, Path(name), release, records, file_row)
    except duckdb.Error as error:
        raise DataFileError(f"{path}: cannot ingest it, nothing of it kept ({error})") from None
    finally:
        if records is not None:
            records.unlink(missing_ok=True)
    seconds = stage_s + time.monotonic() - started
    return Ingested(path, kind, release, rows, size, seconds, filtered=staged.filtered)


_SQL_KINDS = {Kind.S2_ABSTRACTS, Kind.S2_CITATIONS, Kind.S2_PAPER_IDS}
_PARSERS: dict[Kind, Callable[[Mapping[str, str | None]], Paper]] = {
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
            }
            out.write(orjson.dumps(line) + b"\n")
    return staged


def _stage_works(
    con: duckdb.DuckDBPyConnection, path: Path, staged: Path, works: WorkFilter
) -> tuple[Path, int]:
    """The snapshot works of ``path`` that ``works`` keeps, parsed, as JSON Lines for DuckDB to
    load, with what the candidate filter tests; and how many were filtered out."""
    filtered, _ = bulk_works.scan(con, path, works.fields)
    with staged.open("wb") as out:
        for number, row in enumerate(bulk_works.kept(con), 1):
            try:
                paper = openalex_work(row)
            except (ValueError, TypeError) as error:
                raise DataFileError(
                    f"{path}: kept work {number}: not an OpenAlex work ({error})"
                ) from None
            if paper.ids.openalex is None:
                raise DataFileError(f"{path}: kept work {number}: a work without its ID")
            line = {
                "source": Source.OPENALEX.value,
                "record_id": paper.ids.openalex,
                "paper": orjson.Fragment(paper.model_dump_json()),
                "ids": [[i.scheme.value, i.value] for i in paper.ids.typed()],
                "primary_field": row["primary_field"],
                "on_arxiv": row["on_arxiv"],
                "published": paper.publication_date,
                "listed_references": paper.reference_count,
            }
            out.write(orjson.dumps(line) + b"\n")
    return staged, filtered


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
