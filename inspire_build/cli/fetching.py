"""Identifiers and single fetches from the sources: `ids`, `fetch`."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated

import typer

from inspire_build.cli.common import (
    JsonOption,
    OfflineOption,
    WarehouseOption,
    _client,
    _emit,
    err,
    fetch_app,
    ids_app,
    paper_line,
    reference_line,
)
from inspire_build.errors import InvalidIdError
from inspire_build.ids import parse_any_id
from inspire_build.models import Source


@ids_app.command("normalize")
def ids_normalize(
    identifiers: Annotated[list[str], typer.Argument(help="IDs in any known scheme.")],
    as_json: JsonOption = False,
) -> None:
    """Print each ID in canonical `scheme:value` form, one per line.

    Accepts arXiv IDs (any style, version, URL or DataCite DOI), DOIs (bare, doi: or URL),
    OpenAlex W-ids, S2 paperIds and CorpusId:N. Exits 2 if any ID is junk.
    """
    junk = 0
    for text in identifiers:
        try:
            paper_id = parse_any_id(text)
        except InvalidIdError as error:
            junk += 1
            err.print(f"error: {error}")
            continue
        if as_json:
            record = {"input": text, "scheme": paper_id.scheme.value, "value": paper_id.value}
            print(json.dumps(record))
        else:
            print(paper_id)
    if junk:
        raise typer.Exit(code=InvalidIdError.exit_code)


class ReferenceSource(StrEnum):
    s2 = "s2"
    openalex = "openalex"
    both = "both"


@fetch_app.command("paper")
def fetch_paper(
    ctx: typer.Context,
    paper_id: Annotated[str, typer.Argument(help="A paper ID in any known scheme.")],
    source: Annotated[
        Source | None,
        typer.Option(help="Default: by the ID's scheme (W-id and DOI: openalex; arXiv: arxiv)."),
    ] = None,
    offline: OfflineOption = False,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Fetch one paper's metadata, recording the response in the raw store."""
    from inspire_build import sources  # its clients (httpx, lxml): the fetching commands' alone

    chosen = source.value if source else sources.default_source(paper_id)
    with _client(ctx, warehouse_path, offline) as (client, _):
        paper = sources.fetch_paper(client, paper_id, chosen)
    _emit([paper_line(paper)], as_json)


@fetch_app.command("references")
def fetch_references(
    ctx: typer.Context,
    paper_id: Annotated[str, typer.Argument(help="A paper ID in any known scheme.")],
    source: Annotated[ReferenceSource, typer.Option(help="Which reference list.")] = (
        ReferenceSource.s2
    ),
    offline: OfflineOption = False,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Fetch a paper's references: S2 (with contexts and intents), OpenAlex, or both lists."""
    from inspire_build import sources

    names = ["s2", "openalex"] if source is ReferenceSource.both else [source.value]
    with _client(ctx, warehouse_path, offline) as (client, _):
        lines = [
            reference_line(reference)
            for name in names
            for reference in sources.fetch_references(client, paper_id, name)
        ]
    _emit(lines, as_json)
