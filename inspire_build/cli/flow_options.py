"""The options of ``inspire build`` and ``inspire audit``, what those commands check before their
flow starts, and what ``build`` prints after it. The commands are
:mod:`inspire_build.cli.flow_commands`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from inspire_build.cli.common import check_split, out, warehouse_of
from inspire_build.config import get_settings

BuildSplitOption = Annotated[str, typer.Option(help="The split to build (train, eval).")]
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
LabelOption = Annotated[str | None, typer.Option(help="A label for the version.")]
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

SplitsArgument = Annotated[
    list[str] | None,
    typer.Argument(help="Splits to audit (default: each configured split with a version)."),
]
JudgeBackendOption = Annotated[
    str | None,
    typer.Option(help="Judge with this backend (default: the one that built the version)."),
]
JudgeModelOption = Annotated[
    str | None,
    typer.Option(help="Judge with this model (default: the one that built the version)."),
]


class BuildAsked(NamedTuple):
    """What ``inspire build`` was asked: the build-split flow's parameters, the warehouse
    aside."""

    split: str
    limit: int | None
    instances: int | None
    label: str | None
    runner: str | None
    dask_address: str | None
    apply_reviews: bool
    llm_budget_usd: float | None


def checked_build(ctx: typer.Context, given: Path | None, asked: BuildAsked) -> Path:
    """Refuse what ``inspire build`` was ``asked`` in one line, before any warehouse or Prefect
    server is touched; returns the warehouse to build into (``given``, else the root's
    --warehouse or the setting)."""
    check_split(ctx, asked.split)
    if asked.apply_reviews and (
        asked.limit or asked.instances or asked.runner or asked.dask_address
    ):
        raise typer.BadParameter(
            "--apply-reviews writes from the latest version's records and runs no step, so it "
            "takes no --limit, --instances, --runner or --dask-address",
            param_hint="--apply-reviews",
        )
    settings = get_settings().overridden(
        asked.split,
        limit=asked.limit,
        instances=asked.instances,
        runner=asked.runner,
        dask_address=asked.dask_address,
        llm_budget_usd=asked.llm_budget_usd,
    )
    if not asked.apply_reviews:
        from inspire_build.driver.steps import check_sources  # the build's modules: build alone

        check_sources(settings, asked.split)
    if asked.dask_address and settings.runner != "dask":
        raise typer.BadParameter("--dask-address needs --runner dask", param_hint="--dask-address")
    return warehouse_of(ctx, given, create=not asked.apply_reviews)


def print_version(version: Mapping[str, Any]) -> None:
    """The version a build wrote: its ID and counts, then its notes."""
    out.print(f"{version['version_id']}: {json.dumps(version['counts'])}")
    for note in version.get("notes", []):
        out.print(f"note: {note}")


def checked_audit(ctx: typer.Context, names: list[str] | None, given: Path | None) -> Path:
    """Refuse an unknown split, or a warehouse that is not there, before any Prefect server
    starts; returns the warehouse to audit."""
    for name in names or []:
        check_split(ctx, name)
    return warehouse_of(ctx, given)
