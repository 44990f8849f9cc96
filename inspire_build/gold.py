"""The LLM steps for resolved targets: brief, audit (regenerating on a leak), then grade.

Inputs come from the warehouse (the lineage step's ``papers`` and eligible ``references``);
outputs go to ``briefs``, ``audit_findings``, ``grades`` and the targets' status. Every brief
ends accepted or rejected with a reason, and a target whose briefs all leak is excluded.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from inspire_build import audit_checks, warehouse
from inspire_build.batch import run_in_batches
from inspire_build.briefs import MAX_WORDS, MIN_WORDS, redactions
from inspire_build.classify import with_problems
from inspire_build.config import Settings
from inspire_build.errors import LLMError
from inspire_build.grading import grade_references
from inspire_build.llm import LLM, Deferred
from inspire_build.llm_rules import RULES
from inspire_build.models import (
    AuditCheck,
    AuditFinding,
    BriefDraft,
    BriefStatus,
    LeakLevel,
    TargetOutcome,
    TargetStatus,
)
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import versions

if TYPE_CHECKING:
    from inspire_build.llm import OpenAIClient

LLM_FAILED = "the LLM failed: "  # a brief's reason when the model refused or answered invalidly


def make_llm(
    settings: Settings, con: duckdb.DuckDBPyConnection, client: OpenAIClient | None = None
) -> LLM:
    """The configured backend, with the rules answers wired in."""
    return LLM(settings, con, rules=RULES, client=client)


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

    rows: list[dict[str, object]]
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


def redaction_terms(inputs: Inputs) -> list[str]:
    """The target's redaction list, less what its antecedents' titles and abstracts share."""
    titles = [str(a["title"]) for a in inputs.antecedents]
    abstracts = [str(a["abstract"]) for a in inputs.antecedents]
    return redactions(inputs.title, inputs.abstract, titles, abstracts)


def brief_and_audit(
    llm: LLM, con: duckdb.DuckDBPyConnection, inputs: Inputs, settings: Settings
) -> Drafts:
    """Draft, audit, and redraft with the findings as feedback, up to ``brief_attempts``."""
    terms = redaction_terms(inputs)
    target = (inputs.target_id, inputs.title, inputs.abstract)
    rows: list[dict[str, object]] = []
    findings: list[AuditFinding] = []
    feedback: list[str] = []
    now = dt.datetime.now(dt.UTC)
    for attempt in range(1, settings.brief_attempts + 1):
        try:
            text = write_brief(llm, inputs.title, inputs.abstract, terms, feedback).brief
            brief_id = _brief_id(inputs.target_id, attempt, text)
            checks = audit_checks.four(llm, con, settings, brief_id, text, target, terms)
        except Deferred:
            raise
        except LLMError as error:  # refused or invalid even after the repair: recorded, final
            why = f"{LLM_FAILED}{error}"
            rows.append(
                {
                    **_brief_row(llm, inputs.target_id, attempt, "", now),
                    "brief_id": _brief_id(inputs.target_id, attempt, f"failed: {error}"),
                    "status": BriefStatus.REJECTED.value,
                    "reason": why,
                }
            )
            return Drafts(rows, findings, accepted=False, llm_failure=why)
        words = len(text.split())
        failed = [f"{f.check.value}: {f.detail}" for f in checks if not f.passed]
        if not MIN_WORDS <= words <= MAX_WORDS:
            failed.append(f"length: {words} words, outside {MIN_WORDS}-{MAX_WORDS}")
        status = BriefStatus.REJECTED if failed else BriefStatus.ACCEPTED
        rows.append(
            {
                **_brief_row(llm, inputs.target_id, attempt, text, now),
                "brief_id": brief_id,
                "status": status.value,
                "reason": "; ".join(failed) if failed else "passed all four leakage checks",
            }
        )
        findings += checks
        if not failed:
            return Drafts(rows, findings, accepted=True)
        feedback = failed
    return Drafts(rows, findings, accepted=False)


def write_brief(
    llm: LLM, title: str, abstract: str, terms: Sequence[str], feedback: Sequence[str] = ()
) -> BriefDraft:
    """One draft from the title and abstract only. ``feedback`` carries the previous attempt's
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


def _brief_row(
    llm: LLM, target_id: str, attempt: int, text: str, now: dt.datetime
) -> dict[str, object]:
    return {
        "target_id": target_id,
        "attempt": attempt,
        "text": text,
        "word_count": len(text.split()),
        "prompt_name": "brief",
        "prompt_hash": llm.prompt_hash("brief"),
        "backend": llm.backend,
        "model": llm.model,
        "created_at": now,
    }


def run(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    target_ids: list[str],
    between: Callable[[], None] = lambda: None,
) -> list[Verdict]:
    """Brief, audit and grade each target; write every row and the targets' verdicts.
    ``between`` runs before each target (the flow's check for a cancelling signal)."""
    warehouse.build_search_index(con)
    outcomes = []
    for target_id in dict.fromkeys(target_ids):
        between()
        # One transaction per target: its rows land together (a kill loses at most this
        # target's work, LLM log included), and one commit costs less than a dozen.
        try:
            with warehouse.transaction(con):
                outcome = _one(llm, con, settings, target_id)
                _verdict(con, outcome)
        except Deferred:
            continue  # batch mode: this target waits for the next batch round
        outcomes.append(outcome)
    return outcomes


def run_batched(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    target_ids: list[str],
    *,
    poll_s: float = 30.0,
    say: Callable[[str], None] = lambda _: None,
) -> list[Verdict]:
    """:func:`run` through the OpenAI Batch API: every LLM request goes out in batch jobs."""
    return run_in_batches(
        llm, con, lambda: run(llm, con, settings, target_ids), poll_s=poll_s, say=say
    )


def _one(llm: LLM, con: duckdb.DuckDBPyConnection, settings: Settings, target_id: str) -> Verdict:
    """Brief, audit and grade one target, writing its rows; the verdict is the caller's."""
    excluded = TargetStatus.EXCLUDED
    inputs = load_inputs(con, target_id)
    if not inputs.antecedents:
        return Verdict(target_id, excluded, TargetOutcome.NO_ELIGIBLE, "no eligible antecedent")
    drafts = brief_and_audit(llm, con, inputs, settings)
    briefs = drafts.rows
    warehouse.replace_where(con, "briefs", {"target_id": target_id}, briefs, ["brief_id"])
    warehouse.upsert(
        con,
        "audit_findings",
        [f.model_dump(mode="json") for f in drafts.findings],
        ["brief_id", "check"],
    )
    if drafts.llm_failure is not None:
        return Verdict(
            target_id, excluded, TargetOutcome.LLM_FAILED, drafts.llm_failure, len(briefs)
        )
    if not drafts.accepted:
        why = f"every brief leaked ({len(briefs)} attempts): {briefs[-1]['reason']}"
        return Verdict(target_id, excluded, TargetOutcome.EVERY_BRIEF_LEAKED, why, len(briefs))
    return _grade(llm, con, settings, inputs, len(briefs))


def _grade(
    llm: LLM, con: duckdb.DuckDBPyConnection, settings: Settings, inputs: Inputs, attempts: int
) -> Verdict:
    """Grade the eligible references of a target whose brief was accepted; write the grades."""
    target_id, excluded = inputs.target_id, TargetStatus.EXCLUDED
    try:
        graded = grade_references(
            llm,
            inputs.title,
            inputs.abstract,
            inputs.antecedents,
            settings.grade_part_tokens,
            settings.grade_readings,
        )
    except Deferred:
        raise
    except LLMError as error:  # e.g. references still missing after the repair retry
        _write_grades(con, target_id, [], None)
        why = f"grading failed, so no antecedent is graded: {error}"
        return Verdict(target_id, excluded, TargetOutcome.GRADING_FAILED, why, attempts)
    rows = [
        {
            "target_id": target_id,
            "paper_id": paper_id,
            "tier": int(grade.tier),
            "role": grade.role.value if grade.role is not None else None,
            "rationale": grade.rationale,
            "backend": llm.backend,
            "model": llm.model,
            "prompt_hash": llm.prompt_hash("grade"),
        }
        for paper_id, grade in sorted(graded.items())
    ]
    grades = sum(1 for g in graded.values() if g.is_antecedent)
    _write_grades(con, target_id, rows, len(rows) - grades)
    if not grades:
        why = f"the grader found no antecedent among {len(rows)} eligible references"
        return Verdict(target_id, excluded, TargetOutcome.NO_ANTECEDENT, why, attempts)
    why = (
        f"brief accepted on attempt {attempts}; {grades} antecedents among "
        f"{len(rows)} graded references"
    )
    return Verdict(target_id, TargetStatus.ACCEPTED, TargetOutcome.ACCEPTED, why, attempts, grades)


def _write_grades(
    con: duckdb.DuckDBPyConnection,
    target_id: str,
    rows: Sequence[Mapping[str, object]],
    not_antecedents: int | None,
) -> None:
    """A target's grades, every tier, and its count of tier-0 references (None: not graded)."""
    warehouse.replace_where(
        con, "grades", {"target_id": target_id}, rows, ["target_id", "paper_id"]
    )
    warehouse.update_where(
        con, "gold_completeness", {"not_antecedents": not_antecedents}, {"target_id": target_id}
    )


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

    @property
    def ok(self) -> bool:
        return not self.failed

    def lines(self) -> list[str]:
        shown = [f"leakage audit of {self.version}: {self.instances} instance(s)"]
        for check in ("lexical", "identity", "retrieval", "mechanism"):
            count = self.failures.get(check, 0)
            rate = count / self.instances if self.instances else 0.0
            shown.append(f"  {check:<10} failed {count:>4}  ({rate:.1%})")
        shown.append(f"  partial mechanism leakage: {self.partial_mechanism} (recorded, passes)")
        shown += [f"  FAILED {iid}: {what}" for iid, what in self.failed]
        shown.append(
            "audit passed" if self.ok else f"audit FAILED for {len(self.failed)} instance(s)"
        )
        return shown


def audit_version(
    llm: LLM, con: duckdb.DuckDBPyConnection, settings: Settings, version: str
) -> AuditReport:
    """Run the four checks again on every instance of a version (cached calls cost nothing)."""
    warehouse.build_search_index(con)
    rows = versions.briefs(con, version)
    failures: dict[str, int] = {}
    failed: list[tuple[str, str]] = []
    partial = 0
    for iid, target_id, brief in rows:
        inputs = load_inputs(con, target_id)
        terms = redaction_terms(inputs)
        target = (target_id, inputs.title, inputs.abstract)
        checks = audit_checks.four(llm, con, settings, iid, brief, target, terms)
        partial += any(
            c.level is LeakLevel.PARTIAL for c in checks if c.check is AuditCheck.MECHANISM
        )
        bad = [c for c in checks if not c.passed]
        for finding in bad:
            failures[finding.check.value] = failures.get(finding.check.value, 0) + 1
        if bad:
            failed.append((iid, "; ".join(f"{c.check.value}: {c.detail}" for c in bad)))
    return AuditReport(version, len(rows), failures, partial, failed)
