"""text.without_accents: the fold every title, brief and public text passes through."""

from __future__ import annotations

import unicodedata

import pytest

from inspire_build.text import without_accents


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Attention Is All You Need", "Attention Is All You Need"),  # ASCII: as it is
        ("Schrödinger Bridges", "Schrodinger Bridges"),
        ("Erdős–Rényi graphs", "Erdos–Renyi graphs"),  # the dash is no mark: it stays
        ("Cafe\u0301 au lait", "Cafe au lait"),  # a combining accent already apart
        ("ﬁne-tuning", "fine-tuning"),  # NFKD splits the ligature
        ("", ""),
    ],
)
def test_accents_go_and_everything_else_stays(text: str, expected: str) -> None:
    assert without_accents(text) == expected


def test_ascii_is_what_the_long_way_gives() -> None:
    ascii_text = "".join(map(chr, range(128)))
    long_way = "".join(
        c for c in unicodedata.normalize("NFKD", ascii_text) if not unicodedata.combining(c)
    )
    assert without_accents(ascii_text) == long_way == ascii_text
