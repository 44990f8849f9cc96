"""Pure: score a build's LLM steps against a sandbox world's truth.

The emulated endpoint records what it planted in each brief it wrote; a brief the pipeline
rejected *caught* its plants. Grades are compared with the true tiers of the same references,
and the gold (tiers 1-3) with the true antecedents among the references that reached grading.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from inspire_build import card, grading
from inspire_build.evaluation.kappa import TIERS, matrix_kappa
from inspire_build.templates import Prompt

IDENTITY_PLANTS = frozenset({"leak_name", "leak_acronym", "leak_title"})
MECHANISM_PLANTS = frozenset({"leak_mechanism", "leak_numbers"})


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


# --- the evidence ceiling -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What the rendered grade prompt shows of one reference, as an evidence class: a piece the
    template does not render is None (or, for contexts, left out), whatever the pipeline gave."""

    contexts: tuple[str, ...]  # each shown context's wording, less the reference's own words
    mentions: int | None
    intents: tuple[str, ...] | None
    influential: bool | None
    same_topic: bool | None  # the title or abstract shows the reference's topic

    @property
    def bare(self) -> bool:
        """No context and no intent shown."""
        return not self.contexts and not self.intents


def _wording(context: str, title: str) -> str:
    """A context's wording without the reference's own words or its citation number."""
    own = set(title.lower().split())
    kept = [w for w in re.sub(r"\[\d+\]|[^\w\s]", " ", context.lower()).split() if w not in own]
    return " ".join(kept)


def shown_evidence(prompt: Prompt, reference: Mapping[str, Any], same_topic: bool) -> Evidence:
    """The evidence ``prompt`` (the grade template) renders of ``reference``: a piece counts only
    if the reference's block changes without it, so a template that drops a piece drops it from
    the ceiling too, however the pipeline gathered it."""
    item = grading.shown({**reference, "mentions": len(reference.get("contexts") or [])}, 1)

    def block(changed: Mapping[str, Any]) -> str:
        return prompt.render(grading.part_context("", "", [{**item, **changed}], 1, 1))

    whole = block({})

    def shows(**changed: Any) -> bool:
        return block(changed) != whole

    contexts = item["contexts"]
    kept = [c for i, c in enumerate(contexts) if shows(contexts=contexts[:i] + contexts[i + 1 :])]
    intents, influential = item["intents"], item["influential"]
    topic = bool(item["title"] or item["abstract"]) and shows(title="", abstract="")
    return Evidence(
        tuple(sorted({_wording(c, item["title"]) for c in kept})),
        min(item["mentions"], 4) if shows(mentions=item["mentions"] + 1) else None,
        tuple(sorted(intents)) if shows(intents=[] if intents else ["methodology"]) else None,
        influential if shows(influential=not influential) else None,
        same_topic if topic else None,
    )


@dataclasses.dataclass(frozen=True)
class Ceiling:
    """The best any grader could do from the evidence: ``kappa`` of the best tier per evidence
    signature, ``recall`` of the most likely antecedent call per signature, over ``n``
    references."""

    kappa: float
    recall: float
    n: int


def _confusion_kappa(counts: Mapping[str, Counter[int]], choice: Mapping[str, int]) -> float:
    observed = [[0.0] * len(TIERS) for _ in TIERS]
    for signature, tiers in counts.items():
        for true, n in tiers.items():
            observed[TIERS.index(true)][TIERS.index(choice[signature])] += n
    return matrix_kappa(observed)


def ceiling(observed: Sequence[tuple[Hashable, int]], passes: int = 3) -> Ceiling:
    """``observed``: (evidence signature, true tier) per graded reference. A grader that reads
    only the evidence gives every reference of one signature the same answer, so the best kappa
    is that of the best tier per signature: found from each signature's most common tier, then
    improved signature by signature (``passes`` rounds of coordinate ascent). In-sample, so an
    upper bound on what a grader of this evidence reaches."""
    counts: dict[str, Counter[int]] = {}
    for signature, tier in observed:
        counts.setdefault(repr(signature), Counter())[tier] += 1
    choice = {s: tiers.most_common(1)[0][0] for s, tiers in counts.items()}
    best = _confusion_kappa(counts, choice)
    for _ in range(passes):
        improved = False
        for signature in sorted(counts, key=lambda s: -sum(counts[s].values())):
            for tier in TIERS:
                trial = {**choice, signature: tier}
                score = _confusion_kappa(counts, trial)
                if score > best + 1e-12:
                    best, choice, improved = score, trial, True
        if not improved:
            break
    wanted = sum(n for tiers in counts.values() for t, n in tiers.items() if t > 0)
    found = sum(
        sum(n for t, n in tiers.items() if t > 0)
        for tiers in counts.values()
        if sum(n for t, n in tiers.items() if t > 0) * 2 >= sum(tiers.values())
    )
    return Ceiling(best, found / wanted if wanted else 1.0, len(observed))


def distinct_share(problems: Sequence[str]) -> float:
    """The share of problem statements that are their own (:func:`card.distinct_problems`)."""
    return card.distinct_problems(problems) / len(problems) if problems else 1.0


def distinct_bound(briefs: int, top: int, candidates: int, attempts: int = 1) -> tuple[float, int]:
    """(the largest share of ``briefs`` distinct problems any writer that keeps every target
    can expect, the problem size its first draft states) when a brief whose target ranks in the
    ``top`` of its window fails, and a writer has ``attempts`` drafts. A writer that lets a
    target go rather than state its field's problem is not bound by it: it pays in yield.

    A problem stated specifically enough to be one brief's alone is stated by the few
    candidates that share it (its size F); a lexical attacker cannot tell them apart, so the
    target ranks uniformly among them and the draft passes with chance 1 - top/F. The brief
    stays its own only if no other brief's target, drawn from the ``candidates`` without
    replacement, shares its problem. A failed draft is redrafted more generally (a larger F);
    the last failure falls back to the field's problem, counted as not distinct. Chances of
    passing are taken as independent across drafts: the truth (a target ranked high in one
    problem ranks high in a wider one) only lowers the bound.
    """
    sizes = range(top + 1, candidates + 1)
    own = {size: _alone(briefs, size, candidates) * (1 - top / size) for size in sizes}
    later = [0.0] * (candidates + 2)  # later[F]: the best the drafts after one of size F reach
    first: dict[int, float] = {}
    for _ in range(attempts):
        value = {size: own[size] + top / size * later[size] for size in sizes}
        best_after = 0.0
        for size in reversed(sizes):
            later[size] = best_after
            best_after = max(best_after, value[size])
        first = value
    return max(((v, s) for s, v in first.items()), default=(0.0, 0))


def _alone(briefs: int, size: int, candidates: int) -> float:
    """The chance that none of the other briefs' targets is among the ``size`` candidates
    sharing a problem with this one's."""
    chance = 1.0
    for other in range(briefs - 1):
        chance *= max(0, candidates - size - other) / (candidates - 1 - other)
    return chance
