"""Pure: the leakage audit's verdicts, five per brief, each a recorded finding. The calls they
judge (the model's guesses, the searches) are made by ``audit_checks``.

- lexical: a redaction term (title 4-gram, coined name or acronym, antecedent title; see
  ``briefs``), matched as ``briefs.mentions`` matches it, or a number from the abstract's result
  sentences appears in the brief;
- identity: the LLM names the paper from the brief; a guess within ``IDENTITY_THRESHOLD``
  (rapidfuzz token_sort_ratio) of the target's title is a leak;
- retrieval: the brief, searched with bm25 over the warehouse's corpus, ranks the target in the
  top k;
- mechanism, blind: first the LLM guesses the solution's mechanism from the brief alone (the
  ``audit_mechanism_guess`` prompt never sees the abstract); then a second call compares that
  guess with the abstract and grades the overlap none/partial/full (``audit_mechanism``). "full"
  is a leak, "partial" passes and is recorded, as the paper reports it;
- search (identity by search): the brief, searched with OpenAlex's semantic search among the
  works published in the window of first public dates its published cutoff allows, ranks the
  target in the top k. A model cannot name a target newer than its training; a search engine
  over the real corpus can find it, at the real corpus's density.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from inspire_build import boundary
from inspire_build.briefs import mentioned
from inspire_build.lineage import normalise_title
from inspire_build.models import (
    AuditCheck,
    AuditFinding,
    LeakLevel,
    MechanismOverlap,
)
from inspire_build.text import split_abstract

IDENTITY_THRESHOLD = 85.0
_NUMBER = re.compile(r"\d+(?:\.\d+)?%?")


def result_numbers(abstract: str) -> list[str]:
    """Numbers in the abstract's solution and result sentences (e.g. "92.3", "15%")."""
    _, solution = split_abstract(abstract)
    return sorted({n for s in solution for n in _NUMBER.findall(s) if len(n.rstrip("%")) >= 2})


# A paper identifier in any scheme: no brief needs one, and one names a paper outright (a
# curator's rewrite quoting an antecedent's DOI would publish the gold).
PAPER_ID = re.compile(
    r"\b10\.\d{4,9}/\S+"  # a DOI
    r"|(?<![\w.])\d{4}\.\d{4,5}(?:v\d+)?(?![\w.])"  # a new-style arXiv ID
    r"|\b[a-z-]+(?:\.[A-Z]{2})?/\d{7}\b"  # an old-style arXiv ID (cs/0112017)
    r"|\b[Ww]\d{7,}\b"  # an OpenAlex work
    r"|\bcorpus\s*id\s*:?\s*\d+",  # a Semantic Scholar CorpusId
    re.IGNORECASE,
)


def lexical(
    brief_id: str, brief: str, terms: Sequence[str], numbers: Sequence[str]
) -> AuditFinding:
    hits = mentioned(brief, terms)
    hits += [n for n in numbers if re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", brief)]
    hits += [found.group(0).rstrip(".,;:)") for found in PAPER_ID.finditer(brief)]
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.LEXICAL,
        passed=not hits,
        level=LeakLevel.FULL if hits else LeakLevel.NONE,
        detail=("contains: " + "; ".join(sorted(set(hits))))
        if hits
        else "no redaction term or result number",
    )


def identity_finding(brief_id: str, guess: str, title: str) -> AuditFinding:
    """A guess at the title within ``IDENTITY_THRESHOLD`` of the real one is a leak."""
    score = fuzz.token_sort_ratio(normalise_title(guess), normalise_title(title))
    leaked = score >= IDENTITY_THRESHOLD
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.IDENTITY,
        passed=not leaked,
        level=LeakLevel.FULL if leaked else LeakLevel.NONE,
        detail=f"guess {guess!r} scores {score:.0f} against the title",
    )


def retrieval_verdict(
    ranked: Sequence[tuple[str, float]], target_id: str, k: int, margin: float
) -> tuple[bool, str]:
    """(leaked, detail) from the top ``k + 1`` results. The target in the top ``k`` leaks when
    its score stands ``margin`` above the first paper outside the top k: a brief that singles
    it out. Within that margin it is one of many papers the brief fits about as well (a field
    of equally matching abstracts, ordered by their lengths), and it passes."""
    ids = [paper_id for paper_id, _ in ranked[:k]]
    if target_id not in ids:
        return False, f"target not in the top {k}"
    score = ranked[ids.index(target_id)][1]
    rank = boundary.rank_of(target_id, dict(ranked))  # a tie is no paper above it
    outside = ranked[k][1] if len(ranked) > k else 0.0
    above = score / outside - 1 if outside > 0 else float("inf")
    if above > margin:
        return True, f"target ranks {rank} of the top {k}, {above:.0%} above the next paper"
    return False, (
        f"target ranks {rank} of the top {k}, but only {above:.0%} above the next paper "
        f"(within {margin:.0%}: the brief fits many papers as well)"
    )


def retrieval_finding(
    brief_id: str, ranked: Sequence[tuple[str, float]], target_id: str, k: int, margin: float
) -> AuditFinding:
    leaked, detail = retrieval_verdict(ranked, target_id, k, margin)
    return found_or_not(brief_id, AuditCheck.RETRIEVAL, leaked, detail)


def found_or_not(brief_id: str, check: AuditCheck, leaked: bool, detail: str) -> AuditFinding:
    """The finding of a check that either finds the target (a full leak) or does not."""
    return AuditFinding(
        brief_id=brief_id,
        check=check,
        passed=not leaked,
        level=LeakLevel.FULL if leaked else LeakLevel.NONE,
        detail=detail,
    )


def window_finding(brief_id: str, rank: int | None, top: int, held: int) -> AuditFinding:
    """The retrieval check scoped to the window (``audit_retrieval_scope: window``): the target
    ranked within the ``top`` by bm25 of the brief among the ``held`` candidates its published
    cutoff's window holds is a leak, as the audit's bm25 attacker would find it."""
    leaked = rank is not None and rank <= top
    where = f"among the {held} candidates its cutoff's window holds (the top {top} fails)"
    detail = f"target ranks {rank} {where}" if rank else f"target not ranked {where}"
    return found_or_not(brief_id, AuditCheck.RETRIEVAL, leaked, detail)


def mechanism_finding(brief_id: str, guess: str, graded: MechanismOverlap) -> AuditFinding:
    """Only a full overlap of the blind guess with the abstract is a leak; partial passes."""
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.MECHANISM,
        passed=graded.overlap is not LeakLevel.FULL,
        level=graded.overlap,
        detail=f"{graded.overlap.value}: the guess {guess!r} against the abstract: "
        f"{graded.rationale}",
    )


def search_rank(results: Sequence[set[str]], target: set[str]) -> int | None:
    """The 1-based rank of the first result whose IDs (``scheme:value`` spellings) include one
    of the target's, or None when none does."""
    for rank, spellings in enumerate(results, start=1):
        if spellings & target:
            return rank
    return None


def search_top(k: int, share: float, matched: int | None) -> int:
    """The ranks that fail: the top ``k``, but at most ``share`` of the ``matched`` works
    ranked (and at least the first). A uniform guess lands in the top ``t`` of ``n`` works
    with chance t/n, so in a sparse corpus a top 10 says little; in OpenAlex's, k governs."""
    if matched is None:
        return k
    return min(k, max(1, math.floor(share * matched)))


def search_finding(
    brief_id: str,
    rank: int | None,
    top: int,
    window: tuple[dt.date, dt.date],
    matched: int | None,
) -> AuditFinding:
    """The target ranked within the ``top`` (:func:`search_top`) of the brief's search is a
    leak. The detail records the rank (or its absence from the results shown), the window of
    first public dates, and how many works the search ranked (those dated from the window's
    first day on), when the source says."""
    first, last = window
    held = f"{matched:,} works" if matched is not None else "the works"
    where = f"among {held} dated from {first} on (first public {first} to {last})"
    leaked = rank is not None and rank <= top
    if rank is None:
        detail = f"target not in the results shown {where}"
    else:
        detail = f"target ranks {rank} (the top {top} fails) {where}"
    return found_or_not(brief_id, AuditCheck.SEARCH, leaked, detail)


_RANKED = re.compile(r"^target (?:ranks (?P<rank>\d+)|not in the results shown)")
_MATCHED = re.compile(r" among (?P<matched>[\d,]+) works ")


def search_rank_of(detail: str) -> tuple[int | None, int | None] | None:
    """(rank, works ranked) read back from a :func:`search_finding` detail; None for a search
    that was not run (its rank is no figure)."""
    ranked = _RANKED.match(detail)
    if ranked is None:
        return None
    matched = _MATCHED.search(detail)
    rank = ranked.group("rank")
    return (
        int(rank) if rank else None,
        int(matched.group("matched").replace(",", "")) if matched else None,
    )


def search_not_run(brief_id: str, window: tuple[dt.date, dt.date], why: str) -> AuditFinding:
    """A search that could not be made: not a pass, since nothing shows the brief does not
    identify its target (the audit cannot say the boundary holds)."""
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.SEARCH,
        passed=False,
        level=LeakLevel.NONE,
        detail=f"not run: the search for works first public from {window[0]} failed: {why}",
    )
