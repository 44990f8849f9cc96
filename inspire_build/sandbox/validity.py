"""Pure: score a build's LLM steps against a sandbox world's truth.

The truthful endpoint records what it planted in each brief it wrote; a brief the pipeline
rejected *caught* its plants. Grades are compared with the true tiers of the same references,
and the gold (tiers 1-3) with the true antecedents among the references that reached grading.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

IDENTITY_PLANTS = frozenset({"leak_name", "leak_acronym", "leak_title"})
MECHANISM_PLANTS = frozenset({"leak_mechanism", "leak_numbers"})
TIERS = (0, 1, 2, 3)


@dataclasses.dataclass(frozen=True)
class BriefOutcome:
    """One brief the endpoint wrote: what it planted, and whether the pipeline rejected it."""

    plants: frozenset[str]
    rejected: bool
    failed: frozenset[str] = frozenset()  # the checks that failed it (lexical, length, ...)


@dataclasses.dataclass(frozen=True)
class Caught:
    planted: int
    caught: int

    @property
    def share(self) -> float:
        return self.caught / self.planted if self.planted else 1.0


def caught(briefs: Iterable[BriefOutcome], kinds: frozenset[str]) -> Caught:
    """Of the briefs carrying any plant of ``kinds``, how many were rejected."""
    planted = [b for b in briefs if b.plants & kinds]
    return Caught(len(planted), sum(b.rejected for b in planted))


def false_rejection(briefs: Iterable[BriefOutcome]) -> Caught:
    """Of the briefs with nothing planted, how many were rejected (``caught`` = wrongly)."""
    clean = [b for b in briefs if not b.plants]
    return Caught(len(clean), sum(b.rejected for b in clean))


def rejected_by(briefs: Iterable[BriefOutcome]) -> dict[str, int]:
    """Of the clean briefs rejected, how many each check failed (a brief may fail several)."""
    counts: dict[str, int] = {}
    for brief in briefs:
        if brief.rejected and not brief.plants:
            for check in brief.failed:
                counts[check] = counts.get(check, 0) + 1
    return dict(sorted(counts.items()))


def quadratic_kappa(pairs: Sequence[tuple[int, int]], labels: Sequence[int] = TIERS) -> float:
    """Cohen's kappa with quadratic weights over (true, given) pairs; 1.0 is full agreement."""
    if not pairs:
        return 1.0
    index = {label: i for i, label in enumerate(labels)}
    size, n = len(labels), len(pairs)
    observed = [[0.0] * size for _ in range(size)]
    for true, given in pairs:
        observed[index[true]][index[given]] += 1
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(size)) for j in range(size)]
    weight = [[(i - j) ** 2 / (size - 1) ** 2 for j in range(size)] for i in range(size)]
    seen = sum(weight[i][j] * observed[i][j] for i in range(size) for j in range(size))
    expected = sum(weight[i][j] * rows[i] * cols[j] / n for i in range(size) for j in range(size))
    return 1.0 - seen / expected if expected else 1.0


def exact(pairs: Sequence[tuple[int, int]]) -> float:
    return sum(t == g for t, g in pairs) / len(pairs) if pairs else 1.0


@dataclasses.dataclass(frozen=True)
class GoldScores:
    precision: float
    recall: float
    gold: int
    true_antecedents: int


def gold_scores(gold: Mapping[str, set[str]], truth: Mapping[str, Mapping[str, int]]) -> GoldScores:
    """``gold``: target -> works given a tier 1-3; ``truth``: target -> work -> true tier, over
    the references that reached grading. Tier 0 is not an antecedent."""
    given = right = wanted = 0
    for target, tiers in truth.items():
        true = {work for work, tier in tiers.items() if tier > 0}
        chosen = gold.get(target, set())
        given += len(chosen)
        right += len(chosen & true)
        wanted += len(true)
    return GoldScores(
        precision=right / given if given else 1.0,
        recall=right / wanted if wanted else 1.0,
        gold=given,
        true_antecedents=wanted,
    )
