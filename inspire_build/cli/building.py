"""Building a split and what follows it: `gold`, `build`, `audit`, `export`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inspire_build import (
    warehouse,
)
from inspire_build.config import get_settings
from inspire_build.errors import InputError
from inspire_build.ids import parse_any_id
from inspire_build.pipeline import check_sources

if TYPE_CHECKING:
    pass
from inspire_build.cli.common import (
    WarehouseOption,
    _check_output_folder,
    _check_split,
    _Context,
    _warehouse_path,
    app,
    err,
    gold_app,
    out,
)


@gold_app.command("make")
def gold_make(
    ctx: typer.Context,
    paper_ids: Annotated[list[str], typer.Argument(help="Resolved targets, by any known ID.")],
    llm_batch: Annotated[
        bool,
        typer.Option(
            "--llm-batch", help="Send the LLM requests as OpenAI Batch API jobs.", metavar=""
        ),
    ] = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Brief each target, audit it four ways (redrafting on a leak), grade its antecedents."""
    from inspire_build import gold

    root: _Context = ctx.obj
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        known = warehouse.crosswalk(con)
        targets = []
        for raw in paper_ids:
            parsed = parse_any_id(raw)
            if parsed not in known:
                raise InputError(
                    f"{raw} has no resolved lineage; run `inspire lineage resolve` first"
                )
            targets.append(known[parsed])
        llm = gold.make_llm(root.settings, con)
        if llm_batch:
            outcomes = gold.run_batched(llm, con, root.settings, targets, say=out.print)
        else:
            outcomes = gold.run(llm, con, root.settings, targets)
    for outcome in outcomes:
        out.print(f"{outcome.target_id}: {outcome.status.value}: {outcome.reason}")
    out.print(
        f"{llm.calls_made} LLM call(s) made ({llm.backend}, {llm.model}); the rest from the log"
    )


@app.command("build")
def build(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="The split to build (train, eval).")] = "eval",
    limit: Annotated[int | None, typer.Option(help="Most targets.", min=1)] = None,
    label: Annotated[str | None, typer.Option(help="A label for the version.")] = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Run the build-split flow in this process and print the version it wrote."""
    from flows import console, progress

    _check_split(ctx, split)
    check_sources(get_settings())
    path = _warehouse_path(ctx, warehouse_path, create=True)
    console.use_project_prefect(Path.cwd(), os.environ)
    with console.cancel_on_signals():
        console.temporary_server(os.environ)
        from flows.build_split import build_split

        console.take_sigterm()
        console.one_line_errors_in_prefect_console()
        with progress.bars(err):
            state = build_split(
                split=split, limit=limit, label=label, warehouse_path=str(path), return_state=True
            )
        version = console.outcome(state)
    out.print(f"{version['version_id']}: {json.dumps(version['counts'])}")
    for note in version.get("notes", []):
        out.print(f"note: {note}")


@app.command("audit")
def audit_command(
    ctx: typer.Context,
    splits_to_audit: Annotated[
        list[str] | None,
        typer.Argument(help="Splits to audit (default: each configured split with a version)."),
    ] = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Re-run the leakage audit on each split's latest version; exit 1 if an instance fails.

    Without names, a split with no version yet is named and skipped."""
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
        code = audit_main(splits_to_audit or [], path)
    if code:
        raise typer.Exit(code)


@app.command("export")
def export_command(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="The split to export.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")],
    version: Annotated[str | None, typer.Option(help="A version ID (default: latest).")] = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Write public instances, private qrels/antecedents/targets and the dataset card.

    All or nothing: a public side that leaks fails the export and leaves no public file."""
    from inspire_build import exports

    _check_split(ctx, split, version, warehouse_path)
    _check_output_folder(out_dir, "--out")
    root: _Context = ctx.obj
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        hashes = exports.export(con, root.settings, split, version, out_dir)
    for name, digest in hashes.items():
        print(f"{digest}  {name}")
    out.print((out_dir / "dataset_card.md").read_text(encoding="utf-8"))
