"""The LLM steps for resolved targets: brief, audit (regenerating on a leak), then grade.

Inputs come from the warehouse (the lineage step's ``papers`` and eligible ``references``);
outputs go to ``briefs``, ``audit_findings``, ``grades`` and the targets' status. Every brief
ends accepted or rejected with a reason, and a target whose briefs all leak is excluded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import duckdb

from inspire_build import audit_checks, boundary_store, warehouse
from inspire_build.batch import run_in_batches
from inspire_build.briefs import MAX_WORDS, MIN_WORDS, own_terms, redactions
from inspire_build.classify import with_problems
from inspire_build.config import LLM_TARGETS_PER_SLOT, Settings
from inspire_build.errors import Cancelled, InputError, LLMError
from inspire_build.grading import DECIDING, Graded, grade_references, withheld
from inspire_build.http import HeldResponses, HttpClient
from inspire_build.llm import LLM, Deferred, InFlight, Later, Pacer, uses_of
from inspire_build.llm_rules import RULES
from inspire_build.models import (
    AuditCheck,
    AuditFinding,
    Brief,
    BriefDraft,
    BriefStatus,
    Grade,
    LeakLevel,
    TargetOutcome,
    TargetStatus,
)
from inspire_build.tables import cutoffs as cutoffs_table
from inspire_build.tables import gold as gold_table
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import llm_ledger, llm_log, versions
from inspire_build.tables import search as search_table
from inspire_build.text import content_words

if TYPE_CHECKING:
    from inspire_build.llm import OpenAIClient

LLM_FAILED = "the LLM failed: "  # a brief's reason when the model refused or answered invalidly

# A target's calls form a chain: brief, then its audit (identity beside the mechanism guess,
# which the mechanism grade follows), a redraft while a brief leaks, then the grading's readings
# and, where they split, a deciding reading. A free LLM slot goes to the call with the most of
# its chain ahead (lowest first), so the last targets are not left with long chains while the
# rest of the slots sit idle: an earlier target's deciding reading waits behind a later one's
# first readings.
URGENCY = {
    "brief": 0,
    "audit_mechanism_guess": 1,
    "audit_identity": 2,
    "audit_mechanism": 2,
    "grade": 3,
    DECIDING: 4,
}


def make_llm(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    client: OpenAIClient | None = None,
    *,
    slots: InFlight | None = None,
    limiter: Pacer | None = None,
) -> LLM:
    """The configured backend, with the rules answers wired in; ``slots`` and ``limiter``
    bound its calls where they are shared beyond this process (Dask workers)."""
    return LLM(
        settings, con, rules=RULES, client=client, urgency=URGENCY, slots=slots, limiter=limiter
    )


@dataclasses.dataclass(frozen=True)
class Inputs:
    target_id: str
    title: str
    abstract: str
    antecedents: list[dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Verdict:
    target_id: str
    status: TargetStatus
    kind: TargetOutcome  # the reason's kind: targets.outcome
    reason: str
    attempts: int = 0
    grades: int = 0


@dataclasses.dataclass(frozen=True)
class Drafts:
    """A target's briefs (one row per attempt) and their findings; ``accepted`` when the last
    passed every check, ``llm_failure`` the reason when the model failed for good."""

    rows: list[Brief]
    findings: list[AuditFinding]
    accepted: bool
    llm_failure: str | None = None


def load_inputs(con: duckdb.DuckDBPyConnection, target_id: str) -> Inputs:
    title, abstract = lineage_table.title_and_abstract(con, target_id)
    references = lineage_table.eligible_references(con, target_id)
    antecedents: dict[str, dict[str, Any]] = {}
    for paper_id, ref_title, ref_abstract, contexts, intents, influential in references:
        antecedents.setdefault(
            str(paper_id),
            {
                "id": str(paper_id),
                "title": ref_title or "",
                "abstract": ref_abstract or "",
                "contexts": list(contexts or []),
                "intents": list(intents or []),
                "influential": bool(influential),
            },
        )
    return Inputs(target_id, title, abstract, list(antecedents.values()))


def _antecedent_texts(inputs: Inputs) -> tuple[list[str], list[str]]:
    return (
        [str(a["title"]) for a in inputs.antecedents],
        [str(a["abstract"]) for a in inputs.antecedents],
    )


def writer_terms(inputs: Inputs) -> list[str]:
    """The terms the brief prompt lists: the target's own, never its references' titles."""
    titles, abstracts = _antecedent_texts(inputs)
    return own_terms(inputs.title, inputs.abstract, [*titles, *abstracts])


def redaction_terms(inputs: Inputs) -> list[str]:
    """The target's redaction list, less what its antecedents' titles and abstracts share."""
    titles, abstracts = _antecedent_texts(inputs)
    return redactions(inputs.title, inputs.abstract, titles, abstracts)


def brief_and_audit(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    inputs: Inputs,
    settings: Settings,
    corpus_ready: Callable[[], None] = lambda: None,
    likely: Callable[[], None] = lambda: None,
    client: HttpClient | None = None,
) -> Drafts:
    """Draft, audit, and redraft with the findings as feedback, up to ``brief_attempts``; each
    retrieval check first waits for ``corpus_ready``. ``likely`` is called when a brief has
    passed every check but retrieval (the target will most likely be graded). With ``client``,
    each brief is also searched on OpenAlex (the search identity check)."""
    terms, shown = redaction_terms(inputs), writer_terms(inputs)
    target = (inputs.target_id, inputs.title, inputs.abstract)
    # a cutoff an earlier version published was kept: it lies within the jitter it was drawn under
    kept = cutoffs_table.jitter_days(con, inputs.target_id) or 0
    jitter = max(settings.cutoff_jitter_days, kept)
    searching = (
        audit_checks.search_for(client, con, inputs.target_id, jitter)
        if client is not None
        else None
    )
    rows: list[Brief] = []
    findings: list[AuditFinding] = []
    feedback: list[str] = []
    now = dt.datetime.now(dt.UTC)
    for attempt in range(1, settings.brief_attempts + 1):
        try:
            text = write_brief(llm, inputs.title, inputs.abstract, shown, feedback).brief
            brief_id = _brief_id(inputs.target_id, attempt, text)
            fits = MIN_WORDS <= len(text.split()) <= MAX_WORDS

            def before_retrieval(passed: bool, fits: bool = fits) -> None:
                if passed and fits:
                    likely()
                corpus_ready()

            checks = audit_checks.checks(
                llm, con, settings, brief_id, text, target, terms, before_retrieval, searching
            )
        except Deferred:
            raise
        except LLMError as error:  # refused or invalid even after the repair: recorded, final
            why = f"{LLM_FAILED}{error}"
            failed_id = _brief_id(inputs.target_id, attempt, f"failed: {error}")
            rejected = BriefStatus.REJECTED
            rows.append(_brief(llm, inputs.target_id, attempt, "", now, failed_id, rejected, why))
            return Drafts(rows, findings, accepted=False, llm_failure=why)
        words = len(text.split())
        failed = [f"{f.check.value}: {f.detail}" for f in checks if not f.passed]
        if not MIN_WORDS <= words <= MAX_WORDS:
            failed.append(f"length: {words} words, outside {MIN_WORDS}-{MAX_WORDS}")
        status = BriefStatus.REJECTED if failed else BriefStatus.ACCEPTED
        reason = "; ".join(failed) if failed else f"passed all {len(checks)} leakage checks"
        rows.append(_brief(llm, inputs.target_id, attempt, text, now, brief_id, status, reason))
        findings += checks
        if not failed:
            return Drafts(rows, findings, accepted=True)
        if attempt < settings.brief_attempts:  # the last attempt's feedback goes nowhere
            # every attempt's findings, so a redraft does not bring back what an earlier one left
            found = _feedback(con, settings, failed, text, inputs)
            feedback = list(dict.fromkeys([*feedback, *found]))
    return Drafts(rows, findings, accepted=False)


FOUND_BY = ("retrieval", "search")  # the checks a brief fails by being found
REVEALING_TERMS = 4


def _feedback(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    failed: list[str],
    brief: str,
    inputs: Inputs,
) -> list[str]:
    """The failed checks, each found-by-search line naming the terms that found the target:
    the brief's words that the target's title or abstract shares, rarest first among the
    papers the retrieval check searches (the target's window, or the warehouse) (a redraft
    that leaves them out can stay at the problem's level without naming the paper). The terms
    are counted once, however many checks found the target."""
    if not any(line.startswith(FOUND_BY) for line in failed):
        return failed
    shared = set(content_words(f"{inputs.title} {inputs.abstract}"))
    words = [w for w in dict.fromkeys(content_words(brief)) if w in shared]
    counts = (
        boundary_store.window_counts(con, settings, inputs.target_id, words)
        if settings.audit_retrieval_scope == "window"
        else None
    )
    counts = search_table.document_counts(con, words) if counts is None else counts
    rarest = sorted(words, key=lambda w: (counts.get(w, 0), w))[:REVEALING_TERMS]
    named = f" (terms that found it: {', '.join(repr(w) for w in rarest)})" if rarest else ""
    return [f"{line}{named}" if line.startswith(FOUND_BY) else line for line in failed]


def write_brief(
    llm: LLM, title: str, abstract: str, terms: Sequence[str], feedback: Sequence[str] = ()
) -> BriefDraft:
    """One draft from the title and abstract only. ``feedback`` carries the earlier attempts'
    failed checks."""
    context = {
        "title": title,
        "abstract": abstract,
        "redactions": list(terms),
        "feedback": list(feedback),
    }
    return llm.complete("brief", context, BriefDraft)


def _brief_id(target_id: str, attempt: int, text: str) -> str:
    return hashlib.sha256(f"{target_id}\0{attempt}\0{text}".encode()).hexdigest()[:20]


def _brief(
    llm: LLM,
    target_id: str,
    attempt: int,
    text: str,
    now: dt.datetime,
    brief_id: str,
    status: BriefStatus,
    reason: str,
) -> Brief:
    return Brief(
        brief_id=brief_id,
        target_id=target_id,
        attempt=attempt,
        text=text,
        prompt_name="brief",
        prompt_hash=llm.prompt_hash("brief"),
        backend=llm.backend,
        model=llm.model,
        status=status,
        reason=reason,
        created_at=now,
    )


class Steps:
    """The LLM steps of a build's targets, handed over chunk by chunk as lineage writes them.

    Up to ``LLM_TARGETS_PER_SLOT`` targets per LLM slot run at once (one with the rules backend,
    which calls nothing, or in batch mode), each in a thread that reads through a cursor of its
    own and returns the target's :class:`Records`; the caller's thread alone writes them
    (:meth:`store`). A brief and the model's audits need only the target's own rows, so they
    start at once; the retrieval check waits for :meth:`corpus_complete`, and so searches every
    paper lineage wrote, as if the steps had started after all of it. The version is the same
    at any concurrency."""

    def __init__(
        self,
        llm: LLM,
        con: duckdb.DuckDBPyConnection,
        settings: Settings,
        first_rank: int = 0,
        client: HttpClient | None = None,
    ) -> None:
        self.llm, self.con, self.settings, self.client = llm, con, settings, client
        one = llm.backend == "rules" or llm.collecting
        width = 1 if one else settings.llm_concurrency * LLM_TARGETS_PER_SLOT
        self._pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="llm-steps")
        self._ranks = itertools.count(first_rank)  # a target's place in the build
        self._root = con.cursor()  # cursors are made from this one, which runs no query
        self._cursors = threading.Lock()
        self._corpus = threading.Event()
        self._stopped = False
        self._indexed = contextlib.ExitStack()  # what holds once the corpus is complete
        llm.warm_up()

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def submit(self, target_ids: Iterable[str]) -> list[Future[Records]]:
        """Start the steps of ``target_ids``, in order; their records come in the futures."""
        return [self._pool.submit(self._records, t, next(self._ranks)) for t in target_ids]

    def _records(self, target_id: str, rank: int) -> Records:
        with self._cursors:
            reader = self._root.cursor()  # the target's own: a connection is not shared
        try:
            return target_records(
                self.llm, reader, self.settings, target_id, rank, self.wait_for_corpus, self.client
            )
        finally:
            reader.close()

    def corpus_complete(self, index: bool = True) -> None:
        """Lineage has written every paper: index them (unless ``con`` is a read-only copy made
        with its index) and let the retrieval checks search."""
        if index:
            search_table.build_search_index(self.con)
        # From here on only small statements run (each target's reads and writes), each with
        # a thread of its own: DuckDB's worker threads would only spin on them (60 targets:
        # 7.8 -> 5.9 CPU-s). A search scans every paper, and still runs no slower on one.
        self._indexed.enter_context(warehouse.setting(self.con, "threads", 1))
        self._corpus.set()

    def wait_for_corpus(self) -> None:
        self._corpus.wait()
        if self._stopped:
            raise Cancelled("the build stopped before its lineage was complete")

    def store(self, records: Records) -> Verdict:
        """Write the records of one target, in one transaction."""
        write(self.con, records)
        self.llm.written(row["call_key"] for row in records.calls)
        return records.verdict

    def close(self) -> None:
        """Let the running steps end and drop those not started (a stopped build's)."""
        if not self._corpus.is_set():
            self._stopped = True
            self._corpus.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        # Answers of targets never stored (a budget's stop): paid for, so kept; a warehouse that
        # cannot be written (a full disk) keeps none, and a rerun asks them again.
        with contextlib.suppress(duckdb.Error):
            self.llm.keep_unwritten(self.con)
        with contextlib.suppress(duckdb.Error):
            self._indexed.close()  # DuckDB's threads as they were
        self._root.close()


def run(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    target_ids: list[str],
    between: Callable[[], None] = lambda: None,
    client: HttpClient | None = None,
) -> list[Verdict]:
    """Brief, audit and grade each target (:class:`Steps`) and write its records, a target at a
    time in the targets' order. ``between`` runs before each target is written (the flow's check
    for a cancelling signal). With ``client``, briefs are also searched on OpenAlex."""
    with Steps(llm, con, settings, client=client) as steps:
        steps.corpus_complete()
        outcomes = []
        for future in steps.submit(dict.fromkeys(target_ids)):
            between()
            try:
                outcomes.append(steps.store(future.result()))
            except Deferred:
                continue  # batch mode: this target waits for the next batch round
    return outcomes


def run_batched(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    target_ids: list[str],
    *,
    poll_s: float = 30.0,
    say: Callable[[str], None] = lambda _: None,
    client: HttpClient | None = None,
) -> list[Verdict]:
    """:func:`run` through the OpenAI Batch API: every LLM request goes out in batch jobs."""
    return run_in_batches(
        llm,
        con,
        lambda: run(llm, con, settings, target_ids, client=client),
        poll_s=poll_s,
        say=say,
    )


@dataclasses.dataclass(frozen=True)
class Records:
    """What a target's LLM steps produce, for :func:`write` to store in one transaction: its
    verdict, the calls they made (``llm_calls`` rows), its briefs and findings (None: none
    drafted) and its grades with its count of tier-0 references (None: not graded), and the
    raw responses its search checks fetched (``raw_http`` rows)."""

    verdict: Verdict
    calls: list[dict[str, Any]]
    drafts: Drafts | None = None
    grades: list[Grade] | None = None
    not_antecedents: int | None = None
    responses: list[dict[str, object]] = dataclasses.field(default_factory=list)


def target_records(
    llm: LLM,
    reader: duckdb.DuckDBPyConnection,
    settings: Settings,
    target_id: str,
    rank: int = 0,
    corpus_ready: Callable[[], None] = lambda: None,
    client: HttpClient | None = None,
) -> Records:
    """Brief, audit and grade one target (the ``rank``-th of the build), reading the warehouse
    through ``reader`` and writing nothing: the rows come back as :class:`Records`. A retrieval
    check first waits for ``corpus_ready``. With ``client``, each brief is searched on OpenAlex
    through it, its responses held for :func:`write` (this thread writes nothing)."""
    held = HeldResponses(reader)
    searching = client.recording_into(held) if client is not None else None
    with llm.journal(reader, rank=rank) as calls:
        found = _steps(llm, reader, settings, target_id, corpus_ready, searching)
    return dataclasses.replace(found, calls=calls, responses=held.saved)


def _steps(
    llm: LLM,
    reader: duckdb.DuckDBPyConnection,
    settings: Settings,
    target_id: str,
    corpus_ready: Callable[[], None],
    client: HttpClient | None = None,
) -> Records:
    excluded = TargetStatus.EXCLUDED
    inputs = load_inputs(reader, target_id)
    if not inputs.antecedents:
        verdict = Verdict(target_id, excluded, TargetOutcome.NO_ELIGIBLE, "no eligible antecedent")
        return Records(verdict, [])
    thin = settings.exclude_thin_windows and boundary_store.thin_window(reader, settings, target_id)
    if thin:
        return Records(Verdict(target_id, excluded, TargetOutcome.THIN_WINDOW, thin), [])
    # The grading needs only the inputs: it starts beside the brief's retrieval check (which may
    # wait for lineage) once the brief has passed the others, rather than after it.
    grading = llm.later(
        functools.partial(
            grade_references,
            llm,
            inputs.title,
            inputs.abstract,
            inputs.antecedents
            if settings.grade_evidence == "full"
            else [withheld(r) for r in inputs.antecedents],
            settings.grade_part_tokens,
            settings.grade_readings,
        )
    )
    try:
        return _brief_then_grade(llm, reader, settings, inputs, corpus_ready, grading, client)
    finally:
        grading.settle()  # a grading started beside the brief logs its calls with the target


def _brief_then_grade(
    llm: LLM,
    reader: duckdb.DuckDBPyConnection,
    settings: Settings,
    inputs: Inputs,
    corpus_ready: Callable[[], None],
    grading: Later[dict[str, Graded]],
    client: HttpClient | None = None,
) -> Records:
    target_id, excluded = inputs.target_id, TargetStatus.EXCLUDED
    drafts = brief_and_audit(
        llm, reader, inputs, settings, corpus_ready, grading.start, client=client
    )
    attempts = len(drafts.rows)
    if drafts.llm_failure is not None:
        verdict = Verdict(
            target_id, excluded, TargetOutcome.LLM_FAILED, drafts.llm_failure, attempts
        )
        return Records(verdict, [], drafts)
    if not drafts.accepted:
        why = f"every brief leaked ({attempts} attempts): {drafts.rows[-1].reason}"
        verdict = Verdict(target_id, excluded, TargetOutcome.EVERY_BRIEF_LEAKED, why, attempts)
        return Records(verdict, [], drafts)
    return dataclasses.replace(_grade(llm, inputs, attempts, grading), drafts=drafts)


def _grade(llm: LLM, inputs: Inputs, attempts: int, grading: Later[dict[str, Graded]]) -> Records:
    """The grades of a target whose brief was accepted (``grading``'s result)."""
    target_id, excluded = inputs.target_id, TargetStatus.EXCLUDED
    try:
        graded = grading.result()
    except Deferred:
        raise
    except LLMError as error:  # e.g. references still missing after the repair retry
        why = f"grading failed, so no antecedent is graded: {error}"
        verdict = Verdict(target_id, excluded, TargetOutcome.GRADING_FAILED, why, attempts)
        return Records(verdict, [], grades=[])
    rows = [
        Grade(
            target_id=target_id,
            paper_id=paper_id,
            tier=grade.tier,
            role=grade.role,
            rationale=grade.rationale,
            backend=llm.backend,
            model=llm.model,
            prompt_hash=llm.prompt_hash("grade"),
        )
        for paper_id, grade in sorted(graded.items())
    ]
    grades = sum(1 for g in graded.values() if g.is_antecedent)
    tier_0 = len(rows) - grades
    if not grades:
        why = f"the grader found no antecedent among {len(rows)} eligible references"
        verdict = Verdict(target_id, excluded, TargetOutcome.NO_ANTECEDENT, why, attempts)
        return Records(verdict, [], grades=rows, not_antecedents=tier_0)
    why = (
        f"brief accepted on attempt {attempts}; {grades} antecedents among "
        f"{len(rows)} graded references"
    )
    verdict = Verdict(
        target_id, TargetStatus.ACCEPTED, TargetOutcome.ACCEPTED, why, attempts, grades
    )
    return Records(verdict, [], grades=rows, not_antecedents=tier_0)


def write(con: duckdb.DuckDBPyConnection, records: Records) -> None:
    """A target's records in one transaction: a kill loses at most this target's work, call log
    included, and one commit costs less than a dozen. The calls it used go to the cost ledger
    under the build that is running (none outside a build)."""
    target_id = records.verdict.target_id
    with warehouse.transaction(con):
        llm_log.write(con, records.calls)
        llm_ledger.record_uses(con, target_id, uses_of(records.calls))
        warehouse.upsert(con, "raw_http", records.responses, ["request_key"], mostly_new=True)
        if records.drafts is not None:
            gold_table.replace_briefs(con, target_id, records.drafts.rows)
            findings = [f.model_dump(mode="json") for f in records.drafts.findings]
            key = ["brief_id", "check"]  # a brief's findings: stored before only on a rerun
            warehouse.upsert(con, "audit_findings", findings, key, mostly_new=True)
        if records.grades is not None:
            gold_table.replace_grades(con, target_id, records.grades)
            completeness = {"not_antecedents": records.not_antecedents}
            warehouse.update_where(con, "gold_completeness", completeness, {"target_id": target_id})
        _verdict(con, records.verdict)


def _verdict(con: duckdb.DuckDBPyConnection, outcome: Verdict) -> None:
    """The target's status, outcome and reason; the lineage step's source problems stay on it."""
    problems = lineage_table.source_problems(con, outcome.target_id)
    warehouse.update_where(
        con,
        "targets",
        {
            "status": outcome.status.value,
            "outcome": outcome.kind.value,
            "reason": with_problems(outcome.reason, problems),
            "updated_at": dt.datetime.now(dt.UTC),
        },
        {"paper_id": outcome.target_id},
    )


@dataclasses.dataclass(frozen=True)
class AuditReport:
    version: str
    instances: int
    failures: dict[str, int]  # check -> failed instances
    partial_mechanism: int
    failed: list[tuple[str, str]]  # (instance_id, what failed)
    searched: bool = True  # whether the search identity check ran (it needs a sources client)

    @property
    def ok(self) -> bool:
        return not self.failed

    def lines(self) -> list[str]:
        shown = [f"leakage audit of {self.version}: {self.instances} instance(s)"]
        for check in AuditCheck:
            if check is AuditCheck.SEARCH and not self.searched:
                shown.append(f"  {check.value:<10} not run (no sources client)")
                continue
            count = self.failures.get(check.value, 0)
            rate = count / self.instances if self.instances else 0.0
            shown.append(f"  {check.value:<10} failed {count:>4}  ({rate:.1%})")
        shown.append(f"  partial mechanism leakage: {self.partial_mechanism} (recorded, passes)")
        shown += [f"  FAILED {iid}: {what}" for iid, what in self.failed]
        shown.append(
            "leakage audit passed"
            if self.ok
            else f"leakage audit FAILED for {len(self.failed)} instance(s)"
        )
        return shown


def audit_version(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    version: str,
    client: HttpClient | None = None,
) -> AuditReport:
    """Run the checks again on every instance of a version (cached calls and stored responses
    cost nothing); with ``client``, the search identity check too, within each instance's
    published cutoff and the version's jitter."""
    search_table.build_search_index(con)
    rows = versions.briefs(con, version)
    failures: dict[str, int] = {}
    failed: list[tuple[str, str]] = []
    partial = 0
    for iid, _, brief in rows:
        checks = _checks_of(llm, client, con, settings, version, iid, brief)
        partial += any(
            c.level is LeakLevel.PARTIAL for c in checks if c.check is AuditCheck.MECHANISM
        )
        bad = [c for c in checks if not c.passed]
        for finding in bad:
            failures[finding.check.value] = failures.get(finding.check.value, 0) + 1
        if bad:
            failed.append((iid, "; ".join(f"{c.check.value}: {c.detail}" for c in bad)))
    return AuditReport(version, len(rows), failures, partial, failed, searched=client is not None)


def _checks_of(
    llm: LLM,
    client: HttpClient | None,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    version: str,
    instance_id: str,
    text: str,
) -> list[AuditFinding]:
    """The build's checks of ``text`` as a brief of ``instance_id`` of ``version``: its target,
    its redaction terms and result numbers, and its published cutoff's search window."""
    found = versions.instance(con, version, instance_id)
    if found is None:
        raise InputError(f"{version} has no instance {instance_id!r}")
    target_id, _, cutoff = found
    inputs = load_inputs(con, str(target_id))
    target = (inputs.target_id, inputs.title, inputs.abstract)
    jitter = versions.jitter_days(con, version)
    searching = (
        audit_checks.search_for(
            client,
            con,
            inputs.target_id,
            settings.cutoff_jitter_days if jitter is None else jitter,
            published=cutoff,
        )
        if client is not None
        else None
    )
    return audit_checks.checks(
        llm,
        con,
        settings,
        instance_id,
        text,
        target,
        redaction_terms(inputs),
        searching=searching,
    )


def audit_text(
    llm: LLM,
    client: HttpClient,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    version: str,
    instance_id: str,
    text: str,
) -> list[AuditFinding]:
    """The build's five checks on any ``text`` as the brief of ``instance_id`` in ``version``
    (a curator's draft, a researcher's test, an injected leak): lexical, identity, retrieval,
    mechanism and search, each finding under the text's own brief ID. Empty text, or an
    instance the version lacks, is an :class:`InputError`."""
    cleaned = " ".join(text.split())
    if not cleaned:
        raise InputError("the text is empty: there is nothing to audit")
    search_table.build_search_index(con)
    findings = _checks_of(llm, client, con, settings, version, instance_id, cleaned)
    brief_id = _brief_id(instance_id, 0, cleaned)
    return [f.model_copy(update={"brief_id": brief_id}) for f in findings]


def judging_settings(
    con: duckdb.DuckDBPyConnection, settings: Settings, version: str
) -> tuple[Settings, bool]:
    """``settings`` with the LLM backend and model that built ``version``, as
    ``split_versions.models`` records them, and True; where it records none, ``settings`` as
    they are, and False. Where the model is served (URL, key) is not recorded: the shell's."""
    recorded = versions.models(con, version)
    found = json.loads(recorded) if recorded else {}
    backend, model = found.get("backend"), found.get("llm")
    if not isinstance(backend, str) or not isinstance(model, str):
        return settings, False
    update: dict[str, Any] = {"llm_backend": backend}
    if backend != "rules":  # the rules backend's model name is its version, not a setting
        update["llm_model"] = model
    return Settings.model_validate({**settings.model_dump(), **update}), True
