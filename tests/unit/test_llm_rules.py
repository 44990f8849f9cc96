"""The rules backend's redaction matches words, not one regular expression per term; it must
remove exactly what the expression did (the reference below), on texts built to tempt it:
stop words between a term's words, case, hyphens, underscores, digits, overlaps, and the
replacement's own words.

The rules brief reads only what the brief prompt shows, on a seeded sandbox world."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from inspire_build import llm_rules
from inspire_build.briefs import redactions
from inspire_build.llm_rules import redact
from inspire_build.sandbox.world import WorldConfig, generate
from inspire_build.text import STOPWORDS

_TERM_WORD = re.compile(r"[^\W_]+")
WORDS = ["sharded", "Index", "router", "of", "the", "and", "a", "An", "approach", "this",
         "memory", "GPT-4", "x_y", "2024", "recall", "Recall", "for", "in", "on"]  # fmt: skip
GAPS = [" ", "  ", ", ", "-", " (", ") ", ". ", "/", "_", ""]


def by_expression(text: str, terms: Sequence[str]) -> str:
    """The implementation redact replaced: one pattern per term."""
    gap = r"\W+(?:(?:" + "|".join(sorted(STOPWORDS)) + r")\W+)*"
    for term in sorted({t for t in terms if t.strip()}, key=len, reverse=True):
        parts = [w for w in _TERM_WORD.findall(term) if w.lower() not in STOPWORDS]
        if parts:
            pattern = r"\b" + gap.join(re.escape(part) for part in parts) + r"\b"
            text = re.sub(pattern, "this approach", text, flags=re.IGNORECASE)
    return text


def test_hand_cases() -> None:
    assert (
        redact("The Sharded Index of the router.", ["sharded index router"]) == "The this approach."
    )
    assert redact("sharded_index stays", ["index"]) == "sharded_index stays"
    assert redact("of the and", ["of the"]) == "of the and"  # stop words alone are no term
    assert redact("GPT-4 and GPT-4o", ["GPT-4"]) == "this approach and GPT-4o"


def test_it_removes_exactly_what_the_expression_did() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 14))]
        text = "".join(w + rng.choice(GAPS) for w in words)
        terms = []
        for _ in range(rng.randint(1, 4)):
            start = rng.randrange(len(words))
            picked = words[start : start + rng.randint(1, 4)]
            terms.append(rng.choice([" ", " the ", "-"]).join(picked).upper() if rng.random() < 0.2
                         else " ".join(picked))  # fmt: skip
        # and terms drawn from every word, the text's or not (one it lacks changes nothing)
        terms += [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(rng.randint(0, 3))]
        assert redact(text, terms) == by_expression(text, terms), (text, terms)


# --- the rules brief on a seeded sandbox world --------------------------------------------------


_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> set[str]:
    """Its words, less function words ("for", "of"), which every title shares and none leaks."""
    return {w.lower() for w in _WORD.findall(text)} - llm_rules.STOPWORDS


def _targets() -> list[tuple[str, str, list[str]]]:
    world = generate(WorldConfig(seed=5, papers=800))
    by_key = world.by_key()
    works = {  # one record per work: a preprint and its published twin share one abstract
        r.work: (r.title, r.abstract, [by_key[c.cites].title for c in r.references])
        for r in world.records
        if r.publication_date >= "2023-01-01" and r.references
    }
    return list(works.values())


def test_no_brief_word_comes_from_the_references_alone() -> None:
    targets = _targets()
    assert len(targets) > 100
    for title, abstract, cited_titles in targets:
        context = {
            "title": title,
            "abstract": abstract,
            "redactions": redactions(title, abstract, cited_titles),
            "feedback": [],
        }
        brief = llm_rules.brief(context).brief
        borrowed = _words(brief) & _words(" ".join(cited_titles)) - _words(f"{title} {abstract}")
        assert not borrowed, (title, sorted(borrowed))


def test_no_two_targets_get_the_same_brief() -> None:
    briefs = [
        llm_rules.brief(
            {"title": t, "abstract": a, "redactions": redactions(t, a, []), "feedback": []}
        ).brief
        for t, a, _ in _targets()
    ]
    assert len(set(briefs)) == len(briefs)
