"""Targets and their lineage: `targets`, `lineage`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from inspire_build.cli.common import (
    JsonOption,
    OfflineOption,
    WarehouseOption,
    _client,
    _Context,
    _parse_date,
    check_split,
    err,
    lineage_app,
    out,
    targets_app,
)
from inspire_build.errors import InputError
from inspire_build.ids import parse_any_id
from inspire_build.models import Source


@targets_app.command("select")
def targets_select(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="A split name from the settings (train, eval).")],
    limit: Annotated[int | None, typer.Option(help="Most targets to select.", min=1)] = None,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Find a split's candidates in OpenAlex and record each with a status and a reason."""
    from inspire_build import selection

    check_split(ctx, split)
    root: _Context = ctx.obj
    with _client(ctx, warehouse_path, offline) as (client, con):
        chosen = selection.select_targets(client, con, root.settings, split, limit)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(chosen.statuses.items()))
    out.print(f"split {split}: {chosen.candidates} candidate(s) from OpenAlex ({counts})")
    for paper_id in chosen.selected:
        print(paper_id)


def _parse_sources(text: str) -> list[Source]:
    """``"s2,openalex"`` -> sources, with a clear error naming the valid ones."""
    chosen = []
    for name in (t.strip() for t in text.split(",") if t.strip()):
        try:
            chosen.append(Source(name))
        except ValueError:
            raise InputError(f"unknown source {name!r}; known: openalex, s2, arxiv") from None
    if not chosen:
        raise InputError("no source given")
    return chosen


def _check_ids(raw_ids: list[str]) -> None:
    """Refuse a junk ID before any work starts (InvalidIdError is an InputError: exit 2)."""
    for raw in raw_ids:
        parse_any_id(raw)


@lineage_app.command("resolve")
def lineage_resolve(
    ctx: typer.Context,
    paper_ids: Annotated[list[str], typer.Argument(help="Target IDs in any known scheme.")],
    split: Annotated[str, typer.Option(help="The split the targets are recorded under.")] = (
        "adhoc"
    ),
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Resolve targets' lineage and write papers, IDs, references, targets and completeness."""
    from inspire_build import boundary_store, lineage_rows, resolve
    from inspire_build.tables import crosswalk as crosswalk_table

    root: _Context = ctx.obj
    _check_ids(paper_ids)
    with _client(ctx, warehouse_path, offline) as (client, con):
        results = resolve.resolve_lineage(
            paper_ids,
            client,
            existing=crosswalk_table.crosswalk(con),
            cutoff_offset=boundary_store.cutoff_offsets(con, root.settings),
        )
        lineage_rows.write(con, results, split, resolve.ALL_SOURCES)
    for result in results:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items()))
        out.print(
            f"{result.work.paper_id}: first public {result.target_date}, cutoff "
            f"{result.cutoff}; {len(result.references)} references ({counts or 'none'}); "
            f"{result.status.value}: {result.reason}"
        )


@lineage_app.command("show")
def lineage_show(
    ctx: typer.Context,
    paper_id: Annotated[str, typer.Argument(help="A target ID in any known scheme.")],
    target_date: Annotated[
        str | None, typer.Option(help="The target's first public date, YYYY-MM-DD, if unknown.")
    ] = None,
    sources: Annotated[str, typer.Option(help="Sources to use, comma-separated.")] = (
        "openalex,s2,arxiv"
    ),
    offline: OfflineOption = False,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Print each reference with its status, reason and first public date (writes nothing)."""
    from inspire_build import resolve

    _check_ids([paper_id])
    chosen = _parse_sources(sources)
    dates = {paper_id: _parse_date(target_date)} if target_date else {}
    with _client(ctx, warehouse_path, offline) as (client, _):
        result = resolve.resolve_lineage([paper_id], client, sources=chosen, target_dates=dates)[0]
    # with --json, standard output holds JSON lines only: the heading goes to standard error
    (err if as_json else out).print(
        f"# {result.work.paper_id}: first public {result.target_date}, cutoff "
        f"{result.cutoff}; {result.status.value}: {result.reason}"
    )
    for reference in result.references:
        line = {
            "status": reference.status.value,
            "reason": reference.reason,
            "first_public_date": reference.date.date.isoformat() if reference.date else None,
            "date_source": reference.date.source.value if reference.date else None,
            "date_precision": reference.date.precision.value if reference.date else None,
            "title": reference.entry.title,
            "ids": {p.scheme.value: p.value for p in reference.entry.ids},
            "sources": [s.value for s in reference.entry.sources],
        }
        if as_json:
            print(json.dumps(line, ensure_ascii=False))
        else:
            when = f"{line['first_public_date'] or '-'} ({line['date_source'] or '-'})"
            print(f"{line['status']:<19} {when:<24} {line['title'] or '(no title)'}")
