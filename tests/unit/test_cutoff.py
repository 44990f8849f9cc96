"""cutoff.py, with hand-computed cases for every edge."""

from __future__ import annotations

import datetime as dt

import pytest

from inspire_build.cutoff import (
    SourceDate,
    cutoff_date,
    first_public,
    outside_window,
    reference_status,
)
from inspire_build.models import DatePrecision, ReferenceStatus, Source

D = dt.date
YEAR = DatePrecision.YEAR


@pytest.mark.parametrize(
    ("target", "cutoff"),
    [
        (D(2024, 5, 31), D(2024, 2, 29)),  # leap year: 31 May -> 29 February
        (D(2023, 5, 31), D(2023, 2, 28)),  # common year: 31 May -> 28 February
        (D(2100, 5, 31), D(2100, 2, 28)),  # 2100 is not a leap year
        (D(2000, 5, 30), D(2000, 2, 29)),  # 2000 is
        (D(2025, 3, 15), D(2024, 12, 15)),  # across the year boundary
        (D(2025, 1, 31), D(2024, 10, 31)),
        (D(2025, 12, 31), D(2025, 9, 30)),  # 31 December -> 30 September
        (D(2025, 7, 31), D(2025, 4, 30)),
        (D(2025, 6, 1), D(2025, 3, 1)),
    ],
)
def test_cutoff_is_three_calendar_months_back(target: dt.date, cutoff: dt.date) -> None:
    assert cutoff_date(target) == cutoff


TARGET = D(2025, 6, 10)


def status(date: SourceDate | None, target: dt.date = TARGET, **kw: bool) -> str:
    result, _ = reference_status(
        date,
        target_date=target,
        cutoff=cutoff_date(target),
        resolved=kw.get("resolved", True),
        is_self=kw.get("is_self", False),
    )
    return result.value


def test_a_reference_on_the_cutoff_day_is_excluded() -> None:
    # target 2025-06-10 -> cutoff 2025-03-10
    assert status(SourceDate(Source.OPENALEX, D(2025, 3, 10))) == "after_cutoff"
    assert status(SourceDate(Source.OPENALEX, D(2025, 3, 9))) == "eligible"
    assert status(SourceDate(Source.OPENALEX, D(2025, 3, 11))) == "after_cutoff"


def test_dates_around_the_target() -> None:
    assert status(SourceDate(Source.S2, D(2025, 6, 10))) == "after_cutoff"  # same day as target
    assert status(SourceDate(Source.S2, D(2025, 6, 11))) == "dated_after_target"


def test_year_only_dates_are_conservative() -> None:
    # before the cutoff only if 31 December is; after the target only if 1 January is
    assert status(SourceDate(Source.S2, D(2024, 1, 1), YEAR)) == "eligible"  # ends 2024-12-31
    assert status(SourceDate(Source.S2, D(2025, 1, 1), YEAR)) == "after_cutoff"  # spans cutoff
    assert status(SourceDate(Source.S2, D(2026, 1, 1), YEAR)) == "dated_after_target"
    # a target early in the year: the same year is not "after the target"
    early = D(2025, 1, 5)
    assert status(SourceDate(Source.S2, D(2025, 1, 1), YEAR), target=early) == "after_cutoff"


def test_missing_dates_and_ids_and_self() -> None:
    assert status(None) == "no_date"
    assert status(None, resolved=False) == "unresolved"
    assert status(SourceDate(Source.S2, D(2020, 1, 1)), resolved=False) == "unresolved"
    assert status(SourceDate(Source.S2, D(2020, 1, 1)), is_self=True) == "self"


def test_reasons_name_the_date_and_its_source() -> None:
    result, reason = reference_status(
        SourceDate(Source.ARXIV, D(2025, 3, 10)),
        target_date=D(2025, 6, 10),
        cutoff=D(2025, 3, 10),
        resolved=True,
        is_self=False,
    )
    assert result is ReferenceStatus.AFTER_CUTOFF
    assert reason == "first public 2025-03-10 (arxiv) is not before the cutoff 2025-03-10"


def test_first_public_is_the_earliest_across_sources() -> None:
    arxiv = SourceDate(Source.ARXIV, D(2019, 3, 1))
    openalex = SourceDate(Source.OPENALEX, D(2019, 9, 20))  # the published version, later
    s2 = SourceDate(Source.S2, D(2019, 9, 20))
    assert first_public([openalex, arxiv, s2]) == arxiv  # a preprint before its publication
    assert first_public([openalex, s2]) == openalex  # tie: OpenAlex is listed before S2
    assert first_public([None, None]) is None


def test_a_vague_date_never_displaces_a_precise_one_from_its_own_period() -> None:
    precise = SourceDate(Source.OPENALEX, D(2018, 5, 2))
    same_year = SourceDate(Source.S2, D(2018, 1, 1), YEAR)
    earlier_year = SourceDate(Source.S2, D(2017, 1, 1), YEAR)
    assert first_public([precise, same_year]) == precise
    assert first_public([precise, earlier_year]) == earlier_year
    assert first_public([same_year]) == same_year


def test_a_split_window_is_on_the_first_public_date() -> None:
    start, end = D(2025, 1, 1), D(2026, 12, 31)
    assert outside_window(SourceDate(Source.ARXIV, D(2025, 1, 1)), start, end) is None
    assert outside_window(SourceDate(Source.OPENALEX, D(2026, 12, 31)), start, end) is None
    assert outside_window(SourceDate(Source.ARXIV, D(2024, 12, 31)), start, end) == (
        "first public 2024-12-31 (arxiv), before the split's window 2025-01-01 to 2026-12-31"
    )
    assert outside_window(SourceDate(Source.S2, D(2027, 1, 1)), start, end) == (
        "first public 2027-01-01 (s2), after the split's window 2025-01-01 to 2026-12-31"
    )
    # A year-only date is in only if its whole year is: 2025 is, 2027 is not.
    assert outside_window(SourceDate(Source.S2, D(2025, 1, 1), YEAR), start, end) is None
    mid = D(2025, 7, 1)
    assert outside_window(SourceDate(Source.S2, D(2025, 1, 1), YEAR), mid, end) == (
        "first public 2025 (s2), before the split's window 2025-07-01 to 2026-12-31"
    )
