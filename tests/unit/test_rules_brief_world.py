"""The rules brief reads only what the brief prompt shows, on a seeded sandbox world."""

from __future__ import annotations

import re

from inspire_build import llm_rules
from inspire_build.briefs import redactions
from inspire_build.sandbox.world import WorldConfig, generate

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
