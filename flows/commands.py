"""``inspire build`` and ``inspire audit``: each runs its flow in the CLI's own process, so that
the run shows in Prefect's UI. The CLI finds them by their entry points (pyproject.toml); their
options and checks are :mod:`inspire_build.cli.flow_options`. Prefect and the flows are imported
only as a command runs, once :func:`console.in_process` has pointed it at the project's Prefect."""

from __future__ import annotations

import typer

from inspire_build import progress
from inspire_build.cli import flow_options
from inspire_build.cli.common import WarehouseOption, err


def build(
    ctx: typer.Context,
    split: flow_options.BuildSplitOption = "eval",
    limit: flow_options.LimitOption = None,
    instances: flow_options.InstancesOption = None,
    label: flow_options.LabelOption = None,
    runner: flow_options.RunnerOption = None,
    dask_address: flow_options.DaskAddressOption = None,
    apply_reviews: flow_options.ApplyReviewsOption = False,
    llm_budget_usd: flow_options.BudgetOption = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Run the build-split flow in this process and print the version it wrote."""
    from flows import console

    asked = flow_options.BuildAsked(
        split, limit, instances, label, runner, dask_address, apply_reviews, llm_budget_usd
    )
    path = flow_options.checked_build(ctx, warehouse_path, asked)
    with console.in_process():
        from flows.build_split import build_split

        with progress.bars(err, console.printed_through):
            state = build_split(**asked._asdict(), warehouse_path=str(path), return_state=True)
        version = console.outcome(state)
    flow_options.print_version(version)


def audit_command(
    ctx: typer.Context,
    splits_to_audit: flow_options.SplitsArgument = None,
    llm_backend: flow_options.JudgeBackendOption = None,
    llm_model: flow_options.JudgeModelOption = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Re-run the leakage audit on each split's latest version; exit 1 if an instance fails.

    Without names, a split with no version yet is named and skipped. The model that built a
    version judges it; a shell whose INSPIRE_LLM_BACKEND/_MODEL name another is refused unless
    --llm-backend/--llm-model say so."""
    from flows import console

    path = flow_options.checked_audit(ctx, splits_to_audit, warehouse_path)
    with console.in_process():
        from flows.audit import main as audit_main

        code = audit_main(splits_to_audit or [], path, (llm_backend, llm_model))
    if code:
        raise typer.Exit(code)
