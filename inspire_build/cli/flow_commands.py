"""``inspire build`` and ``inspire audit``: each runs its flow in the CLI's own process, so that
the run shows in Prefect's UI. The package never imports flows/: a command checks what it was
asked (:mod:`inspire_build.cli.flow_options`), then calls the runner that flows/ declares under
its name in the entry points of the group :data:`FLOWS_GROUP` (pyproject.toml)."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

import typer

from inspire_build import progress
from inspire_build.cli import flow_options
from inspire_build.cli.auditing import AuditCommand
from inspire_build.cli.common import WarehouseOption, err
from inspire_build.errors import InspireError

FLOWS_GROUP = "inspire_build.flows"
FLOW_COMMANDS = ("build", "audit")  # listed first by `inspire --help`, in this order


def flow_runner(name: str) -> Callable[..., Any]:
    """The runner of ``inspire NAME`` that flows/ declares; where flows/ is missing or broken,
    a one-line error that says so."""
    point = next((p for p in entry_points(group=FLOWS_GROUP) if p.name == name), None)
    if point is None:
        why = f"no entry point {name!r} in the group {FLOWS_GROUP}"
    else:
        try:
            runner: Callable[..., Any] = point.load()
            return runner
        except (ImportError, AttributeError) as error:
            why = f"its entry point {point.value} does not load ({error})"
    raise InspireError(
        f"`inspire {name}` is not installed: {why}. It comes with the flows/ package: reinstall "
        "inspire-build with it (in a checkout: pip install -e .), which registers its entry "
        "points"
    )


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
    run = flow_runner("build")
    asked = flow_options.BuildAsked(
        split, limit, instances, label, runner, dask_address, apply_reviews, llm_budget_usd
    )
    path = flow_options.checked_build(ctx, warehouse_path, asked)
    parameters = {**asked._asdict(), "warehouse_path": str(path)}
    version = run(parameters, lambda above: progress.bars(err, above))
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
    run = flow_runner("audit")
    path = flow_options.checked_audit(ctx, splits_to_audit, warehouse_path)
    code = run(splits_to_audit or [], path, (llm_backend, llm_model))
    if code:
        raise typer.Exit(code)


def register(target: typer.Typer) -> None:
    """Add ``build`` and ``audit`` to ``target``, in :data:`FLOW_COMMANDS`' order."""
    target.command("build")(build)
    target.command(
        "audit",
        cls=AuditCommand,
        epilog="`inspire audit brief --split S --instance ID --text FILE` runs the same checks "
        "on any text for one instance (see `inspire audit brief --help`).",
    )(audit_command)
