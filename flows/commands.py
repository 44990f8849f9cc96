"""The ``inspire build`` and ``inspire audit`` commands: they run the build-split and audit-split
flows in the CLI's own process, so that the run shows in Prefect's UI.

The package never imports flows/: the CLI finds these two through the entry points of the group
``inspire_build.commands`` (pyproject.toml), in ``inspire_build/cli/__init__.py``. Prefect and
the flows are imported only when a command runs, after it has pointed this process at the
project's Prefect. Only the CLI's entry-point loading imports this module: imported first, it
would import the CLI, whose loading of it would then find it half-made.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from inspire_build.cli.common import WarehouseOption, _check_split, _warehouse_path, err, out
from inspire_build.config import get_settings
from inspire_build.pipeline import check_sources

LimitOption = Annotated[
    int | None, typer.Option(help="Most candidates to select (and walk).", min=1)
]
InstancesOption = Annotated[
    int | None,
    typer.Option(
        help="Build until this many instances are accepted, walking the candidates in their "
        "seeded, month-stratified order (see `inspire plan`).",
        min=1,
    ),
]
RunnerOption = Annotated[
    str | None,
    typer.Option(
        help="Where lineage's chunks run: local (this process) or dask (Dask workers; the dask "
        "extra). Default: $INSPIRE_RUNNER, else local."
    ),
]
DaskAddressOption = Annotated[
    str | None,
    typer.Option(
        help="A running Dask scheduler (tcp://host:8786, tls://…) for --runner dask; without "
        "one, a LocalCluster starts on the pinned INSPIRE_DASK_* ports."
    ),
]
ApplyReviewsOption = Annotated[
    bool,
    typer.Option(
        "--apply-reviews",
        help="Run no step: write the split's latest version again with the curators' reviews "
        "(inspire review serve) applied, as a new version.",
        metavar="",
    ),
]


BudgetOption = Annotated[
    float | None,
    typer.Option(
        "--llm-budget-usd",
        help="Stop before an LLM call would spend more than this (USD); a rerun resumes. "
        "Default: $INSPIRE_LLM_BUDGET_USD, else none.",
        min=0,
    ),
]


def build(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="The split to build (train, eval).")] = "eval",
    limit: LimitOption = None,
    instances: InstancesOption = None,
    label: Annotated[str | None, typer.Option(help="A label for the version.")] = None,
    runner: RunnerOption = None,
    dask_address: DaskAddressOption = None,
    apply_reviews: ApplyReviewsOption = False,
    llm_budget_usd: BudgetOption = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Run the build-split flow in this process and print the version it wrote."""
    from flows import console, progress

    _check_split(ctx, split)
    if apply_reviews and (limit or instances or runner or dask_address):
        raise typer.BadParameter(
            "--apply-reviews writes from the latest version's records and runs no step, so it "
            "takes no --limit, --instances, --runner or --dask-address",
            param_hint="--apply-reviews",
        )
    settings = get_settings().overridden(
        split,
        limit=limit,
        instances=instances,
        runner=runner,
        dask_address=dask_address,
        llm_budget_usd=llm_budget_usd,
    )
    if not apply_reviews:
        check_sources(settings, split)
    if dask_address and settings.runner != "dask":
        raise typer.BadParameter("--dask-address needs --runner dask", param_hint="--dask-address")
    path = _warehouse_path(ctx, warehouse_path, create=not apply_reviews)
    console.use_project_prefect(Path.cwd(), os.environ)
    with console.cancel_on_signals():
        console.temporary_server(os.environ)
        from flows.build_split import build_split

        console.take_sigterm()
        console.one_line_errors_in_prefect_console()
        with progress.bars(err):
            state = build_split(
                split=split,
                limit=limit,
                instances=instances,
                label=label,
                warehouse_path=str(path),
                runner=runner,
                dask_address=dask_address,
                apply_reviews=apply_reviews,
                llm_budget_usd=llm_budget_usd,
                return_state=True,
            )
        version = console.outcome(state)
    out.print(f"{version['version_id']}: {json.dumps(version['counts'])}")
    for note in version.get("notes", []):
        out.print(f"note: {note}")


def audit_command(
    ctx: typer.Context,
    splits_to_audit: Annotated[
        list[str] | None,
        typer.Argument(help="Splits to audit (default: each configured split with a version)."),
    ] = None,
    llm_backend: Annotated[
        str | None,
        typer.Option(help="Judge with this backend (default: the one that built the version)."),
    ] = None,
    llm_model: Annotated[
        str | None,
        typer.Option(help="Judge with this model (default: the one that built the version)."),
    ] = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Re-run the leakage audit on each split's latest version; exit 1 if an instance fails.

    Without names, a split with no version yet is named and skipped. The model that built a
    version judges it; a shell whose INSPIRE_LLM_BACKEND/_MODEL name another is refused unless
    --llm-backend/--llm-model say so."""
    from flows import console

    for name in splits_to_audit or []:
        _check_split(ctx, name)
    path = _warehouse_path(ctx, warehouse_path)
    console.use_project_prefect(Path.cwd(), os.environ)
    with console.cancel_on_signals():
        console.temporary_server(os.environ)
        from flows.audit import main as audit_main

        console.take_sigterm()
        console.one_line_errors_in_prefect_console()
        code = audit_main(splits_to_audit or [], path, (llm_backend, llm_model))
    if code:
        raise typer.Exit(code)
