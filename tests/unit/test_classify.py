"""The lineage verdicts, worked out by hand: works joined by shared IDs, each reference's status
against the published cutoff, the target's own status, and the source notes on both."""

from __future__ import annotations

import datetime as dt

from inspire_build.classify import Works, classify, source_date, source_problems, with_problems
from inspire_build.cutoff import SourceDate
from inspire_build.ids import PaperId, Scheme
from inspire_build.lineage import Mention, merge
from inspire_build.models import DatePrecision, Paper, PaperIds, ReferenceStatus, Source

A, B, C = (PaperId(Scheme.OPENALEX, w) for w in ("W1", "W2", "W3"))
X = PaperId(Scheme.ARXIV, "2401.00001")
DAY = dt.date(2025, 6, 15)  # the target's first public day: its exact cutoff is 2025-03-15


def dated(day: dt.date) -> SourceDate:
    return SourceDate(Source.OPENALEX, day)


def world() -> tuple[Works, list[Mention]]:
    works = Works()
    target = works.add([PaperId(Scheme.OPENALEX, "W0")])
    assert target is not None
    target.dates.append(dated(DAY))
    for found, day in (([A], dt.date(2025, 3, 14)), ([B], dt.date(2025, 3, 15)),
                       ([C], dt.date(2025, 7, 1))):  # fmt: skip
        work = works.add(found)
        assert work is not None
        work.dates.append(dated(day))
    mentions = [
        Mention(Source.OPENALEX, 0, (A,), "Before"),
        Mention(Source.OPENALEX, 1, (B,), "On the cutoff day"),
        Mention(Source.OPENALEX, 2, (C,), "After the target"),
        Mention(Source.OPENALEX, 3, (), "No identifier"),
        Mention(Source.OPENALEX, 4, (PaperId(Scheme.OPENALEX, "W9"),), "Never dated"),
    ]
    return works, mentions


def test_works_sharing_an_id_become_one() -> None:
    works = Works()
    first, second = works.add([A]), works.add([X])
    joined = works.add([B, X, A])
    assert first is not None and second is not None and joined is not None
    assert joined.ids == {A, B, X} and works.current(second) is joined is works.current(first)
    assert len(works.all()) == 1 and works.add([]) is None


def test_each_reference_against_the_exact_cutoff() -> None:
    works, mentions = world()
    target = works.get([PaperId(Scheme.OPENALEX, "W0")])
    assert target is not None
    lineage = classify("openalex:W0", target, merge([mentions]), works, None, {}, None)
    assert lineage.cutoff == dt.date(2025, 3, 15)
    assert [r.status for r in lineage.references] == [
        ReferenceStatus.ELIGIBLE,  # 03-14 is strictly before 03-15
        ReferenceStatus.AFTER_CUTOFF,  # on the cutoff day is not before it
        ReferenceStatus.DATED_AFTER_TARGET,
        ReferenceStatus.UNRESOLVED,
        ReferenceStatus.NO_DATE,
    ]
    assert lineage.status.value == "candidate"
    assert lineage.reason == "lineage resolved: 1 eligible of 5 references"


def test_a_secret_offset_moves_the_cutoff_earlier() -> None:
    works, mentions = world()
    target = works.get([PaperId(Scheme.OPENALEX, "W0")])
    assert target is not None
    target.paper_id = "openalex:W0"
    lineage = classify(
        "openalex:W0", target, merge([mentions[:1]]), works, None, {}, None, lambda _: 2
    )
    # 2025-03-15 less two days: W1 (03-14) is no longer strictly before it.
    assert lineage.cutoff == dt.date(2025, 3, 13)
    assert lineage.references[0].status is ReferenceStatus.AFTER_CUTOFF
    assert lineage.reason == "no reference is strictly before the cutoff"


def test_the_targets_own_verdicts() -> None:
    works, mentions = world()
    target = works.get([PaperId(Scheme.OPENALEX, "W0")])
    assert target is not None
    entries = merge([mentions])
    outside = classify(
        "t", target, entries, works, None, {}, (dt.date(2025, 1, 1), DAY.replace(day=1))
    )
    assert outside.status.value == "excluded" and "2025-06-15" in outside.reason
    given = classify(
        "t", target, entries, works, DAY, {}, (dt.date(2025, 1, 1), dt.date(2025, 2, 1))
    )
    assert given.status.value == "candidate"  # a given date is not judged against the window
    empty = classify("t", target, [], works, None, {}, None)
    assert empty.reason == "no source lists any reference"
    undated = Works().add([PaperId(Scheme.OPENALEX, "W5")])
    assert undated is not None
    nodate = classify("t", undated, entries, works, None, {}, None)
    assert nodate.reason == "no first public date in any source"
    assert {r.status for r in nodate.references} == {
        ReferenceStatus.NO_DATE,
        ReferenceStatus.UNRESOLVED,
    }


def test_source_problems_name_unreadable_answers_and_bad_fields() -> None:
    works = Works()
    work = works.add([A])
    assert work is not None
    work.records.append(
        Paper(
            source=Source.S2, ids=PaperIds(openalex="W1"), problems=["a year that is not a number"]
        )
    )
    problems = source_problems([A, B], work, {B: "OpenAlex's answer stays malformed"})
    assert problems == "OpenAlex's answer stays malformed; s2 gave a year that is not a number"
    assert with_problems("kept", problems) == f"kept [source problems: {problems}]"
    assert source_problems([A], None, {}) is None and with_problems("kept", None) == "kept"


def test_a_targets_problems_have_their_own_field_and_stay_on_its_reason() -> None:
    works, mentions = world()
    target = works.get([PaperId(Scheme.OPENALEX, "W0")])
    assert target is not None
    failed = {PaperId(Scheme.OPENALEX, "W0"): "S2's reference list stays malformed: not JSON"}
    lineage = classify("openalex:W0", target, merge([mentions]), works, None, failed, None)
    assert lineage.source_problems == "S2's reference list stays malformed: not JSON"
    assert lineage.outcome.value == "lineage_resolved"
    assert lineage.reason == (
        "lineage resolved: 1 eligible of 5 references "
        "[source problems: S2's reference list stays malformed: not JSON]"
    )


def test_a_source_date_falls_back_to_its_year() -> None:
    assert source_date(Source.S2, None, 2024, None) == SourceDate(
        Source.S2, dt.date(2024, 1, 1), DatePrecision.YEAR
    )
    assert source_date(Source.S2, DAY, 2025, None) == SourceDate(Source.S2, DAY, DatePrecision.DAY)
    assert source_date(Source.S2, None, None, None) is None


def test_a_works_records_keep_one_order_whatever_order_they_came_in() -> None:
    def paper(source: Source, openalex: str, title: str) -> Paper:
        return Paper(source=source, ids=PaperIds(openalex=openalex), title=title)

    records = [
        paper(Source.S2, "W2", "b"),
        paper(Source.OPENALEX, "W2", "c"),
        paper(Source.OPENALEX, "W1", "a"),
    ]
    one, other = Works().add([A]), Works().add([A])
    assert one is not None and other is not None
    one.add_records(records)
    for record in reversed(records):
        other.add_records([record])
    assert one.records == other.records
    assert [r.title for r in one.records] == ["a", "c", "b"]  # openalex W1, W2, then s2
