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
from collections.abc import Iterable

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
