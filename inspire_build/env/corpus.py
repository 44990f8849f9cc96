"""The search corpus: every work an agent may find, antecedents among distractors.

Records come from OpenAlex works listed by cursor paging, from an OpenAlex snapshot file (works
JSONL, the API's record shape, read by the same ``openalex.parse``), or from a Sandbox world
(every record, distractors included: ``sandbox/corpus.py``, so that this module never imports
the emulator). :func:`merge` is pure: records that share an ID, or that the warehouse's
crosswalk maps to one paper, become one work, so a preprint and its published twin are one
result with the earliest first public date of the two.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, cast

from inspire_build import cutoff, user_files
from inspire_build.errors import InputError
from inspire_build.http import HttpClient
from inspire_build.ids import PaperId
from inspire_build.lineage import canonical_id
from inspire_build.models import DatePrecision, Paper


@dataclasses.dataclass(frozen=True)
class CorpusRecord:
    """One record of one source, reduced to what search and read need."""

    ids: tuple[PaperId, ...]
    title: str | None
    abstract: str | None
    year: int | None
    authors: tuple[str, ...]
    dates: tuple[cutoff.SourceDate, ...]


@dataclasses.dataclass(frozen=True)
class CorpusWork:
    paper_id: str
    ids: tuple[PaperId, ...]
    title: str | None
    abstract: str | None
    year: int | None
    authors: tuple[str, ...]
    first_public: cutoff.SourceDate | None
    records: int


def from_paper(paper: Paper) -> CorpusRecord:
    """An OpenAlex work (API or snapshot line, after ``openalex.parse``)."""
    dates = []
    if paper.publication_date is not None:
        precision = paper.date_precision or DatePrecision.DAY
        dates.append(cutoff.SourceDate(paper.source, paper.publication_date, precision))
    elif paper.year is not None:
        dates.append(cutoff.SourceDate(paper.source, dt.date(paper.year, 1, 1), DatePrecision.YEAR))
    return CorpusRecord(
        tuple(paper.ids.typed()),
        paper.title,
        paper.abstract,
        paper.year,
        paper.authors,
        tuple(dates),
    )


def from_openalex(
    client: HttpClient, window: str, advance: Callable[[], None] = lambda: None
) -> list[CorpusRecord]:
    """Every OpenAlex work of a filter (``openalex.window_filter``), page by page through the
    cursor; ``advance`` is called after each work (progress)."""
    from inspire_build.sources import openalex

    records = []
    for paper in openalex.iter_works(client, window):
        records.append(from_paper(paper))
        advance()
    return records


def snapshot_work(line: str) -> Paper:
    """One line of a works JSONL: a JSON object that ``openalex.parse`` reads, with an ID.

    Raises ``ValueError`` saying what is wrong: not JSON, not an object, or no OpenAlex ID
    (such a line would otherwise drop out of the corpus unnoticed).
    """
    from inspire_build.sources import openalex

    work = json.loads(line)
    if not isinstance(work, dict):
        raise ValueError(f"a JSON {type(work).__name__}, not an object")
    paper = openalex.parse(work)
    if paper.ids.openalex is None:
        problems = "; ".join(p for p in paper.problems if p.startswith("id:"))
        raise ValueError(f"no OpenAlex id{f' ({problems})' if problems else ''}")
    return paper


def read_snapshot(
    path: Path, repaired: Callable[[int, Sequence[str]], None] = lambda _, __: None
) -> Iterator[Paper]:
    """OpenAlex works, one JSON object per line (``.gz`` is decompressed).

    A line that is not a work, or a file that cannot be read or decompressed, raises
    ``InputError`` naming the file and line. A work with fields that cannot be read as OpenAlex
    gives them (a title that is no text, a date that is no date) is kept without them, and
    ``repaired`` is told its line and problems, so that the caller can say so.
    """
    raw = user_files.open_regular(path)  # a device or a FIFO is refused, not read for ever
    number = 0
    try:
        with raw, io.TextIOWrapper(_unpacked(raw, path), encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    paper = snapshot_work(line)
                except (ValueError, TypeError, AttributeError) as error:
                    raise InputError(f"{path}:{number}: not an OpenAlex work ({error})") from error
                if paper.problems:
                    repaired(number, paper.problems)
                yield paper
    except (OSError, EOFError, UnicodeDecodeError) as error:  # bad gzip, truncated, not UTF-8
        raise InputError(f"{path}:{number + 1}: cannot read the file ({error})") from error


def _unpacked(raw: BinaryIO, path: Path) -> BinaryIO:
    """The file's bytes, decompressed for a ``.gz`` path."""
    return cast(BinaryIO, gzip.GzipFile(fileobj=raw, mode="rb")) if path.suffix == ".gz" else raw


def merge(
    records: Sequence[CorpusRecord],
    crosswalk: Mapping[PaperId, str],
    known_dates: Mapping[str, cutoff.SourceDate],
) -> list[CorpusWork]:
    """Records that share an ID, or one warehouse paper, become one work.

    A work takes the warehouse's paper_id when the crosswalk knows one of its IDs (so runs and
    qrels speak one language), else its canonical ID. Its first public date is the earliest
    of its records' dates and the warehouse's own (``known_dates``, by paper_id).
    """
    parent = list(range(len(records)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for index, record in enumerate(records):
        # A warehouse paper_id is itself one of the paper's canonical IDs: one key space.
        keys = [str(p) for p in record.ids] + [crosswalk[p] for p in record.ids if p in crosswalk]
        for key in keys:
            if key in owner:
                parent[find(index)] = find(owner[key])
            else:
                owner[key] = index
    groups: dict[int, list[CorpusRecord]] = {}
    for index, record in enumerate(records):
        groups.setdefault(find(index), []).append(record)
    works = []
    for members in groups.values():
        typed = tuple(dict.fromkeys(p for r in members for p in r.ids))
        known = sorted({crosswalk[p] for p in typed if p in crosswalk})
        chosen = canonical_id(typed)
        if not known and chosen is None:
            continue  # a record with no ID cannot be read or judged
        paper_id = known[0] if known else str(chosen)
        dates = [d for r in members for d in r.dates] + [
            known_dates[p] for p in known if p in known_dates
        ]
        # The fullest record speaks for the work: one with an abstract, else the first.
        best = max(members, key=lambda r: (r.abstract is not None, r.title is not None))
        works.append(
            CorpusWork(
                paper_id,
                typed,
                best.title,
                best.abstract,
                best.year,
                best.authors,
                cutoff.first_public(dates),
                len(members),
            )
        )
    return sorted(works, key=lambda w: w.paper_id)


def rows(
    works: Sequence[CorpusWork], origin: str, now: dt.datetime
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """``corpus`` and ``corpus_ids`` rows. An ID claimed by two works keeps the first."""
    corpus: list[dict[str, object]] = []
    id_rows: list[dict[str, object]] = []
    claimed: set[PaperId] = set()
    for work in works:
        date = work.first_public
        corpus.append(
            {
                "paper_id": work.paper_id,
                "title": work.title,
                "abstract": work.abstract,
                "year": work.year,
                "authors": list(work.authors),
                "first_public_date": date.date if date else None,
                "date_precision": date.precision.value if date else None,
                "first_public_source": date.source.value if date else None,
                "public_by": date.last_day if date else None,
                "records": work.records,
                "origin": origin,
                "added_at": now,
            }
        )
        for typed in work.ids:
            if typed not in claimed:
                claimed.add(typed)
                id_rows.append(
                    {"scheme": typed.scheme.value, "value": typed.value, "paper_id": work.paper_id}
                )
    return corpus, id_rows
