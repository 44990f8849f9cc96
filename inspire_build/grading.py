"""The grading step: the grader decides which eligible references of a target are antecedents.

Each eligible reference gets tier 3, 2, 1 or 0 (cited, but not an antecedent), a role when its
tier is above 0, and a rationale at every tier (``prompts/grade.md`` holds the
rubric).

Long bibliographies are graded in **parts**: consecutive references, as many as fit one prompt
of at most ``Settings.grade_part_tokens`` tokens by :func:`estimate_tokens`, the rubric and the
target's title and abstract repeated in each part. In a part, references are addressed by their
index (1..n). The answer's schema carries no enum of IDs and no count (providers cap enum sizes,
and some reject ``minItems``/``maxItems`` in strict mode), so :func:`check_sheet` refuses a
missing, repeated or invented index, a tier above 0 without a role, or an empty rationale; that
makes the LLM client repair the call once, and a part still wrong fails the target's grading.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspire_build.llm import LLM, Deferred
from inspire_build.models import GradeSheet, Role, Tier
from inspire_build.templates import Prompt

TOKENS_PER_WORD = 1.3  # as the sandbox's OpenAI endpoint counts
CHARS_PER_TOKEN = 4
_WORD = re.compile(r"\w+")
_PLACEHOLDER_INDEX = 9999  # sizes a reference at an index wider than any part's
_MIN_ABSTRACT_WORDS = 20  # a trimmed reference keeps at least this much of its abstract
# The step of a deciding reading's calls (LLM.complete's ``step``): its urgency for a slot is
# its own, after every first reading's, since nothing waits on it but the target's end.
DECIDING = "grade_deciding"


@dataclasses.dataclass(frozen=True)
class Graded:
    """One reference's grade: ``role`` is None exactly at tier 0."""

    tier: Tier
    role: Role | None
    rationale: str

    @property
    def is_antecedent(self) -> bool:
        return self.tier is not Tier.T0


def estimate_tokens(text: str) -> int:
    """A conservative token count: the larger of 1.3 per word and 4 characters per token."""
    return _tokens(len(_WORD.findall(text)), len(text))


def _tokens(words: int, chars: int) -> int:
    """:func:`estimate_tokens` of a text of ``words`` words and ``chars`` characters."""
    return max(math.ceil(round(words * TOKENS_PER_WORD, 6)), math.ceil(chars / CHARS_PER_TOKEN))


def shown(reference: Mapping[str, Any], index: int) -> dict[str, Any]:
    """What the prompt shows of a reference: never its ID, which the answer cannot echo."""
    contexts = [str(c) for c in reference.get("contexts") or []]
    return {
        "index": index,
        "title": str(reference.get("title") or ""),
        "abstract": str(reference.get("abstract") or ""),
        "contexts": contexts,
        "intents": [str(i) for i in reference.get("intents") or []],
        "influential": bool(reference.get("influential")),
        "mentions": int(reference.get("mentions", len(contexts))),
    }


def withheld(reference: Mapping[str, Any]) -> dict[str, Any]:
    """A reference as the grade prompt shows it under ``grade_evidence = "none"``: its ID (which
    the prompt never shows) and nothing else, so the grader sees an index and must guess."""
    return {"id": reference["id"], "title": "", "abstract": "", "contexts": [], "intents": []}


def part_context(
    title: str, abstract: str, references: Sequence[Mapping[str, Any]], part: int, parts: int
) -> dict[str, Any]:
    """The ``grade`` prompt's context for one part: references indexed 1..n."""
    return {
        "title": title,
        "abstract": abstract,
        "part": part,
        "parts": parts,
        "references": [shown(r, i) for i, r in enumerate(references, 1)],
    }


def _counted(reference: Mapping[str, Any]) -> dict[str, Any]:
    """The reference with ``mentions``, the full count of its contexts (trimming cuts them)."""
    return {**reference, "mentions": len(reference.get("contexts") or [])}


def _trimmed(
    reference: Mapping[str, Any], size: Callable[[Mapping[str, Any]], int], budget: int
) -> tuple[dict[str, Any], int]:
    """A reference and its ``size`` in tokens; one too long for a part of its own has its
    contexts, then its abstract, halved until it fits (``mentions`` keeps the full count of its
    contexts)."""
    item = _counted(reference)
    used = size(item)
    while used > budget:
        contexts, words = list(item.get("contexts") or []), str(item.get("abstract") or "").split()
        if len(contexts) > 1:
            item["contexts"] = contexts[: len(contexts) // 2]
        elif len(words) > _MIN_ABSTRACT_WORDS:
            item["abstract"] = " ".join(words[: len(words) // 2]) + " ..."
        else:
            break  # nothing left to cut: the part is over budget, and still graded
        used = size(item)
    return item, used


# Where a reference's block starts in the grade prompt: paper text is autoescaped, so only the
# template itself can write this tag (``_sizes_alone`` checks that it did, once per block).
_BLOCK = f'<reference index="{_PLACEHOLDER_INDEX}">'


def _sizes_alone(
    prompt: Prompt, title: str, abstract: str, items: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Each item's prompt tokens with it as the part's only reference, at the placeholder index:
    :func:`estimate_tokens` of exactly the text its own rendering would give, cut from one
    rendering of them all (a reference's block depends on it alone) rather than one rendering
    each: that was most of a target's grading CPU. A prompt whose rendering cannot be cut so
    (a block that is not found once per item) is rendered item by item."""

    def rendered(shown_items: Sequence[Mapping[str, Any]]) -> str:
        context = part_context(title, abstract, [], _PLACEHOLDER_INDEX, _PLACEHOLDER_INDEX)
        context["references"] = [shown(r, _PLACEHOLDER_INDEX) for r in shown_items]
        return prompt.render(context)

    if not items:
        return []
    first = rendered(items[:1])
    if len(items) == 1:
        return [estimate_tokens(first)]
    whole = rendered(items)
    starts = [m.start() for m in re.finditer(re.escape(_BLOCK), whole)]
    head, _, block = first.partition(_BLOCK)
    ends = [*starts[1:], len(whole)]
    blocks = [whole[start:end].rstrip() for start, end in zip(starts, ends, strict=False)]
    cut = (
        len(starts) == len(items)
        and first.count(_BLOCK) == 1
        and _BLOCK + block == blocks[0]  # what follows the last block is blank
        and not _WORD.match(head[-1:])  # so the words of head and block add up
    )
    if not cut:
        return [estimate_tokens(rendered([item])) for item in items]
    words = len(_WORD.findall(head))
    return [_tokens(words + len(_WORD.findall(b)), len(head) + len(b)) for b in blocks]


def plan_parts(
    prompt: Prompt,
    title: str,
    abstract: str,
    references: Sequence[Mapping[str, Any]],
    budget: int,
    sized: dict[str, tuple[dict[str, Any], int]] | None = None,
) -> list[list[dict[str, Any]]]:
    """Consecutive references in parts whose rendered prompt fits ``budget`` tokens.

    Each reference is sized once (its prompt alone, less the empty prompt); parts are packed
    greedily, then each is rendered and halved again should the sum have underestimated it. A
    reference too long even alone is trimmed (:func:`_trimmed`) and graded in a part of its own.
    ``sized`` keeps each reference's trimmed form and cost by ID for the target's next reading:
    a reading's order changes neither, since a reference is sized at a placeholder index.
    """

    def tokens(items: Sequence[Mapping[str, Any]], index: int = 1) -> int:
        context = part_context(title, abstract, [], _PLACEHOLDER_INDEX, _PLACEHOLDER_INDEX)
        context["references"] = [shown(r, index + i) for i, r in enumerate(items)]
        return estimate_tokens(prompt.render(context))

    base = tokens([])
    known = {} if sized is None else sized
    fresh: dict[str, Mapping[str, Any]] = {}
    for reference in references:
        if (key := str(reference["id"])) not in known:
            fresh.setdefault(key, reference)
    items = [_counted(r) for r in fresh.values()]
    sizes = _sizes_alone(prompt, title, abstract, items)
    for item, size in zip(items, sizes, strict=True):
        if size > budget:  # trimmed, rendering each cut (rare)
            item, size = _trimmed(item, lambda i: tokens([i], _PLACEHOLDER_INDEX), budget)
        known[str(item["id"])] = (item, size - base)
    packed: list[list[dict[str, Any]]] = []
    used = budget  # forces a first part
    for item, cost in (known[str(r["id"])] for r in references):
        if used + cost > budget:
            packed.append([])
            used = base
        packed[-1].append(item)
        used += cost
    parts: list[list[dict[str, Any]]] = []
    while packed:
        part = packed.pop(0)
        if len(part) > 1 and tokens(part) > budget:
            half = len(part) // 2
            packed[:0] = [part[:half], part[half:]]
        else:
            parts.append(part)
    return parts


def check_sheet(sheet: GradeSheet, count: int) -> None:
    """Indexes 1..count each graded once, a role exactly above tier 0 (a role given at tier 0
    is ignored), and a rationale at every tier; raises ValueError naming what is wrong."""
    given = Counter(g.index for g in sheet.grades)
    wanted = set(range(1, count + 1))
    missing = sorted(wanted - set(given))
    invented = sorted(set(given) - wanted)
    repeated = sorted(i for i, n in given.items() if n > 1)
    problems = []
    if missing or invented or repeated:
        problems.append(
            f"grade every reference exactly once by its index 1-{count}: missing {missing}, "
            f"invented {invented}, repeated {repeated}"
        )
    roleless = sorted(g.index for g in sheet.grades if g.tier is not Tier.T0 and g.role is None)
    if roleless:
        problems.append(f"a tier above 0 needs a role: indexes {roleless}")
    silent = sorted(g.index for g in sheet.grades if not g.rationale.strip())
    if silent:
        problems.append(f"every grade needs a rationale: indexes {silent}")
    if problems:
        raise ValueError("; ".join(problems))


def reading_order(references: Sequence[Mapping[str, Any]], reading: int) -> list[Mapping[str, Any]]:
    """The references in the order of one reading: as given for reading 0, else sorted by a hash
    of the reading and each id, so each reading meets them in other parts and positions (turned
    by one should the hash give the order back)."""
    if reading == 0:
        return list(references)

    def key(reference: Mapping[str, Any]) -> str:
        return hashlib.sha256(f"{reading}:{reference['id']}".encode()).hexdigest()

    order = sorted(references, key=key)
    if len(order) > 1 and [r["id"] for r in order] == [r["id"] for r in references]:
        order = order[1:] + order[:1]
    return order


def majority(votes: Sequence[Graded]) -> Tier | None:
    """The tier more than half the readings gave, if any."""
    if not votes:
        return None
    tier, count = Counter(v.tier for v in votes).most_common(1)[0]
    return tier if count * 2 > len(votes) else None


def decide(votes: Sequence[Graded]) -> Graded:
    """The readings' verdict: the majority tier, else the lower median tier (so a tie between
    "antecedent" and "not" is not one); role and rationale from the first reading of that tier."""
    if not votes:
        raise ValueError("no reading to decide from")
    tier = majority(votes)
    if tier is None:
        tiers = sorted(v.tier for v in votes)
        tier = tiers[(len(tiers) - 1) // 2]
    return next(v for v in votes if v.tier is tier)


def _read(
    llm: LLM,
    title: str,
    abstract: str,
    readings: Sequence[Sequence[Mapping[str, Any]]],
    budget: int,
    votes: dict[str, list[Graded]],
    sized: dict[str, tuple[dict[str, Any], int]],
    step: str = "grade",
) -> Deferred | None:
    """Readings of references (each in an order of its own), in parts, every part asked at once
    (:meth:`LLM.each`); then each grade is appended to ``votes`` reading by reading, part by
    part, as one call after another would. In batch mode every part's request is sent before
    the last :class:`Deferred` is returned. ``sized``: see :func:`plan_parts`."""
    planned: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    for references in readings:
        parts = plan_parts(llm.prompts["grade"], title, abstract, references, budget, sized)
        planned += [
            (part, part_context(title, abstract, part, number, len(parts)))
            for number, part in enumerate(parts, 1)
        ]
    sheets = llm.each([functools.partial(_ask, llm, ctx, len(part), step) for part, ctx in planned])
    deferred: Deferred | None = None
    for (part, _), sheet in zip(planned, sheets, strict=True):
        if isinstance(sheet, Deferred):
            deferred = sheet
            continue
        by_index = {g.index: g for g in sheet.grades}
        for index, reference in enumerate(part, 1):
            grade = by_index[index]
            role = None if grade.tier is Tier.T0 else grade.role
            votes[str(reference["id"])].append(
                Graded(Tier(grade.tier), role, grade.rationale.strip())
            )
    return deferred


def _ask(llm: LLM, context: dict[str, Any], count: int, step: str) -> GradeSheet | Deferred:
    """One part's grade sheet, or in batch mode the :class:`Deferred` that collected it."""
    try:
        check = functools.partial(check_sheet, count=count)
        return llm.complete("grade", context, GradeSheet, validate=check, step=step)
    except Deferred as waiting:
        return waiting


def grade_references(
    llm: LLM,
    title: str,
    abstract: str,
    references: Sequence[Mapping[str, Any]],
    budget: int,
    readings: int = 1,
) -> dict[str, Graded]:
    """Reference id -> its grade, over every part. ``references`` carry id, title, abstract,
    contexts, intents and influential; each id once.

    The references are read ``readings`` times, each reading in an order of its own
    (:func:`reading_order`); where no tier has a majority, one more reading of just those
    references votes, and :func:`decide` gives the verdict. A grader's slip on one reading (an
    over-included passing mention, a tier one off) is then outvoted by the others.

    In batch mode every request of a round is collected before :class:`Deferred` is raised, so
    the readings wait for one batch round, and a deciding reading for one more.
    """
    ids = [str(r["id"]) for r in references]
    if len(set(ids)) != len(ids):
        raise ValueError(
            f"references repeat an id: {sorted(i for i, n in Counter(ids).items() if n > 1)}"
        )
    if readings < 1:
        raise ValueError(f"readings must be at least 1, got {readings}")
    if not ids:
        return {}
    votes: dict[str, list[Graded]] = {i: [] for i in ids}
    orders = [reading_order(references, reading) for reading in range(readings)]
    sized: dict[str, tuple[dict[str, Any], int]] = {}  # each reference sized once, not a reading
    deferred = _read(llm, title, abstract, orders, budget, votes, sized)
    if deferred is not None:
        raise deferred
    split = [r for r in references if majority(votes[str(r["id"])]) is None]
    if split:
        order = reading_order(split, readings)
        deferred = _read(llm, title, abstract, [order], budget, votes, sized, DECIDING)
        if deferred is not None:
            raise deferred
    return {i: decide(v) for i, v in votes.items()}
