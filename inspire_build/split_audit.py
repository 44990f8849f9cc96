"""The audit of a split version, as the ``audit-split`` flow (flows/audit.py) and ``inspire
audit`` run it: re-run the leakage audit on the version, attack its public side (the hash and
window attacks of ``boundary_store``), and report both.

``make audit`` runs it on the latest version of each split that has one (naming those that have
none: :func:`to_audit`). Each split's report opens with its verdict, recorded in
``audit_verdicts`` for ``inspire export``: failed (exit non-zero) if any accepted instance fails a
check (an instance whose brief a curator marked leaking, in ``inspire review serve``, fails too)
or the information boundary does not hold; "too sparse to judge" when the boundary cannot be
judged (exit 0, but no pass); else passed. It also prints the model-curator agreement over the
version's review sample (``inspire review sample``), which no verdict depends on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from inspire_build import boundary, boundary_store, gold, splits, warehouse
from inspire_build.config import Settings, get_settings
from inspire_build.errors import InputError, InspireError
from inspire_build.review import apply, sample
from inspire_build.sources import make_client
from inspire_build.tables import windows

Given = tuple[str | None, str | None]  # --llm-backend, --llm-model


class AuditFailed(InspireError):
    """An accepted instance failed a check, or the information boundary did not hold: the
    flow run is Failed, and ``make audit`` exits 1."""


@dataclasses.dataclass(frozen=True)
class Audited:
    """An audit's report: the version audited, its lines (the verdict first), and whether the
    audit failed."""

    version: str
    lines: tuple[str, ...]
    failed: bool

    def markdown(self) -> str:
        """The report as the flow run's markdown artifact."""
        return "\n".join([f"# Audit of {self.version}", "", *(f"    {x}" for x in self.lines)])

    def passed(self) -> bool:
        """True when the audit passed (or could not judge the boundary), else
        :class:`AuditFailed`."""
        if self.failed:
            raise AuditFailed(f"the audit of {self.version} failed (its report is above)")
        return True


def settings_for(warehouse_path: str | Path | None) -> Settings:
    """The settings, with ``warehouse_path`` (if any) for the warehouse."""
    return get_settings().overridden(warehouse=warehouse_path)


def audit(
    settings: Settings,
    split: str,
    version: str | None,
    given: Given = (None, None),
    say: Callable[[str], None] = print,
    stopped: Callable[[], bool] = lambda: False,
) -> Audited:
    """Audit ``version`` (else the split's latest), judged as :func:`judging` says; record its
    verdict, and ``say`` its report, line by line. ``stopped`` polls for a cancelling signal
    while the warehouse is waited for."""
    with warehouse.open_warehouse(
        settings.warehouse, wait_s=3600, say=say, create=False, stopped=stopped
    ) as con:
        chosen = version or splits.latest_version(con, split)
        judging_with, whose = judging(con, settings, chosen, given)
        llm, client = gold.make_llm(judging_with, con), make_client(judging_with, con)
        report = gold.audit_version(llm, con, settings, chosen, client)
        # an instance whose brief a curator marked leaking fails as well
        report = apply.with_leak_marks(report, apply.leak_failures(con, chosen))
        attacks = boundary_store.attack_version(con, settings, chosen)
        agreement = sample.report_lines(con, chosen)  # reported; the verdict does not read it
        verdict = overall(report, attacks)
        windows.record_verdict(con, chosen, split, verdict.verdict.value, _joined(verdict))
    judged = f"judged by {llm.backend} {llm.model} ({whose})"
    lines = [verdict.line(f"audit of {chosen}"), judged, *report.lines(), *attacks.lines()]
    lines += agreement
    for line in lines:
        say(line)
    return Audited(chosen, tuple(lines), verdict.verdict is boundary.Verdict.FAILED)


def judging(con: Any, settings: Settings, version: str, given: Given) -> tuple[Settings, str]:
    """The settings the audit judges with, and whose they are: the backend and model given on
    the command line; else those that built the version (where it records them), unless the
    shell names others, which is refused: a shell's INSPIRE_LLM_* would silently judge with
    another model than the build's."""
    if any(given):
        named = {k: v for k, v in zip(("llm_backend", "llm_model"), given, strict=True) if v}
        try:
            chosen = Settings.model_validate({**settings.model_dump(), **named})
        except ValidationError as error:
            wrong = error.errors()[0]
            raise InputError(f"--llm-backend: {wrong['msg']} (got {wrong['input']!r})") from None
        return chosen, "given on the command line"
    judging_with, recorded = gold.judging_settings(con, settings, version)
    if not recorded:
        return settings, "this shell's: the version records none"
    shell = sorted(get_settings().model_fields_set & {"llm_backend", "llm_model"})
    differs = [f for f in shell if getattr(settings, f) != getattr(judging_with, f)]
    if differs:
        said = ", ".join(f"INSPIRE_{f.upper()}={getattr(settings, f)}" for f in differs)
        raise InputError(
            f"{version} was built with {judging_with.llm_backend} {judging_with.llm_model}, "
            f"but this shell sets {said}: unset it to judge with the build's model, or pass "
            "--llm-backend/--llm-model to judge with another on purpose"
        )
    return judging_with, "the build's"


def overall(report: gold.AuditReport, attacks: boundary_store.BoundaryReport) -> boundary.Judgement:
    """The audit's verdict: failed when an instance fails a check or the boundary fails; too
    sparse to judge when the boundary is (not a pass: `inspire export` wants one)."""
    reasons = [] if report.ok else [f"{len(report.failed)} instance(s) fail a leakage check"]
    if attacks.judgement.verdict is boundary.Verdict.FAILED or reasons:
        return boundary.Judgement(boundary.Verdict.FAILED, (*reasons, *attacks.judgement.reasons))
    return attacks.judgement


def _joined(judgement: boundary.Judgement) -> str | None:
    return "; ".join(judgement.reasons) or None


def to_audit(
    settings: Settings, named: list[str], given: Given, say: Callable[[str], None] = print
) -> list[tuple[str, str]]:
    """The splits to audit, each with its latest version: those ``named``, which must each have
    a version; without names, every configured split that has one, each that has none ``say``-d
    on a line of its own (only a warehouse with no version at all is an error). Checked before
    any flow (or Prefect server) starts, as is a shell that names another model
    (:func:`judging`)."""
    for split in named:
        settings.split(split)  # an unknown name is an InputError naming the known ones
    with warehouse.open_warehouse(settings.warehouse, wait_s=3600, say=say, create=False) as con:
        latest = splits.latest_versions(con)
        wanted = named or list(settings.splits)
        missing = [split for split in wanted if split not in latest]
        if named and missing:
            raise InputError(f"split {missing[0]!r} has no version yet; build it first")
        for split in missing:
            say(f"not audited: split {split!r} has no version yet")
        chosen = [(split, latest[split]) for split in wanted if split in latest]
        if not chosen:
            raise InputError("no split has a version yet; build one first (`make build`)")
        for _, version in chosen:  # a shell that names another model than one audited: refused
            judging(con, settings, version, given)
    return chosen
