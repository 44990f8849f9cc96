"""Pure: the lineage verdicts. Works known by several IDs, each reference's status against its
target's published cutoff, and each target's status, with the reasons.

:mod:`resolve` fetches and merges the records; this module decides, with no I/O.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from inspire_build.boundary import published_cutoff
from inspire_build.cutoff import SourceDate, first_public, outside_window, reference_status
from inspire_build.ids import PaperId
from inspire_build.lineage import MergedReference, is_self
from inspire_build.models import (
    DatePrecision,
    Paper,
    ReferenceStatus,
    Source,
    TargetOutcome,
    TargetStatus,
)

SOURCE_PROBLEMS = "[source problems: "


@dataclasses.dataclass
class ResolvedWork:
    """One work across targets: every ID it is known by, and every source's record of it."""

    ids: set[PaperId]
    records: list[Paper] = dataclasses.field(default_factory=list)
    dates: list[SourceDate] = dataclasses.field(default_factory=list)
    paper_id: str = ""

    def first_public(self) -> SourceDate | None:
        return first_public(self.dates)

    def add_records(self, records: Iterable[Paper]) -> None:
        """Add ``records``, keeping them in one order whatever order they were fetched in: a
        build's chunks fetch a shared work's records in different orders, and the first record
        with a title gives the title a brief reads (duplicates differ in case and wording)."""
        self.records = sorted([*self.records, *records], key=_record_order)


def _record_order(record: Paper) -> tuple[str, ...]:
    return (record.source.value, *map(str, record.ids.typed()), record.model_dump_json())


@dataclasses.dataclass
class ResolvedReference:
    entry: MergedReference
    work: ResolvedWork | None
    status: ReferenceStatus
    reason: str
    date: SourceDate | None


@dataclasses.dataclass
class TargetLineage:
    requested: str
    work: ResolvedWork
    target_date: dt.date | None
    cutoff: dt.date | None
    references: list[ResolvedReference]
    status: TargetStatus
    reason: str
    outcome: TargetOutcome = TargetOutcome.RESOLVED
    source_problems: str | None = None  # what the sources could not say about the target
    # Which side served the target's record and its S2 list ("api", "bulk 2026-01-01"), and
    # the S2 Datasets' citations of it that name no paper (no ID, no title: not a reference).
    served_by: dict[str, str] = dataclasses.field(default_factory=dict)
    unidentified: int = 0

    def counts(self) -> Counter[str]:
        return Counter(r.status.value for r in self.references)


class Works:
    """Union of IDs across every record and mention seen: one ResolvedWork per connected set."""

    def __init__(self) -> None:
        self.by_id: dict[PaperId, ResolvedWork] = {}

    def add(self, found: Iterable[PaperId]) -> ResolvedWork | None:
        found = list(found)
        if not found:
            return None
        works = list({id(w): w for i in found if (w := self.by_id.get(i)) is not None}.values())
        work = works[0] if works else ResolvedWork(ids=set())
        for other in works[1:]:
            work.ids |= other.ids
            work.add_records(other.records)
            work.dates += other.dates
        work.ids.update(found)
        for paper_id in work.ids:
            self.by_id[paper_id] = work
        return work

    def current(self, work: ResolvedWork) -> ResolvedWork:
        """The live ResolvedWork that ``work`` was merged into (or ``work`` itself)."""
        return next((self.by_id[i] for i in work.ids if i in self.by_id), work)

    def get(self, found: Iterable[PaperId]) -> ResolvedWork | None:
        return next((self.by_id[i] for i in found if i in self.by_id), None)

    def all(self) -> list[ResolvedWork]:
        return list({id(w): w for w in self.by_id.values()}.values())


def source_date(
    source: Source, day: dt.date | None, year: int | None, precision: DatePrecision | None
) -> SourceDate | None:
    """A source's date of a work: its day, else January 1 of its year (year precision)."""
    if day is not None:
        return SourceDate(source, day, precision or DatePrecision.DAY)
    if year is not None:
        return SourceDate(source, dt.date(year, 1, 1), DatePrecision.YEAR)
    return None


def source_problems(
    found: Iterable[PaperId], work: ResolvedWork | None, failed: Mapping[PaperId, str]
) -> str | None:
    """Why the sources could not say more about a work (unreadable answers, wrong-typed
    fields), in one line; None when there is nothing to say."""
    notes = [failed[i] for i in sorted(found, key=str) if i in failed]
    for record in work.records if work else ():
        notes += [f"{record.source.value} gave {problem}" for problem in record.problems]
    return "; ".join(dict.fromkeys(notes)) or None


def with_problems(reason: str, problems: str | None) -> str:
    """A reason with the source problems as its suffix, `` [source problems: ...]``, so that a
    bad input stays visible on the row it affected."""
    return f"{reason} {SOURCE_PROBLEMS}{problems}]" if problems else reason


def classify(
    raw: str,
    target: ResolvedWork,
    entries: list[MergedReference],
    works: Works,
    given_date: dt.date | None,
    failed: Mapping[PaperId, str],
    window: tuple[dt.date, dt.date] | None,
    cutoff_offset: Callable[[str], int] | None = None,
) -> TargetLineage:
    """Target ``raw``'s lineage: each merged reference's status and the target's own.

    ``given_date`` overrides the sources' date (and the split's ``window``); the published
    cutoff lies ``cutoff_offset(target paper_id)`` days before the exact one."""
    target_first = target.first_public()
    target_date = given_date or (target_first.date if target_first else None)
    title = next((r.title for r in target.records if r.title), None)
    year = target_date.year if target_date else None
    offset = cutoff_offset(target.paper_id) if cutoff_offset and target_date else 0
    cutoff = published_cutoff(target_date, offset) if target_date else None
    resolved: list[ResolvedReference] = []
    for entry in entries:
        work = works.get(entry.ids)
        date = work.first_public() if work else None
        if target_date is None or cutoff is None:
            status, reason = ReferenceStatus.NO_DATE, "the target has no first public date"
            if not entry.ids:
                status, reason = ReferenceStatus.UNRESOLVED, "no usable identifier in any source"
        else:
            status, reason = reference_status(
                date,
                target_date=target_date,
                cutoff=cutoff,
                resolved=bool(entry.ids),
                is_self=is_self(entry, target.ids, title, year) or work is target,
            )
        reason = with_problems(reason, source_problems(entry.ids, work, failed))
        resolved.append(ResolvedReference(entry, work, status, reason, date))
    verdict, outcome, why = _target_status(resolved, target_first, target_date, given_date, window)
    problems = source_problems(target.ids, target, failed)
    why = with_problems(why, problems)
    return TargetLineage(
        raw, target, target_date, cutoff, resolved, verdict, why, outcome, problems
    )


def _target_status(
    resolved: list[ResolvedReference],
    target_first: SourceDate | None,
    target_date: dt.date | None,
    given_date: dt.date | None,
    window: tuple[dt.date, dt.date] | None,
) -> tuple[TargetStatus, TargetOutcome, str]:
    eligible = sum(r.status is ReferenceStatus.ELIGIBLE for r in resolved)
    outside = outside_window(target_first, *window) if window and target_first else None
    excluded = TargetStatus.EXCLUDED
    if target_date is None:
        return excluded, TargetOutcome.NO_DATE, "no first public date in any source"
    if outside and not given_date:
        return excluded, TargetOutcome.OUTSIDE_WINDOW, outside
    if not resolved:
        return excluded, TargetOutcome.NO_REFERENCES, "no source lists any reference"
    if not eligible:
        return excluded, TargetOutcome.NO_ELIGIBLE, "no reference is strictly before the cutoff"
    why = f"lineage resolved: {eligible} eligible of {len(resolved)} references"
    return TargetStatus.CANDIDATE, TargetOutcome.RESOLVED, why
