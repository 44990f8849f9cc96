"""pipeline.py's chunking of a build's targets: fixed chunks, or chunks growing from a first."""

from __future__ import annotations

import pytest

from inspire_build import pipeline
from inspire_build.config import Settings

TARGETS = [f"t{i}" for i in range(60)]


def _sizes(parts: list[list[str]]) -> list[int]:
    return [len(part) for part in parts]


def test_fixed_chunks_by_hand() -> None:
    assert _sizes(pipeline.chunks(TARGETS, 20)) == [20, 20, 20]
    assert _sizes(pipeline.chunks(TARGETS[:7], 3)) == [3, 3, 1]
    assert pipeline.chunks([], 20) == []


@pytest.mark.parametrize(
    ("count", "size", "first", "sizes"),
    [
        (60, 20, 4, [4, 8, 16, 20, 12]),  # doubling, then capped at the chunk size
        (5, 20, 4, [4, 1]),
        (60, 20, 1, [1, 2, 4, 8, 16, 20, 9]),
        (60, 20, 32, [20, 20, 20]),  # a first larger than the chunk size is the chunk size
        (60, 20, None, [20, 20, 20]),
    ],
)
def test_growing_chunks_by_hand(count: int, size: int, first: int | None, sizes: list[int]) -> None:
    parts = pipeline.chunks(TARGETS[:count], size, first)
    assert _sizes(parts) == sizes
    assert [t for part in parts for t in part] == TARGETS[:count]  # every target once, in order


def test_chunks_grow_only_for_a_model_answering_calls_at_once() -> None:
    live = {"llm_backend": "openai", "llm_model": "m"}
    assert pipeline.first_chunk(Settings(**live, llm_concurrency=16)) == 4
    assert pipeline.first_chunk(Settings(**live, llm_concurrency=8)) == 2
    assert pipeline.first_chunk(Settings(**live, llm_concurrency=3)) == 1
    # One call at a time, or the rules backend (no latency): fixed chunks share the most requests.
    assert pipeline.first_chunk(Settings(**live, llm_concurrency=1)) is None
    assert pipeline.first_chunk(Settings(llm_backend="rules", llm_concurrency=16)) is None
