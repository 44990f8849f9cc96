"""The emulated grader: a grade sheet read from the grade prompt's own text, nothing else.

A reader takes each ``<reference>`` block of the prompt and decides what the target does with
it from what the block shows, as a model would:

1. the *concept* of its citation contexts ("builds directly on" is a foundation, "compare
   against" a baseline, "see also" a passing mention; :data:`CUES`), the majority over its
   contexts; with no contexts, its intents, influence flag and the overlap of its abstract with
   the target's abstract; with the evidence withheld (no title), nothing: a guess;
2. the *tier* of that concept, looked up in the prompt's own rubric (the ``- N: ...`` lines):
   a rubric that defines no tier for it, or no rubric at all, leaves the tier to a blanket
   instruction ("tier 3") or to tier 1. So a sabotaged rubric changes the grades;
3. *noise*: slips that repeat on every reading of the same reference (seeded by the target's
   and the reference's titles: ``grade_slip`` one tier off, ``grade_demote`` an antecedent read
   as tier 0), and slips of one reading (seeded by the whole prompt: ``grade_shift``,
   ``grade_overinclude``).

The world's truth is never read: :mod:`bench.validity` scores these grades against it, and fits
the best any reader could do from the same evidence (the ceiling).
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from inspire_build.text import content_words

if TYPE_CHECKING:  # the rates live with the model that plants them
    from inspire_build.sandbox.llm_truth import TruthRates

# How a citation's wording reads: (pattern, concept), first match wins.
CUES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), concept)
    for pattern, concept in (
        (r"\bbuilds? (?:directly )?(?:up)?on\b|\bextends?\b|\bbased on\b", "foundation"),
        (r"\badopts?\b|\bmodule from\b|\bborrow", "component"),
        (r"\bcompare[sd]? (?:against|with|to)\b|\boutperform", "baseline"),
        (r"\btrain(?:ed|s)? on\b|\bdata released\b|\bpretrain", "training-data"),
        (r"\bfirst posed\b|\bformulated\b|\bintroduced the problem\b", "problem"),
        (r"\brelated (?:efforts|work)\b|\bprior work\b|\bbackground\b", "background"),
        (r"\bsee also\b|\bcf\.", "mention"),
        (r"\breport (?:numbers|results) on\b|\bevaluate[sd]? on\b", "evaluation"),
        (r"\bunlike\b|\bin contrast\b", "contrast"),
    )
)
# Where the rubric speaks of each concept: the first tier whose text has one of these.
RUBRIC_WORDS = {
    "foundation": ("central idea", "could not exist", "method-foundation"),
    "component": ("component",),
    "baseline": ("baseline",),
    "training-data": ("trains on", "training data", "dataset-or-benchmark"),
    "problem": ("problem was posed", "where the problem", "shapes the problem"),
    "background": ("background", "related efforts"),
    "mention": ("passing mention",),
    "evaluation": ("only for evaluation",),
    "contrast": ("contrast",),
}
ROLES = {
    "foundation": "method-foundation",
    "component": "component",
    "baseline": "baseline",
    "training-data": "dataset-or-benchmark",
    "problem": "problem",
    "background": "background",
}
TOPIC_OVERLAP = 0.3  # the share of the target's problem words a related abstract repeats
_RUBRIC = re.compile(r"^- ([0-3]): (.*?)(?=^- [0-3]:|^\S)", re.MULTILINE | re.DOTALL)
_BLOCK = re.compile(r'<reference index="(\d+)">\n(.*?)</reference>', re.DOTALL)


@dataclasses.dataclass(frozen=True)
class Shown:
    """What one reference block shows; ``title`` empty when the evidence was withheld."""

    index: int
    title: str
    abstract: str
    intents: tuple[str, ...]
    influential: bool
    mentions: int
    contexts: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Read:
    """One reference as read: the concept, then the tier and role given, and the slip."""

    index: int
    title: str
    concept: str
    tier: int | None  # None: dropped from the sheet
    role: str | None
    slip: str | None = None


def _field(block: str, name: str) -> str:
    match = re.search(rf"^{name}: (.*)$", block, re.MULTILINE)
    return html.unescape(match.group(1)).strip() if match else ""


def references(prompt: str) -> list[Shown]:
    """Every reference block of a grade prompt, in order, each index once."""
    found: dict[int, Shown] = {}
    for index, block in _BLOCK.findall(prompt):
        intents = _field(block, "Intents")
        contexts = re.findall(r"^- (.*)$", block.partition("Contexts:")[2], re.MULTILINE)
        mentions = _field(block, "Mentions")
        found.setdefault(
            int(index),
            Shown(
                int(index),
                _field(block, "Title"),
                "" if _field(block, "Abstract") == "(none)" else _field(block, "Abstract"),
                () if intents in ("", "(none)") else tuple(i.strip() for i in intents.split(",")),
                _field(block, "Influential") == "yes",
                int(mentions) if mentions.isdigit() else 0,
                tuple(html.unescape(c) for c in contexts),
            ),
        )
    return list(found.values())


def rubric(prompt: str) -> dict[str, int]:
    """Concept -> the tier the prompt's rubric gives it; concepts it never speaks of left out."""
    head = prompt.split("<target>", 1)[0]
    tiers = [(int(n), " ".join(text.split()).lower()) for n, text in _RUBRIC.findall(head)]
    found: dict[str, int] = {}
    for concept, phrases in RUBRIC_WORDS.items():
        tier = next((n for n, text in tiers if any(p in text for p in phrases)), None)
        if tier is not None:
            found[concept] = tier
    return found


def blanket_tier(prompt: str) -> int:
    """The tier an instruction gives every reference ("give every reference tier 3"), else 1."""
    head = prompt.split("<target>", 1)[0]
    match = re.search(r"\b(?:every|all)\b[^.\n]*?\btier ([0-3])\b", head, re.IGNORECASE)
    return int(match.group(1)) if match else 1


def concept(shown: Shown, target_abstract: str, rng: random.Random) -> str:
    """What the target does with a reference, as its block shows it."""
    if not shown.title:
        return "unknown"
    read = [c for text in shown.contexts for p, c in CUES if p.search(text)]
    if read:
        top = Counter(read).most_common(1)[0][0]
        if top == "problem" and (shown.influential or "methodology" in shown.intents):
            return "foundation"  # it builds on the formulation, not just the question
        return top
    if "methodology" in shown.intents:
        return "foundation" if shown.influential else "component"
    if "result" in shown.intents:
        return rng.choice(("baseline", "evaluation"))
    if "background" in shown.intents:
        return "background"
    target = set(content_words(target_abstract))
    shared = target & set(content_words(shown.abstract))
    related = bool(target) and len(shared) >= TOPIC_OVERLAP * min(len(target), 12)
    return "background" if related else "mention"


def _persistent(seed: int, target_title: str, shown: Shown) -> random.Random:
    """Dice that fall the same on every reading of this reference for this target."""
    key = f"{seed}:{target_title}:{shown.title}:{shown.index if not shown.title else ''}"
    return random.Random(hashlib.sha256(key.encode()).hexdigest())


def _tier(
    shown: Shown,
    read: str,
    tiers: Sequence[int],
    given: Mapping[str, int],
    fallback: int,
    rng: random.Random,
) -> int:
    if read == "unknown":
        return rng.choice(list(tiers))
    tier = given.get(read, fallback)
    return tier if tier in tiers else min(tiers, key=lambda t: abs(t - tier))


def _noisy(
    tier: int, tiers: Sequence[int], rates: TruthRates, steady: random.Random, rng: random.Random
) -> tuple[int, str | None]:
    """The tier after this reference's lasting slips, then this reading's."""
    above = [t for t in tiers if t > 0]
    if tier > 0 and 0 in tiers and steady.random() < rates.grade_demote:
        return 0, "demote"
    if steady.random() < rates.grade_slip:
        near = [t for t in (tier - 1, tier + 1) if t in tiers]
        if near:
            return steady.choice(near), "slip"
    if tier > 0 and rng.random() < rates.grade_shift:
        near = [t for t in (tier - 1, tier + 1) if t in above]
        if near:
            return rng.choice(near), "shift"
    if tier == 0 and rng.random() < rates.grade_overinclude and 1 in tiers:
        return 1, "overinclude"
    return tier, None


@dataclasses.dataclass(frozen=True)
class Schema:
    """The answer schema's choices: tiers, roles (None: any) and whether tier 0 has no role."""

    tiers: list[int]
    roles: list[str] | None
    null_role: bool


def _role(read: str, tier: int, schema: Schema) -> str | None:
    if tier == 0 and schema.null_role:
        return None
    role = ROLES.get(read, "background")
    if schema.roles is None or role in schema.roles:
        return role
    return "background" if "background" in schema.roles else str(schema.roles[0])


def read_sheet(
    prompt: str, schema: Schema, rates: TruthRates, seed: int, rng: random.Random
) -> list[Read]:
    """Each reference of the prompt as read, noise included; one may be dropped."""
    target_title = _target_field(prompt, "Title")
    target_abstract = _target_field(prompt, "Abstract")
    given, fallback = rubric(prompt), blanket_tier(prompt)
    found: list[Read] = []
    for shown in references(prompt):
        steady = _persistent(seed, target_title, shown)
        read = concept(shown, target_abstract, steady)
        tier = _tier(shown, read, schema.tiers, given, fallback, rng)
        tier, slip = _noisy(tier, schema.tiers, rates, steady, rng)
        found.append(Read(shown.index, shown.title, read, tier, _role(read, tier, schema), slip))
    if found and rng.random() < rates.drop_grade:
        gone = rng.randrange(len(found))
        found[gone] = dataclasses.replace(found[gone], tier=None, role=None, slip="drop")
    return found


def _target_field(prompt: str, name: str) -> str:
    block = prompt.partition("<target>")[2].partition("</target>")[0]
    return _field(block, name)


def rationale(item: Read) -> str:
    if item.concept == "unknown":
        return "Graded by its index alone: the prompt shows no evidence for it."
    said = item.concept.replace("-", " ")
    if item.tier == 0:
        return f"Its contexts read as {said}; the target does not build on it."
    return f"Its contexts read as {said}; tier {item.tier}."


def sheet(items: Sequence[Read]) -> dict[str, Any]:
    return {
        "grades": [
            {"index": i.index, "tier": i.tier, "role": i.role, "rationale": rationale(i)}
            for i in items
            if i.tier is not None
        ]
    }
