"""Building a split and what follows it: `gold`, `export`. (`build` and `audit` run the flows:
they live in cli/flow_commands.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from inspire_build import warehouse
from inspire_build.cli.common import (
    JsonOption,
    WarehouseOption,
    _check_output_folder,
    _Context,
    app,
    check_split,
    gold_app,
    out,
    warehouse_of,
)
from inspire_build.errors import InputError
from inspire_build.ids import parse_any_id


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
    """Brief each target, audit it five ways (redrafting on a leak), grade its antecedents."""
    from inspire_build import gold
    from inspire_build.sources import make_client
    from inspire_build.tables import crosswalk as crosswalk_table

    root: _Context = ctx.obj
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        known = crosswalk_table.crosswalk(con)
        targets = []
        for raw in paper_ids:
            parsed = parse_any_id(raw)
            if parsed not in known:
                raise InputError(
                    f"{raw} has no resolved lineage; run `inspire lineage resolve` first"
                )
            targets.append(known[parsed])
        llm, client = gold.make_llm(root.settings, con), make_client(root.settings, con)
        if llm_batch:
            outcomes = gold.run_batched(
                llm, con, root.settings, targets, say=out.print, client=client
            )
        else:
            outcomes = gold.run(llm, con, root.settings, targets, client=client)
    for outcome in outcomes:
        out.print(f"{outcome.target_id}: {outcome.status.value}: {outcome.reason}")
    out.print(
        f"{llm.calls_made} LLM call(s) made ({llm.backend}, {llm.model}); the rest from the log"
    )


@app.command("export")
def export_command(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="The split to export.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")],
    version: Annotated[str | None, typer.Option(help="A version ID (default: latest).")] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Export a version whose latest audit did not pass; the card says so, and why.",
            metavar="",
        ),
    ] = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Write public instances, private qrels/antecedents/targets and the dataset card.

    Only a version whose latest `inspire audit` passed, unless --force. All or nothing: a public
    side that leaks fails the export and leaves no public file."""
    from inspire_build import exports

    check_split(ctx, split, version, warehouse_path)
    _check_output_folder(out_dir, "--out")
    root: _Context = ctx.obj
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        hashes = exports.export(con, root.settings, split, version, out_dir, force)
    for name, digest in hashes.items():
        print(f"{digest}  {name}")
    out.print((out_dir / "dataset_card.md").read_text(encoding="utf-8"))


@app.command("plan")
def plan_command(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="The split to plan (train, eval).")] = "eval",
    instances: Annotated[
        int | None, typer.Option(help="The instances the build would walk to.", min=1)
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Most candidates to select.", min=1)] = None,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Before anything is spent: the candidates, the HTTP calls, the LLM calls, tokens and cost,
    and the wall time a build would take. Lists the candidates (kept in the raw store, so the
    build asks no listing twice); makes no LLM call."""
    from inspire_build import pipeline, plan, selection
    from inspire_build.sources import make_client

    check_split(ctx, split)
    root: _Context = ctx.obj
    settings = root.settings.overridden(split, limit=limit, instances=instances)
    pipeline.check_openalex_key(settings)  # at once, as a build would: not after six retries
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path, create=True)) as con:
        works, _ = selection.listing(make_client(settings, con), con, settings, split)
        planned = pipeline.plan_of(
            settings, split, works, pipeline.measured_rates(con, settings, split)
        )
    if as_json:
        print(json.dumps(planned.figures()))
        return
    for line in plan.lines(planned, settings.llm_model):
        out.print(line)
