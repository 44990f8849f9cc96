"""The emulated auditor: identity guesses from what a model could know, mechanism guesses from
the brief alone, and the guess graded against the abstract the prompt shows.

- ``audit_identity``: the model knows only the papers first public before its training cutoff
  (:class:`Memory`; a setting, by default the eval window's start). It names the known paper
  whose coined name, acronym or title 4-gram the brief carries, else the known paper whose
  abstract shares most of the brief's content words. A target newer than the cutoff cannot be
  named: that is what identity by search is for.
- ``audit_mechanism_guess``: what the brief itself reveals of a solution: name-shaped runs
  (capitalised words inside a sentence), acronyms, numbers and technique words (a technique
  vocabulary any model has, :data:`TECHNIQUES`), else a guess from the brief's topic words.
- ``audit_mechanism``: the guess against the abstract's solution sentences: "full" when it
  repeats a name, acronym or number they state, or two of their own words; "partial" for one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections import Counter
from collections.abc import Sequence

from inspire_build.sandbox.emulated_brief import TITLE_NGRAM, solution
from inspire_build.sandbox.world import MECHANISMS, Record
from inspire_build.text import content_words, sentences, topic_words

# Technique words a model knows as such, whatever paper it read them in: general vocabulary,
# the same words the world's methods are made of, and a few more.
TECHNIQUES = frozenset(MECHANISMS) | {"contrastive", "transformer", "retrieval"}
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{2,}\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?%?")


def first_public(record: Record) -> str:
    dates = [record.publication_date, *(d for v, d in record.arxiv_versions if v == 1)]
    return min(d for d in dates if d)


def _grams(text: str) -> set[str]:
    found = content_words(text)
    return {" ".join(found[i : i + TITLE_NGRAM]) for i in range(len(found) - TITLE_NGRAM + 1)}


class Memory:
    """The papers a model read in training: those first public before ``cutoff``."""

    def __init__(self, records: Sequence[Record], cutoff: dt.date) -> None:
        self.known = [r for r in records if first_public(r) < cutoff.isoformat()]
        self.names: dict[str, Record] = {}
        self.grams: dict[str, Record] = {}
        self.words: list[tuple[Record, frozenset[str]]] = []
        for record in self.known:
            found = solution(record.abstract)
            for name in (*found.names, *found.acronyms):
                self.names.setdefault(" ".join(content_words(name)) or name, record)
            for gram in _grams(record.title):
                self.grams.setdefault(gram, record)
            self.words.append((record, frozenset(content_words(record.abstract))))

    def recall(self, brief: str) -> Record | None:
        """The known paper the brief most likely describes; None when it knows none."""
        folded = f" {' '.join(content_words(brief))} "
        for name, record in self.names.items():
            # ``name in brief`` first: the pattern cannot match without it, and compiling one
            # pattern per known name for every brief was most of an identity answer's time.
            if f" {name} " in folded or (
                name in brief and re.search(rf"\b{re.escape(name)}\b", brief)
            ):
                return record
        hits = Counter(self.grams[g].key for g in _grams(brief) if g in self.grams)
        if hits:
            key = hits.most_common(1)[0][0]
            return next(r for r in self.known if r.key == key)
        said = set(content_words(brief))
        scored = [(len(said & words), record) for record, words in self.words]
        if not scored:
            return None
        # Papers that share as many words are equally likely: a guess among them, seeded by the
        # brief (an order by key or date would favour the newest paper, often the target).
        best = max(n for n, _ in scored)
        tied = [record for n, record in scored if n == best]
        return min(tied, key=lambda r: hashlib.sha256(f"{brief}\0{r.key}".encode()).hexdigest())


def mechanism_guess(brief: str) -> str:
    """A guess at the solution from what the brief alone reveals."""
    runs = []
    unlabelled = re.sub(r"^\w+: ", "", brief, flags=re.MULTILINE)  # "Problem: ..." sections
    for sentence in sentences(unlabelled):
        tokens = re.findall(r"[\w-]+", sentence)
        runs += [t for t in tokens[1:] if t[:1].isupper() and not t.isupper()]
    shown = [*runs, *_ACRONYM.findall(brief), *_NUMBER.findall(brief)]
    shown += [w for w in content_words(brief) if w in TECHNIQUES]
    if shown:
        return f"A method built on {', '.join(dict.fromkeys(shown))}."
    topic = list(dict.fromkeys(topic_words(brief)))[:3]
    return f"An approach that models {' and '.join(topic) or 'the stated conditions'} jointly."


def mechanism_overlap(guess: str, abstract: str) -> tuple[str, list[str]]:
    """("none" | "partial" | "full", what the guess shares with the abstract's solution)."""
    found = solution(abstract)
    shown = [n for n in (*found.names, *found.acronyms) if n.lower() in guess.lower()]
    shown += [n for n in found.numbers if n in _NUMBER.findall(guess)]
    shared = [w for w in found.words if w in set(content_words(guess))]
    if shown or len(shared) >= 2:
        return "full", shown + shared
    return ("partial", shared) if shared else ("none", [])
