"""The memo of a build's fetched records: a later chunk asks only for what no earlier one did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspire_build.resolve import Memo


class Source:
    """A fetch function's stand-in: a record for every ID, None for "missing", and "bad" unread."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, client: Any, wanted: Sequence[str], failed: dict[str, str]) -> Any:
        self.asked.append(list(wanted))
        found: dict[str, str | None] = {}
        for paper_id in wanted:
            found[paper_id] = None if paper_id in ("missing", "bad") else f"record {paper_id}"
            if paper_id == "bad":
                failed[paper_id] = "unreadable"
        return found


def test_a_memo_asks_only_for_the_ids_no_earlier_chunk_asked_for() -> None:
    memo, fetch = Memo(), Source()
    first = memo.fetch(fetch, None, ["a", "missing", "bad"], failed := {})
    assert fetch.asked == [["a", "missing", "bad"]] and failed == {"bad": "unreadable"}
    second = memo.fetch(fetch, None, ["a", "b", "missing", "bad", "b"], again := {})
    # "a" and the not-found "missing" come from the memo; "bad" could not be read: asked again
    assert fetch.asked[1] == ["b", "bad"] and again == {"bad": "unreadable"}
    assert first["a"] == second["a"] == "record a"
    assert second["missing"] is None and second["b"] == "record b"
    assert list(second) == ["a", "b", "missing", "bad"]
    assert memo.fetch(fetch, None, ["a"], {}) == {"a": "record a"}
    assert len(fetch.asked) == 2  # nothing new: no request at all


def test_sources_are_kept_apart() -> None:
    memo, one, other = Memo(), Source(), Source()
    other.__module__ = "another.source"  # the memo tells sources apart by their module
    memo.fetch(one, None, ["a"], {})
    memo.fetch(other, None, ["a"], {})
    assert one.asked == [["a"]] and other.asked == [["a"]]
