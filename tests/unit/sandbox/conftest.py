"""Hand-made sandbox records for the emulator's tests: one builder, every field defaulted; and the
words a generated world's papers hold."""

from __future__ import annotations

from typing import Any

from inspire_build.sandbox.world import Record, WorldConfig, generate
from inspire_build.text import content_words


def sandbox_record(key: str, title: str, **fields: Any) -> Record:
    """A single record ``key`` ("P000001") titled ``title``, dated 2025-01-02 unless ``fields``
    say otherwise; IDs follow from the key's number."""
    number = int(key[1:])
    values: dict[str, Any] = {
        "key": key,
        "work": f"K{number:06d}",
        "kind": "single",
        "openalex": f"W{4100000000 + number}",
        "s2": f"{number:040x}",
        "corpus_id": 250000000 + number,
        "doi": f"10.5555/sandbox.{number}",
        "arxiv": None,
        "arxiv_versions": [],
        "title": title,
        "s2_title": title,
        "s2_arxiv": None,
        "abstract": f"The {title.lower()} study.",
        "authors": ["Ada Abe"],
        "venue": None,
        "topic": "t00",
        "field": "Computer Science",
        "categories": ["cs.LG"],
        "publication_date": "2025-01-02",
        "s2_publication_date": "2025-01-02",
        "s2_year": 2025,
        "openalex_references_empty": False,
        "references": [],
    }
    return Record(**{**values, **fields})


def world_words(seed: int, papers: int) -> set[str]:
    """Every content word of a generated world's titles, S2 titles, abstracts and citation
    contexts: what a word "no paper holds" must avoid."""
    words: set[str] = set()
    for record in generate(WorldConfig(seed=seed, papers=papers)).records:
        for text in (record.title, record.s2_title, record.abstract):
            words.update(content_words(text))
        for citation in record.references:
            for context in citation.contexts:
                words.update(content_words(context))
    return words
