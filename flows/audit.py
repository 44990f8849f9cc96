"""The ``audit-split`` flow: re-run the leakage audit on a split version, attack its public
side (the hash and window attacks of ``boundary_store``), and report both.

``make audit`` runs it on the latest version of each split that has one (naming those that have
none). Each split's report opens with its verdict, recorded in ``audit_verdicts`` for
``inspire export``: failed (exit non-zero) if any accepted instance fails a check (an instance
whose brief a curator marked leaking, in ``inspire review serve``, fails too) or the information
boundary does not hold; "too sparse to judge" when the boundary cannot be judged (exit 0, but
no pass); else passed. It also prints the model-curator agreement over the version's review sample
(``inspire review sample``), which no verdict depends on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

from prefect import State, flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import TerminationSignal
from prefect.states import Cancelled as CancelledState
from pydantic import ValidationError

from flows import console
from inspire_build import boundary, boundary_store, gold, splits, warehouse
from inspire_build.config import Settings, get_settings
from inspire_build.errors import Cancelled, InputError, InspireError
from inspire_build.review import apply, sample
from inspire_build.sources import make_client
from inspire_build.tables import windows


@flow(name="audit-split", log_prints=True)
def audit_split(
    split: str = "eval",
    version: str | None = None,
    warehouse_path: str | None = None,
    llm_backend: str | None = None,
    llm_model: str | None = None,
) -> Any:
    """True when every instance passes and the boundary holds, else :class:`AuditFailed` (the
    flow run is Failed); the report is logged and published as a markdown artifact. Audits
    ``warehouse_path``, else the configured warehouse, with the model that built the version
    unless ``llm_backend``/``llm_model`` name another (:func:`judging`)."""
    settings = _settings(warehouse_path)
    logger = get_run_logger()
    try:
        return _audit(logger, settings, split, version, (llm_backend, llm_model))
    except (Cancelled, TerminationSignal) as error:
        stopped = console.as_cancelled(error)
        logger.warning(str(stopped))
        return CancelledState(message=str(stopped))  # the flow run is Cancelled, not Failed


def _audit(
    logger: Any, settings: Settings, split: str, version: str | None, given: Given = (None, None)
) -> bool:
    with warehouse.open_warehouse(
        settings.warehouse, wait_s=3600, say=logger.info, create=False, stopped=console.signalled
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
        logger.info(line)
    create_markdown_artifact(
        key=f"{split}-audit",
        markdown="\n".join([f"# Audit of {chosen}", "", *(f"    {line}" for line in lines)]),
        description=f"The leakage audit and boundary attacks of {chosen}",
    )
    if verdict.verdict is boundary.Verdict.FAILED:
        raise AuditFailed(f"the audit of {chosen} failed (its report is above)")
    return True


Given = tuple[str | None, str | None]  # --llm-backend, --llm-model


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


def _settings(warehouse_path: str | Path | None) -> Settings:
    return get_settings().overridden(warehouse=warehouse_path)


class AuditFailed(InspireError):
    """An accepted instance failed a check, or the information boundary did not hold: the
    flow run is Failed, and ``make audit`` exits 1."""


def _audited(split: str, version: str, warehouse_path: str, given: Given) -> bool:
    """Run the flow; False when the audit failed, any other failure raised as it was."""
    backend, model = given
    state = cast(  # a sync flow called outside an event loop returns its State
        State[Any],
        audit_split(
            split=split,
            version=version,
            warehouse_path=warehouse_path,
            llm_backend=backend,
            llm_model=model,
            return_state=True,
        ),
    )
    if state.is_completed():
        return True
    if state.is_cancelled():
        raise Cancelled(state.message or "cancelled")
    error = state.result(raise_on_failure=False)
    if isinstance(error, AuditFailed):
        return False
    if isinstance(error, BaseException):
        raise error
    raise InspireError(f"the audit of {version} ended {state.name}")


def main(argv: list[str], warehouse_path: Path | None = None, given: Given = (None, None)) -> int:
    """``python -m flows.audit [SPLIT...]``: audit each split's latest version.

    Named splits must each have a version. Without names, every configured split that has one
    is audited and each that has none is named on a line of its own; only a warehouse with no
    version at all is an error. All of this is checked before any flow (or Prefect server)
    starts.
    """
    settings = _settings(warehouse_path)
    for split in argv:
        settings.split(split)  # an unknown name is an InputError naming the known ones
    with warehouse.open_warehouse(settings.warehouse, wait_s=3600, say=print, create=False) as con:
        latest = splits.latest_versions(con)
        for version in latest.values():  # a shell that names another model: refused first
            judging(con, settings, version, given)
    named = argv or list(settings.splits)
    missing = [split for split in named if split not in latest]
    if argv and missing:
        raise InputError(f"split {missing[0]!r} has no version yet; build it first")
    for split in missing:
        print(f"not audited: split {split!r} has no version yet")
    chosen = [split for split in named if split in latest]
    if not chosen:
        raise InputError("no split has a version yet; build one first (`make build`)")
    ok = True
    for split in chosen:
        ok &= _audited(split, latest[split], str(settings.warehouse), given)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
