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


def test_a_builds_chunks_grow_with_a_model_whatever_its_concurrency_or_runner() -> None:
    live = {"llm_backend": "openai", "llm_model": "m"}
    for extra in ({"llm_concurrency": 16}, {"llm_concurrency": 1}, {"runner": "dask"}):
        settings = Settings(**live, **extra)  # type: ignore[arg-type]
        assert _sizes(pipeline.lineage_chunks(TARGETS, settings)) == [4, 8, 16, 20, 12]
    small = Settings(**live, chunk_size=6)
    assert _sizes(pipeline.lineage_chunks(TARGETS[:12], small)) == [1, 2, 4, 5]
    # The rules backend (no latency to hide) keeps fixed chunks: they share the most requests.
    rules = Settings(llm_backend="rules", llm_concurrency=16)
    assert _sizes(pipeline.lineage_chunks(TARGETS, rules)) == [20, 20, 20]
