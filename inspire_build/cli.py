"""The ``inspire`` command: a thin typer CLI.

Commands call library functions and print. Errors raised inside are translated into a one-line
message and an exit code here, once, in :func:`main`: 2 for bad input, 3 for a locked
warehouse, 1 for anything else the product raised on purpose.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pydantic
import typer
from rich.console import Console
from rich.table import Table

from inspire_build import warehouse
from inspire_build.config import Settings, get_settings
from inspire_build.errors import InspireError, InvalidIdError
from inspire_build.ids import parse_any_id

app = typer.Typer(
    help="Build INSPIRE-style literature-search benchmarks and score agents on them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
warehouse_app = typer.Typer(help="Create and inspect the DuckDB warehouse.", no_args_is_help=True)
ids_app = typer.Typer(help="Normalise paper identifiers.", no_args_is_help=True)
app.add_typer(warehouse_app, name="warehouse")
app.add_typer(ids_app, name="ids")

# Messages stay on one line when piped (soft_wrap), and text from data or errors is printed as
# is, never read as rich markup.
out = Console(soft_wrap=True, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)

WarehouseOption = Annotated[
    Path | None,
    typer.Option(
        "--warehouse",
        help="DuckDB warehouse file. Default: $INSPIRE_WAREHOUSE, else warehouse/inspire.duckdb.",
        dir_okay=False,
    ),
]


@dataclass(frozen=True)
class _Context:
    settings: Settings
    warehouse: Path


@app.callback()
def _root(ctx: typer.Context, warehouse_path: WarehouseOption = None) -> None:
    # Settings are read here, for every command, so a bad environment fails loudly and early.
    settings = get_settings()
    ctx.obj = _Context(settings=settings, warehouse=warehouse_path or settings.warehouse)


def _warehouse_path(ctx: typer.Context, given: Path | None) -> Path:
    """The command's --warehouse, else the root's --warehouse or the setting."""
    root: _Context = ctx.obj
    return given or root.warehouse


@warehouse_app.command("init")
def warehouse_init(ctx: typer.Context, warehouse_path: WarehouseOption = None) -> None:
    """Create the warehouse if needed and apply every pending migration."""
    path = _warehouse_path(ctx, warehouse_path)
    con = warehouse.connect(path)
    try:
        applied = warehouse.migrate(con)
        count = len(warehouse.relations(con))
    finally:
        con.close()
    if applied:
        out.print(f"{path}: applied {len(applied)} migration(s): {', '.join(applied)}")
    else:
        out.print(f"{path}: up to date, nothing to apply")
    out.print(f"{count} tables and views")


@warehouse_app.command("status")
def warehouse_status(ctx: typer.Context, warehouse_path: WarehouseOption = None) -> None:
    """List every table and view of the warehouse with its row count."""
    path = _warehouse_path(ctx, warehouse_path)
    con = warehouse.connect(path, read_only=True)
    try:
        done = warehouse.applied_migrations(con)
        rows = warehouse.relations(con)
    finally:
        con.close()
    pending = [m.name for m in warehouse.load_migrations() if m.name not in done]
    table = Table(title=str(path))
    table.add_column("name")
    table.add_column("kind")
    table.add_column("rows", justify="right")
    for relation in rows:
        table.add_row(relation.name, relation.kind, f"{relation.rows:,}")
    out.print(table)
    if pending:
        out.print(f"pending migrations: {', '.join(pending)} (run `inspire warehouse init`)")


@ids_app.command("normalize")
def ids_normalize(
    identifiers: Annotated[list[str], typer.Argument(help="IDs in any known scheme.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
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


def main() -> None:
    """Entry point of the ``inspire`` script: runs the app and translates errors once."""
    try:
        app()
    except InspireError as error:
        err.print(f"error: {error}")
        sys.exit(error.exit_code)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        err.print(f"error: invalid configuration: {problems}")
        sys.exit(2)


if __name__ == "__main__":
    main()
