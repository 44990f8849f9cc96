"""The ``audit-split`` flow: :func:`inspire_build.split_audit.audit`, its report logged, shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import TerminationSignal
from prefect.states import Cancelled as CancelledState

from inspire_build import cancellation, prefect_runtime, split_audit
from inspire_build.errors import Cancelled
from inspire_build.split_audit import AuditFailed, Given
from inspire_build.split_audit import settings_for as _settings


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
    unless ``llm_backend``/``llm_model`` name another (:func:`split_audit.judging`)."""
    logger = get_run_logger()
    given = (llm_backend, llm_model)
    try:
        done = split_audit.audit(
            _settings(warehouse_path), split, version, given, logger.info, cancellation.signalled
        )
        create_markdown_artifact(
            key=f"{split}-audit",
            markdown=done.markdown(),
            description=f"The leakage audit and boundary attacks of {done.version}",
        )
        return done.passed()
    except (Cancelled, TerminationSignal) as error:
        stopped = prefect_runtime.as_cancelled(error)
        logger.warning(str(stopped))
        return CancelledState(message=str(stopped))  # the flow run is Cancelled, not Failed


def _audited(split: str, version: str, warehouse_path: str, given: Given) -> bool:
    """Run the flow; False when the audit failed, any other failure raised as it was."""
    state = audit_split(split, version, warehouse_path, *given, return_state=True)
    try:
        return bool(prefect_runtime.outcome(state))
    except AuditFailed:
        return False


def main(argv: list[str], warehouse_path: Path | None = None, given: Given = (None, None)) -> int:
    """Audit each split's latest version (the splits :func:`split_audit.to_audit` chooses,
    before any flow runs); 1 if any failed."""
    settings = _settings(warehouse_path)
    chosen = split_audit.to_audit(settings, argv, given)
    audited = [_audited(s, v, str(settings.warehouse), given) for s, v in chosen]
    return 0 if all(audited) else 1
