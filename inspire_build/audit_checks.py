"""The audit's calls: the model's guesses (identity, blind mechanism) and the bm25 search of the
brief, each judged by the pure verdicts in ``audit``; :func:`four` is the one list of the four
checks, for a new brief and for a version's re-audit alike."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import duckdb

from inspire_build import audit, warehouse
from inspire_build.config import Settings
from inspire_build.llm import LLM
from inspire_build.models import AuditFinding, IdentityGuess, MechanismGuess, MechanismOverlap


def identity(llm: LLM, brief_id: str, brief: str, title: str) -> AuditFinding:
    guess = llm.complete("audit_identity", {"brief": brief}, IdentityGuess)
    return audit.identity_finding(brief_id, guess.title, title)


def retrieval(
    con: duckdb.DuckDBPyConnection,
    brief_id: str,
    brief: str,
    target_id: str,
    k: int,
    margin: float = 0.0,
) -> AuditFinding:
    ranked = warehouse.search(con, brief, k + 1)
    return audit.retrieval_finding(brief_id, ranked, target_id, k, margin)


def mechanism(llm: LLM, brief_id: str, brief: str, abstract: str) -> AuditFinding:
    """The blind mechanism audit: a guess from the brief alone, then the guess against the
    abstract. The finding's detail records both."""
    guess = llm.complete("audit_mechanism_guess", {"brief": brief}, MechanismGuess)
    graded = llm.complete(
        "audit_mechanism", {"guess": guess.mechanism, "abstract": abstract}, MechanismOverlap
    )
    return audit.mechanism_finding(brief_id, guess.mechanism, graded)


def four(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    brief_id: str,
    brief: str,
    target: tuple[str, str, str],
    terms: Sequence[str],
    before_retrieval: Callable[[bool], None] = lambda _: None,
) -> list[AuditFinding]:
    """Lexical, identity, retrieval and mechanism, in that order, for a brief of ``target``
    (its ID, title and abstract) under its redaction ``terms``. The identity and mechanism
    calls are independent, so they are asked at once (:meth:`LLM.each`). Then
    ``before_retrieval(whether the other three passed)`` runs before the search (it may wait
    for lineage to write every paper)."""
    target_id, title, abstract = target
    asked = llm.each(
        [
            functools.partial(identity, llm, brief_id, brief, title),
            functools.partial(mechanism, llm, brief_id, brief, abstract),
        ]
    )
    lexical = audit.lexical(brief_id, brief, terms, audit.result_numbers(abstract))
    before_retrieval(lexical.passed and all(finding.passed for finding in asked))
    return [
        lexical,
        asked[0],
        retrieval(
            con,
            brief_id,
            brief,
            target_id,
            settings.audit_retrieval_k,
            settings.audit_retrieval_margin,
        ),
        asked[1],
    ]
