"""Pure: where a brief mentions its target's redaction terms and result numbers, as spans to
highlight on the instance page.

A term is found as the lexical audit finds it (``briefs.mentions``): its words, case-folded and
accent-free, in a row in the brief once stop words are left out (the span runs from the first
word to the last, stop words between them included); an acronym in capitals only as itself, as
a whole word. A result number is found as ``audit.lexical`` finds it: not inside a longer
number.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from inspire_build.briefs import words

TERM, NUMBER = "term", "number"
_WORD = re.compile(r"\w+")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9-]*[A-Z0-9]$")  # as briefs.mentions reads an acronym


@dataclasses.dataclass(frozen=True)
class Segment:
    """A piece of the brief: plain (``kind`` None), or a ``term`` or ``number`` found in it."""

    text: str
    kind: str | None = None


def _words_at(text: str) -> list[tuple[str, int, int]]:
    """(folded word, start, end) of each word of ``text`` that is not a stop word."""
    found = []
    for match in _WORD.finditer(text):
        folded = words(match.group(0))
        if len(folded) == 1:
            found.append((folded[0], match.start(), match.end()))
    return found


def term_spans(text: str, term: str) -> list[tuple[int, int]]:
    """(start, end) of every place ``text`` mentions ``term``."""
    bare = term.strip()
    if _ACRONYM.match(bare):
        pattern = rf"(?<![\w]){re.escape(bare)}(?![\w])"
        return [(m.start(), m.end()) for m in re.finditer(pattern, text)]
    wanted = words(bare)
    if not wanted:
        return []
    at = _words_at(text)
    n = len(wanted)
    return [
        (at[i][1], at[i + n - 1][2])
        for i in range(len(at) - n + 1)
        if [w for w, _, _ in at[i : i + n]] == wanted
    ]


def number_spans(text: str, number: str) -> list[tuple[int, int]]:
    pattern = rf"(?<![\d.]){re.escape(number)}(?![\d])"
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


def spans(text: str, terms: Sequence[str], numbers: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every term and number found, by start; overlapping spans are
    merged into one, of the kind of the one that starts first (a term, on a tie)."""
    found = [(s, e, TERM) for term in terms for s, e in term_spans(text, term)]
    found += [(s, e, NUMBER) for n in numbers for s, e in number_spans(text, n)]
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(found, key=lambda f: (f[0], f[2] != TERM, -f[1])):
        if merged and start < merged[-1][1]:
            first = merged[-1]
            merged[-1] = (first[0], max(first[1], end), first[2])
        else:
            merged.append((start, end, kind))
    return merged


def segments(text: str, terms: Sequence[str], numbers: Sequence[str]) -> list[Segment]:
    """``text`` cut into plain pieces and the pieces :func:`spans` found, in order; joined, they
    give ``text`` back."""
    pieces, at = [], 0
    for start, end, kind in spans(text, terms, numbers):
        if start > at:
            pieces.append(Segment(text[at:start]))
        pieces.append(Segment(text[start:end], kind))
        at = end
    if at < len(text):
        pieces.append(Segment(text[at:]))
    return pieces
