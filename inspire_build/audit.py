"""The leakage audit: four checks per brief, each a recorded finding.

- lexical: a redaction term (title 4-gram, coined name, antecedent title) or a number from the
  abstract's result sentences appears in the brief;
- identity: the LLM names the paper from the brief; a guess within ``IDENTITY_THRESHOLD``
  (rapidfuzz token_sort_ratio) of the target's title is a leak;
- retrieval: the brief, searched with bm25 over the warehouse's corpus, ranks the target in the
  top k;
- mechanism: the LLM guesses the solution and grades the overlap none/partial/full; "full" is a
  leak, "partial" passes and is recorded, as the paper reports it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import duckdb
from rapidfuzz import fuzz

from inspire_build import warehouse
from inspire_build.lineage import normalise_title
from inspire_build.llm import LLM
from inspire_build.llm_rules import split_abstract
from inspire_build.models import AuditCheck, AuditFinding, IdentityGuess, LeakLevel, MechanismGuess

IDENTITY_THRESHOLD = 85.0
_NUMBER = re.compile(r"\d+(?:\.\d+)?%?")


def result_numbers(abstract: str) -> list[str]:
    """Numbers in the abstract's solution and result sentences (e.g. "92.3", "15%")."""
    _, solution = split_abstract(abstract)
    return sorted({n for s in solution for n in _NUMBER.findall(s) if len(n.rstrip("%")) >= 2})


def lexical(
    brief_id: str, brief: str, terms: Sequence[str], numbers: Sequence[str]
) -> AuditFinding:
    text = f" {normalise_title(brief)} "
    hits = [t for t in terms if t and f" {normalise_title(t)} " in text]
    raw = f" {brief} "
    hits += [n for n in numbers if re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", raw)]
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.LEXICAL,
        passed=not hits,
        level=LeakLevel.FULL if hits else LeakLevel.NONE,
        detail=("contains: " + "; ".join(sorted(set(hits))))
        if hits
        else "no redaction term or result number",
    )


def identity(llm: LLM, brief_id: str, brief: str, title: str) -> AuditFinding:
    guess = llm.complete("audit_identity", {"brief": brief}, IdentityGuess)
    score = fuzz.token_sort_ratio(normalise_title(guess.title), normalise_title(title))
    leaked = score >= IDENTITY_THRESHOLD
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.IDENTITY,
        passed=not leaked,
        level=LeakLevel.FULL if leaked else LeakLevel.NONE,
        detail=f"guess {guess.title!r} scores {score:.0f} against the title",
    )


def retrieval(
    con: duckdb.DuckDBPyConnection, brief_id: str, brief: str, target_id: str, k: int
) -> AuditFinding:
    ranked = [paper_id for paper_id, _ in warehouse.search(con, brief, k)]
    rank = ranked.index(target_id) + 1 if target_id in ranked else None
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.RETRIEVAL,
        passed=rank is None,
        level=LeakLevel.FULL if rank else LeakLevel.NONE,
        detail=f"target ranks {rank} of the top {k}" if rank else f"target not in the top {k}",
    )


def mechanism(llm: LLM, brief_id: str, brief: str, abstract: str) -> AuditFinding:
    guess = llm.complete("audit_mechanism", {"brief": brief, "abstract": abstract}, MechanismGuess)
    return AuditFinding(
        brief_id=brief_id,
        check=AuditCheck.MECHANISM,
        passed=guess.overlap is not LeakLevel.FULL,
        level=guess.overlap,
        detail=f"{guess.overlap.value}: {guess.mechanism}",
    )
