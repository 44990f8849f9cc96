"""The audit's calls: the model's guesses (identity, blind mechanism), the bm25 search of the
brief and its OpenAlex search (identity by search), each judged by the pure verdicts in
``audit``; :func:`checks` is the one list of the checks, for a new brief, a version's re-audit
and any text (``gold.audit_text``) alike."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Sequence

import duckdb

from inspire_build import audit, boundary, boundary_store
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.http import HttpClient, SourceError
from inspire_build.llm import LLM
from inspire_build.models import AuditFinding, IdentityGuess, MechanismGuess, MechanismOverlap
from inspire_build.sources import openalex
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import search as search_table


@dataclasses.dataclass(frozen=True)
class Search:
    """What the search identity check of one target's briefs asks with: the sources client
    (its rate limits and raw store, as for every request) and the window of first public dates
    the target's published cutoff allows an attacker to narrow to."""

    client: HttpClient
    window: tuple[dt.date, dt.date]


def search_for(
    client: HttpClient,
    con: duckdb.DuckDBPyConnection,
    target_id: str,
    jitter_days: int,
    published: dt.date | None = None,
) -> Search:
    """The :class:`Search` of ``target_id``'s briefs: its window from ``published`` (a
    version's cutoff), else from the cutoff its lineage set, widened by ``jitter_days``."""
    cutoff = published or lineage_table.published_cutoff(con, target_id)
    if cutoff is None:
        raise InputError(f"{target_id} has no published cutoff: resolve its lineage first")
    return Search(client, boundary.consistent_dates(cutoff, jitter_days))


def search(
    searching: Search,
    con: duckdb.DuckDBPyConnection,
    brief_id: str,
    brief: str,
    target_id: str,
    k: int,
    share: float = 1.0,
) -> AuditFinding:
    """One OpenAlex search of the brief (a page of ``k + 1``) among the works OpenAlex dates
    from the window's first day on: the target's rank, found by any of its IDs the crosswalk
    knows. Only that bound is safe: a work's first public date is the earliest of its dates,
    OpenAlex's among them, so a work OpenAlex dates before the window cannot be the target,
    while one it dates after the window (a journal version) may have been a preprint in it."""
    try:
        found, matched = openalex.search_similar(
            searching.client, brief, since=searching.window[0], per_page=k + 1
        )
    except SourceError as error:  # unreachable, or not in the store when replaying
        return audit.search_not_run(brief_id, searching.window, str(error))
    target = lineage_table.id_spellings(con, target_id)
    rank = audit.search_rank([{str(i) for i in paper.ids.typed()} for paper in found], target)
    top = audit.search_top(k, share, matched)
    return audit.search_finding(brief_id, rank, top, searching.window, matched)


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
    ranked = search_table.search(con, brief, k + 1)
    return audit.retrieval_finding(brief_id, ranked, target_id, k, margin)


def retrieval_in_window(
    con: duckdb.DuckDBPyConnection, settings: Settings, brief_id: str, brief: str, target_id: str
) -> AuditFinding:
    """The retrieval check as the audit's bm25 attacker plays it: the target's rank among the
    papers of its published cutoff's window."""
    rank, held = boundary_store.window_rank(con, settings, target_id, brief)
    top = audit.search_top(settings.audit_retrieval_k, settings.audit_search_share, held)
    return audit.window_finding(brief_id, rank, top, held)


def mechanism(llm: LLM, brief_id: str, brief: str, abstract: str) -> AuditFinding:
    """The blind mechanism audit: a guess from the brief alone, then the guess against the
    abstract. The finding's detail records both."""
    guess = llm.complete("audit_mechanism_guess", {"brief": brief}, MechanismGuess)
    graded = llm.complete(
        "audit_mechanism", {"guess": guess.mechanism, "abstract": abstract}, MechanismOverlap
    )
    return audit.mechanism_finding(brief_id, guess.mechanism, graded)


def checks(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    brief_id: str,
    brief: str,
    target: tuple[str, str, str],
    terms: Sequence[str],
    before_retrieval: Callable[[bool], None] = lambda _: None,
    searching: Search | None = None,
) -> list[AuditFinding]:
    """Lexical, identity, retrieval, mechanism and, with ``searching``, search, in that order,
    for a brief of ``target`` (its ID, title and abstract) under its redaction ``terms``. The
    identity and mechanism calls are independent, so they are asked at once
    (:meth:`LLM.each`). Then ``before_retrieval(whether the others passed)`` runs before the
    bm25 search (it may wait for lineage to write every paper). Without ``searching`` (a
    caller with no sources client) the search check is not run, and no finding says it
    passed."""
    target_id, title, abstract = target
    asked = llm.each(
        [
            functools.partial(identity, llm, brief_id, brief, title),
            functools.partial(mechanism, llm, brief_id, brief, abstract),
        ]
    )
    lexical = audit.lexical(brief_id, brief, terms, audit.result_numbers(abstract))
    searched = (
        [
            search(
                searching,
                con,
                brief_id,
                brief,
                target_id,
                settings.audit_search_k,
                settings.audit_search_share,
            )
        ]
        if searching is not None
        else []
    )
    others = [lexical, *asked, *searched]
    before_retrieval(all(finding.passed for finding in others))
    return [
        lexical,
        asked[0],
        retrieval_in_window(con, settings, brief_id, brief, target_id)
        if settings.audit_retrieval_scope == "window"
        else retrieval(
            con,
            brief_id,
            brief,
            target_id,
            settings.audit_retrieval_k,
            settings.audit_retrieval_margin,
        ),
        asked[1],
        *searched,
    ]
