"""Where a brief mentions its redaction terms and result numbers, by hand."""

from __future__ import annotations

from inspire_build.briefs import mentioned
from inspire_build.review.highlight import NUMBER, TERM, Segment, segments, spans, term_spans

BRIEF = "We study the Deep Residual Learning of images, reaching 92.3% with TRIS and tris."


def test_a_term_is_found_as_the_audit_finds_it_stop_words_between_included() -> None:
    # "deep residual learning images" has no stop word; the brief's "of" is one, so it is skipped
    assert term_spans(BRIEF, "deep residual learning images") == [(13, 45)]
    assert BRIEF[13:45] == "Deep Residual Learning of images"
    assert mentioned(BRIEF, ["deep residual learning images"]) == ["deep residual learning images"]


def test_an_acronym_is_found_only_as_itself() -> None:
    assert term_spans(BRIEF, "TRIS") == [(67, 71)]  # not "tris" at 76
    assert term_spans("TRISolven is new", "TRIS") == []


def test_a_term_absent_or_all_stop_words_finds_nothing() -> None:
    assert term_spans(BRIEF, "residual images") == []  # not in a row
    assert term_spans(BRIEF, "of the") == []


def test_numbers_are_not_found_inside_longer_numbers() -> None:
    assert spans("rose to 192.35 and 92.3", [], ["92.3"]) == [(19, 23, NUMBER)]


def test_overlapping_spans_merge_and_the_segments_give_the_text_back() -> None:
    found = spans("the graph neural network gnn wins", ["graph neural", "neural network"], [])
    assert found == [(4, 24, TERM)]
    pieces = segments(BRIEF, ["deep residual learning images", "TRIS"], ["92.3%"])
    assert pieces == [
        Segment("We study the "),
        Segment("Deep Residual Learning of images", TERM),
        Segment(", reaching "),
        Segment("92.3%", NUMBER),
        Segment(" with "),
        Segment("TRIS", TERM),
        Segment(" and tris."),
    ]
    assert "".join(p.text for p in pieces) == BRIEF
    assert segments("", ["x y"], ["12"]) == []
