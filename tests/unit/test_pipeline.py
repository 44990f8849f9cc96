"""The build's chunks: a small first one, so the LLM steps start after little lineage."""

from __future__ import annotations

from inspire_build.pipeline import chunks


def test_chunks_start_at_a_quarter_of_the_size_and_double_up_to_it() -> None:
    targets = [f"t{i}" for i in range(60)]
    parts = chunks(targets, 20)
    assert [len(p) for p in parts] == [5, 10, 20, 20, 5]
    assert [t for p in parts for t in p] == targets  # every target once, in order


def test_small_sizes_and_short_lists() -> None:
    assert [len(p) for p in chunks(list("abcdefg"), 3)] == [1, 2, 3, 1]
    assert [len(p) for p in chunks(list("abcde"), 1)] == [1] * 5
    assert chunks(list("ab"), 20) == [["a", "b"]]
    assert chunks([], 20) == []
    assert chunks(list("abcde"), 20 * 4) == [list("abcde")]  # one chunk
