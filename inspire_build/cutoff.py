"""Pure date logic: first public dates, the three-month cutoff, and each reference's status.

A work's first public date is the earliest of its arXiv v1 date, OpenAlex ``publication_date``
and S2 ``publicationDate`` (or S2 ``year``). Dates carry a precision: a year-only date is a
range, so it is compared conservatively:

- "strictly before the cutoff" uses its *last* day (31 December): it only counts as before the
  cutoff when the whole year is;
- "dated after the target" uses its *first* day (1 January): it only counts as after the target
  when the whole year is.

Choosing the earliest: a day-precise date beats a coarser one unless the coarser one ends before
it (2017 beats 2018-05-02; 2018 does not), so a vague date never displaces a precise one from
the same period.
"""

from __future__ import annotations

import calendar
import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping

from inspire_build.errors import WarehouseError
from inspire_build.models import DatePrecision, ReferenceStatus, Source

CUTOFF_MONTHS = 3


@dataclasses.dataclass(frozen=True)
class SourceDate:
    """One source's date for a work."""

    source: Source
    date: dt.date
    precision: DatePrecision = DatePrecision.DAY

    @property
    def first_day(self) -> dt.date:
        if self.precision is DatePrecision.YEAR:
            return dt.date(self.date.year, 1, 1)
        if self.precision is DatePrecision.MONTH:
            return self.date.replace(day=1)
        return self.date

    @property
    def last_day(self) -> dt.date:
        if self.precision is DatePrecision.YEAR:
            return dt.date(self.date.year, 12, 31)
        if self.precision is DatePrecision.MONTH:
            days = calendar.monthrange(self.date.year, self.date.month)[1]
            return self.date.replace(day=days)
        return self.date


# Ties go to the source listed first: arXiv v1 is the canonical "first public" record.
_SOURCE_ORDER = {Source.ARXIV: 0, Source.OPENALEX: 1, Source.S2: 2}


def first_public(dates: Iterable[SourceDate | None]) -> SourceDate | None:
    """The earliest date across sources (see the module docstring for coarse dates)."""
    known = [d for d in dates if d is not None]
    if not known:
        return None
    precise = [d for d in known if d.precision is DatePrecision.DAY]
    best_precise = min(precise, key=lambda d: (d.date, _SOURCE_ORDER[d.source]), default=None)
    coarse = [d for d in known if d.precision is not DatePrecision.DAY]
    best_coarse = min(coarse, key=lambda d: (d.last_day, _SOURCE_ORDER[d.source]), default=None)
    if best_precise is None:
        return best_coarse
    if best_coarse is not None and best_coarse.last_day < best_precise.date:
        return best_coarse
    return best_precise


def minus_months(day: dt.date, months: int) -> dt.date:
    """Calendar months back; a day the month lacks becomes its last day (31 May -> 28/29 Feb)."""
    index = day.year * 12 + (day.month - 1) - months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))


def cutoff_date(target_first_public: dt.date) -> dt.date:
    """The target's first public date minus three calendar months."""
    return minus_months(target_first_public, CUTOFF_MONTHS)


# --- one published cutoff per target (SPEC §9) --------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PublishedCutoff:
    """A target's cutoff as the first split version that held it published it."""

    offset_days: int  # days before the exact cutoff: the secret the jitter hides
    jitter_days: int  # the jitter it lies within (offset_days <= jitter_days): a public bound
    cutoff: dt.date
    version_id: str


def kept_offsets(
    published: Mapping[str, PublishedCutoff], draw: Callable[[str], int]
) -> Callable[[str], int]:
    """target -> the days its cutoff lies before the exact one: the offset a version published
    for it, whatever ``draw`` (the key's offset under today's jitter) gives, else ``draw``'s.
    A second offset for one target would let two versions be intersected to narrow it."""
    offsets = {target: p.offset_days for target, p in published.items()}
    return lambda target: offsets[target] if target in offsets else draw(target)


@dataclasses.dataclass(frozen=True)
class VersionCutoffs:
    """A version's cutoffs beside those versions published before it."""

    jitter_days: int  # the bound it states: every cutoff it holds lies 0..this many days early
    kept: int  # instances whose cutoff an earlier version published first
    overridden: int  # of those, drawn under a jitter other than the build's setting
    moved: int  # of those, now on another day: the target's first public date changed
    first: dict[str, PublishedCutoff]  # target -> the cutoff this version publishes first


def version_cutoffs(
    version_id: str,
    held: Mapping[str, tuple[dt.date, dt.date]],
    published: Mapping[str, PublishedCutoff],
    jitter_setting: int,
) -> VersionCutoffs:
    """Compare the cutoffs a version holds (target -> first public date, published cutoff) with
    those ``published`` before. A target another version published keeps its cutoff (lineage
    drew it with :func:`kept_offsets`); the others are published first here, within the
    setting, or within their own offset should a lineage under a wider jitter have drawn it,
    so the bound the version states stays true."""
    kept: list[PublishedCutoff] = []
    first: dict[str, PublishedCutoff] = {}
    moved = 0
    for target, (day, cutoff) in sorted(held.items()):
        before = published.get(target)
        if before is not None and before.version_id != version_id:
            kept.append(before)
            moved += before.cutoff != cutoff
            continue
        offset = (cutoff_date(day) - cutoff).days
        if offset < 0:
            raise WarehouseError(
                f"{target}'s cutoff {cutoff} is after its exact cutoff {cutoff_date(day)}; "
                "resolve its lineage again"
            )
        first[target] = PublishedCutoff(offset, max(jitter_setting, offset), cutoff, version_id)
    bound = max([jitter_setting, *(p.jitter_days for p in [*kept, *first.values()])])
    overridden = sum(p.jitter_days != jitter_setting for p in kept)
    return VersionCutoffs(bound, len(kept), overridden, moved, first)


def reference_status(
    date: SourceDate | None,
    *,
    target_date: dt.date,
    cutoff: dt.date,
    resolved: bool,
    is_self: bool,
) -> tuple[ReferenceStatus, str]:
    """Exactly one status per reference, with its reason. Tested in this order:

    self, unresolved (no usable ID), no_date, dated_after_target (its first possible day is
    after the target's first public date), after_cutoff (its last possible day is on or after
    the cutoff), eligible (strictly before the cutoff).
    """
    if is_self:
        return ReferenceStatus.SELF, "the same work as the target"
    if not resolved:
        return ReferenceStatus.UNRESOLVED, "no usable identifier in any source"
    if date is None:
        return ReferenceStatus.NO_DATE, "no source gives a date"
    shown = _shown(date)
    if date.first_day > target_date:
        return ReferenceStatus.DATED_AFTER_TARGET, (
            f"first public {shown} ({date.source.value}) is after the target's {target_date}"
        )
    if date.last_day >= cutoff:
        return ReferenceStatus.AFTER_CUTOFF, (
            f"first public {shown} ({date.source.value}) is not before the cutoff {cutoff}"
        )
    return ReferenceStatus.ELIGIBLE, (
        f"first public {shown} ({date.source.value}) is before the cutoff {cutoff}"
    )


def outside_window(date: SourceDate, start: dt.date, end: dt.date) -> str | None:
    """Why a target first public on ``date`` is not in a split's window, or None if it is.

    A split is a window on its targets' *first public* dates, so a target that OpenAlex lists
    inside the window but whose arXiv preprint came out before it belongs to an earlier split.
    A year-only date is in the window only if its whole year is.
    """
    if date.first_day < start:
        where = f"before the split's window {start} to {end}"
    elif date.last_day > end:
        where = f"after the split's window {start} to {end}"
    else:
        return None
    return f"first public {_shown(date)} ({date.source.value}), {where}"


def _shown(date: SourceDate) -> str:
    if date.precision is DatePrecision.YEAR:
        return str(date.date.year)
    if date.precision is DatePrecision.MONTH:
        return date.date.strftime("%Y-%m")
    return date.date.isoformat()
