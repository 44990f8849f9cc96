"""The runners `inspire build` and `inspire audit` find by their entry points: a flow in this
process, reporting to the project's Prefect; the flows are imported only once it is set."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspire_build.prefect_runtime import in_process, outcome, printed_through
from inspire_build.split_audit import Given


def run_build(parameters: dict[str, Any], watch: Callable[[Any], Any]) -> Any:
    """The build-split flow (progress by ``watch``, Prefect's lines above it): the version."""
    with in_process():
        from flows.build_split import build_split

        with watch(printed_through):
            return outcome(build_split(**parameters, return_state=True))


def run_audit(splits: list[str], warehouse_path: Path, given: Given) -> int:
    """The audit-split flow on each split."""
    with in_process():
        from flows.audit import main

        return main(splits, warehouse_path, given)
