"""Title matching ranks its candidates with rapidfuzz over all choices at once; it must rank
exactly as the per-pair title_score did (the reference below), ties and subtitle subsets
included, on titles built from a small vocabulary so that both are common."""

from __future__ import annotations

import random

from rapidfuzz import process

from inspire_build.lineage import TITLE_THRESHOLD, title_candidates, title_score

VOCABULARY = [
    "deep",
    "sparse",
    "graph",
    "learning",
    "of",
    "the",
    "neural",
    "retrieval",
    "for",
    "dense",
    "models",
]


def by_pairs(query: str, choices: list[str]) -> list[tuple[float, int]]:
    found = process.extract(
        query,
        choices,
        scorer=lambda a, b, **_: title_score(a, b),
        score_cutoff=TITLE_THRESHOLD,
        limit=5,
    )
    return [(float(score), index) for _, score, index in found]


def test_the_same_candidates_in_the_same_order() -> None:
    rng = random.Random(11)
    for _ in range(1500):
        base = [rng.choice(VOCABULARY) for _ in range(rng.randint(3, 9))]
        choices = []
        for _ in range(rng.randint(1, 30)):
            words = list(base)
            for _ in range(rng.randint(0, 3)):
                roll = rng.random()
                if roll < 0.4 and words:
                    words.pop(rng.randrange(len(words)))
                elif roll < 0.8:
                    words.insert(rng.randrange(len(words) + 1), rng.choice(VOCABULARY))
                else:
                    words.append(rng.choice(VOCABULARY) + "s")
            choices.append(" ".join(words))
        query = " ".join(base) if rng.random() < 0.5 else rng.choice(choices)
        assert title_candidates(query, choices) == by_pairs(query, choices), (query, choices)


def test_a_subtitle_of_five_words_or_more_scores_the_title_only_threshold() -> None:
    found = title_candidates("sparse graph learning for dense retrieval",
                             ["sparse graph learning for dense retrieval at web scale of models",
                              "sparse graph"])  # fmt: skip
    assert found == [(97.0, 0)]
