"""The ``audit-split`` flow: re-run the leakage audit on a split version, attack its public
side (the hash and window attacks of ``boundary_store``), and report both.

``make audit`` runs it on the latest version of each split and exits non-zero if any accepted
instance fails a check, or if the information boundary does not hold.
"""

from __future__ import annotations

import sys

from prefect import flow, get_run_logger

from inspire_build import boundary_store, gold, splits, warehouse
from inspire_build.config import get_settings


@flow(name="audit-split", log_prints=True)
def audit_split(split: str = "eval", version: str | None = None) -> bool:
    """True when every instance passes and the boundary holds; the reports are logged."""
    settings = get_settings()
    logger = get_run_logger()
    with warehouse.open_warehouse(settings.warehouse, wait_s=3600, say=logger.info) as con:
        chosen = version or splits.latest_version(con, split)
        report = gold.audit_version(gold.make_llm(settings, con), con, settings, chosen)
        attacks = boundary_store.attack_version(con, settings, chosen)
    for line in [*report.lines(), *attacks.lines()]:
        logger.info(line)
    return report.ok and attacks.ok


def main(argv: list[str]) -> int:
    """``python -m flows.audit [SPLIT...]``: audit each split's latest version."""
    chosen = argv or ["train", "eval"]
    ok = True
    for split in chosen:
        ok &= audit_split(split=split)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
