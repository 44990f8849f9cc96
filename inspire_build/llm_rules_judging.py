"""The ``rules`` LLM backend's judgements (``llm_rules.py`` holds the rest): the leakage audit's
guesses from a brief alone, and the grades of a target's references from citation signals.
Every threshold is stated here:

- ``audit_identity``: a lexical guess at the title: the brief's eight rarest content words.
- ``audit_mechanism_guess``: a guess from the brief's words alone: its topic words.
- ``audit_mechanism``: the share of the abstract's solution-only words the guess repeats:
  under 0.2 is "none", under 0.5 "partial", else "full".
- ``grade``: citation signals (mentions, intents, isInfluential), with tier 0 for a reference
  the target barely uses. T3 when the reference is influential and either has a methodology
  intent or at least ``T3_MENTIONS`` mentions; T2 when it has a methodology intent, is
  influential, or has a result intent and at least ``T2_RESULT_MENTIONS`` mentions (a baseline
  compared against repeatedly); T1 when it has at least ``T1_MENTIONS`` mentions (background
  the text returns to); else 0: at most one mention, no methodology intent, not influential (a
  passing mention, a single background or results citation such as an evaluation dataset, or
  no signal at all). T3 needs the rarest signal, isInfluential, so it stays the rarest tier.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from inspire_build.models import (
    AntecedentGrade,
    GradeSheet,
    IdentityGuess,
    LeakLevel,
    MechanismGuess,
    MechanismOverlap,
    Role,
    Tier,
)
from inspire_build.text import content_words, split_abstract, topic_words

T3_MENTIONS = 3
T2_RESULT_MENTIONS = 2
T1_MENTIONS = 2
MECHANISM_PARTIAL, MECHANISM_FULL = 0.2, 0.5


def audit_identity(context: Mapping[str, Any]) -> IdentityGuess:
    words = content_words(str(context.get("brief") or ""))
    counts = Counter(words)
    rare = sorted(dict.fromkeys(words), key=lambda w: (counts[w], words.index(w)))[:8]
    return IdentityGuess(title=" ".join(rare))


def audit_mechanism_guess(context: Mapping[str, Any]) -> MechanismGuess:
    """A guess from the brief alone: its topic words, in order, each once."""
    guessed = list(dict.fromkeys(topic_words(str(context.get("brief") or ""))))
    return MechanismGuess(mechanism=", ".join(guessed) or "(no guess)")


def audit_mechanism(context: Mapping[str, Any]) -> MechanismOverlap:
    """The guess against the abstract: the share of its solution-only words the guess has."""
    guess = str(context.get("guess") or "")
    problem, solution = split_abstract(str(context.get("abstract") or ""))
    solution_only = set(content_words(" ".join(solution))) - set(content_words(" ".join(problem)))
    if not solution_only:
        return MechanismOverlap(
            overlap=LeakLevel.NONE, rationale="no solution sentences to compare"
        )
    shared = solution_only & set(content_words(guess))
    share = len(shared) / len(solution_only)
    level = (
        LeakLevel.NONE
        if share < MECHANISM_PARTIAL
        else LeakLevel.PARTIAL
        if share < MECHANISM_FULL
        else LeakLevel.FULL
    )
    found = ", ".join(sorted(shared)) or "nothing specific"
    return MechanismOverlap(
        overlap=level, rationale=f"the guess has {share:.2f} of the solution-only words: {found}"
    )


def _role(item: Mapping[str, Any], tier: Tier) -> Role | None:
    if tier is Tier.T0:
        return None
    title = str(item.get("title") or "").lower()
    intents = set(item.get("intents") or [])
    contexts = " ".join(item.get("contexts") or []).lower()
    if re.search(r"\b(dataset|benchmark|corpus|challenge)\b", title):
        return Role.DATASET_OR_BENCHMARK
    if "result" in intents:
        return Role.BASELINE
    if "methodology" in intents:
        return Role.METHOD_FOUNDATION if tier is Tier.T3 else Role.COMPONENT
    if re.search(r"\b(problem|task|challenge)\b", contexts):
        return Role.PROBLEM
    return Role.BACKGROUND


def grade_tier(mentions: int, intents: Sequence[str], influential: bool) -> Tier:
    """The tier the citation signals give (thresholds in the module docstring)."""
    methodology, result = "methodology" in intents, "result" in intents
    if influential and (methodology or mentions >= T3_MENTIONS):
        return Tier.T3
    if methodology or influential or (result and mentions >= T2_RESULT_MENTIONS):
        return Tier.T2
    if mentions >= T1_MENTIONS:
        return Tier.T1
    return Tier.T0


def grade(context: Mapping[str, Any]) -> GradeSheet:
    """Each reference of the part, by its index, graded from its citation signals."""
    grades = []
    for item in context.get("references") or []:
        contexts = item.get("contexts") or []
        mentions = int(item.get("mentions", len(contexts)))
        intents = [str(i) for i in item.get("intents") or []]
        influential = bool(item.get("influential"))
        tier = grade_tier(mentions, intents, influential)
        signals = [f"{mentions} citation context(s)"]
        if intents:
            signals.append("intents " + "/".join(intents))
        if influential:
            signals.append("marked influential")
        verdict = "not an antecedent" if tier is Tier.T0 else f"tier {int(tier)}"
        grades.append(
            AntecedentGrade(
                index=int(item["index"]),
                tier=tier,
                role=_role(item, tier),
                rationale=f"Graded {verdict} from {', '.join(signals)}.",
            )
        )
    return GradeSheet(grades=tuple(grades))
