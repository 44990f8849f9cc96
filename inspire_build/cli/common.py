"""What every command shares: the app and its sub-apps, the global options, the consoles, the
helpers that print, and :func:`main`, which translates errors once."""

from __future__ import annotations

import atexit
import datetime as dt
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import duckdb
import pydantic
import typer
from rich.console import Console
from rich.table import Table

from inspire_build import (
    gc_policy,
    warehouse,
)
from inspire_build.config import Settings, get_settings
from inspire_build.errors import InputError, InspireError
from inspire_build.models import Paper, PaperIds, Reference, ReferenceStatus

if TYPE_CHECKING:
    from inspire_build.http import HttpClient  # requests: the fetching commands' alone


def _plain_help_flag() -> None:
    """typer 0.29 shows the built-in flag as `--help <bool>`; a flag takes no value, so its help
    names none, like every flag of ours (``metavar=""``). Set on typer's public command classes."""
    for command in (typer.core.TyperCommand, typer.core.TyperGroup):
        made = command.get_help_option
        if getattr(made, "plain", False):
            continue

        def get_help_option(self: Any, ctx: Any, made: Any = made) -> Any:
            option = made(self, ctx)
            if option is not None:
                option.metavar = ""
            return option

        get_help_option.plain = True  # type: ignore[attr-defined]
        command.get_help_option = get_help_option  # type: ignore[method-assign]


_plain_help_flag()

app = typer.Typer(
    help="Build INSPIRE-style literature-search benchmarks and score agents on them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _sub_app(name: str, summary: str) -> typer.Typer:
    """The family of commands `inspire NAME ...`, added to the app; called bare, it shows its
    help."""
    family = typer.Typer(help=summary, no_args_is_help=True)
    app.add_typer(family, name=name)
    return family


# In the order `inspire --help` lists them.
gold_app = _sub_app("gold", "Briefs, leakage audits and grades for resolved targets.")
targets_app = _sub_app("targets", "Select a split's candidate target papers.")
lineage_app = _sub_app(
    "lineage", "Merge targets' references across sources, date them, apply the cutoff."
)
stats_app = _sub_app("stats", "Statistics read from the warehouse.")
warehouse_app = _sub_app("warehouse", "Create and inspect the DuckDB warehouse.")
sandbox_app = _sub_app(
    "sandbox", "The local emulator of OpenAlex, S2, arXiv and an OpenAI-compatible API."
)
ids_app = _sub_app("ids", "Normalise paper identifiers.")
fetch_app = _sub_app(
    "fetch", "Fetch papers and references from OpenAlex, Semantic Scholar or arXiv."
)
snapshot_app = _sub_app("snapshot", "Import, export and inspect the raw response store.")
corpus_app = _sub_app("corpus", "The search corpus the agent environment's local backend searches.")
env_app = _sub_app("env", "The agent search environment: leak audit, HTTP tool server, MCP server.")
agent_app = _sub_app("agent", "Run baseline agents in the search environment.")
hindsight_app = _sub_app(
    "hindsight", "Hindsight demonstrations from a train split's gold, exported as SFT data."
)
key_app = _sub_app(
    "key", "The warehouse's secret instance key (keys instance IDs and cutoff offsets)."
)

# Messages stay on one line when piped (soft_wrap), and text from data or errors is printed as
# is, never read as rich markup.
out = Console(soft_wrap=True, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)


@contextmanager
def progress_bars() -> Iterator[Any]:
    """A rich Progress on stderr for a command's long work: add a task per bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        yield progress


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


def _print_version(wanted: bool) -> None:
    if wanted:
        import inspire_build

        out.print(f"inspire {inspire_build.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    warehouse_path: WarehouseOption = None,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the package's version and exit.",
            callback=_print_version,
            is_eager=True,  # before the settings are read: it works whatever the environment
            metavar="",
        ),
    ] = False,
) -> None:
    # Settings are read here, for every command, so a bad environment fails loudly and early.
    settings = get_settings()
    ctx.obj = _Context(settings=settings, warehouse=warehouse_path or settings.warehouse)


def warehouse_of(ctx: typer.Context, given: Path | None, *, create: bool = False) -> Path:
    """The command's --warehouse, else the root's --warehouse or the setting.

    Only the commands that make a warehouse pass ``create``; every other one refuses a path
    that holds none, so that a typo is an error and not a new, empty warehouse.
    """
    root: _Context = ctx.obj
    path = given or root.warehouse
    if not create:
        warehouse.require(path)
    return path


def check_split(
    ctx: typer.Context,
    split: str | None,
    version: str | None = None,
    warehouse_path: Path | None = None,
) -> None:
    """Refuse a split the settings do not name, a version the warehouse does not hold, or one
    of another split, in one line, before anything opens the warehouse for writing or starts a
    Prefect server.

    Every command that takes a split or a version calls this first.
    """
    from inspire_build import splits

    root: _Context = ctx.obj
    if split is not None:
        root.settings.split(split)
    if version is not None:
        con = warehouse.connect(warehouse_of(ctx, warehouse_path), read_only=True)
        try:
            splits.check_version(con, version, split if _given(ctx, "split") else None)
        finally:
            con.close()


def _where(loc: tuple[int | str, ...], setting: bool) -> str:
    """Where a value failed validation; a setting by its environment variable."""
    parts = [str(part) for part in loc]
    if setting and parts:
        parts[0] = f"INSPIRE_{parts[0].upper()}"
    return ".".join(parts)


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` (a command's default split is no claim about a
    version they name). Click's ParameterSource, by name: click is typer's, not ours."""
    source = ctx.get_parameter_source(name)
    return source is None or source.name not in ("DEFAULT", "DEFAULT_MAP")


def _check_output_folder(path: Path, option: str) -> None:
    """Refuse an output folder that is a file, or that cannot be made, before any work."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{option} {path} is a file; give a folder")
    parent = path.absolute()
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{option} {path} cannot be made: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path} cannot be made: {parent} is not writable")


# Every bool option is a plain flag, off by default. metavar="" because typer's help otherwise
# shows a flag as if it took a value (`--json <bool>`).
OfflineOption = Annotated[
    bool,
    typer.Option(
        "--offline", help="Replay mode: answer only from the raw response store.", metavar=""
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.", metavar="")]
BackendOption = Annotated[str, typer.Option("--backend", help="local (corpus bm25) or openalex.")]
BudgetOption = Annotated[
    int, typer.Option("--budget", help="Tool calls (search, read) per instance.", min=0)
]
SplitOption = Annotated[str, typer.Option("--split", help="The split to run on.")]
VersionOption = Annotated[
    str | None, typer.Option("--version", help="A version ID (default: latest).")
]


def _read(
    ctx: typer.Context,
    given: Path | None,
    reader: Callable[[duckdb.DuckDBPyConnection], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """A table module's rows, read from the warehouse opened read-only."""
    con = warehouse.connect(warehouse_of(ctx, given), read_only=True)
    try:
        return reader(con)
    finally:
        con.close()


def _print_rows(
    rows: list[dict[str, Any]], as_json: bool, title: str, left: tuple[str, ...]
) -> bool:
    """Print rows as JSON lines or a table. True when JSON was printed (nothing more to add)."""
    if as_json:
        for row in rows:
            print(json.dumps(row, default=str))
        return True
    cells = [[_text(v) for v in row.values()] for row in rows]
    names = list(rows[0]) if rows else []
    widths = [max([len(n), *(len(row[i]) for row in cells)]) for i, n in enumerate(names)]
    if sum(widths) + 3 * len(widths) + 1 > out.width:  # folded, a number is no number
        _print_records(title, names, cells, left)
        return False
    table = Table(title=title)
    for name in names:
        justify: Literal["left", "right"] = "left" if name in left else "right"
        table.add_column(name, justify=justify, no_wrap=True)
    for row_cells in cells:
        table.add_row(*row_cells)
    out.print(table)
    return False


def _text(value: Any) -> str:
    """A cell: a list joined by commas, an object as its pairs, NULL as a dash (not "None")."""
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _print_records(
    title: str, names: list[str], cells: list[list[str]], left: tuple[str, ...]
) -> None:
    """Rows too wide for the terminal, one block each: the naming columns on the first line,
    every other column as ``name value`` below, so nothing is cut or folded."""
    out.print(title)
    for row in cells:
        named = [v for n, v in zip(names, row, strict=True) if n in left]
        rest = [f"{n} {v}" for n, v in zip(names, row, strict=True) if n not in left]
        out.print("")
        out.print("  ".join(named) or "-", soft_wrap=True)
        out.print("  " + "; ".join(rest), soft_wrap=True)


def _parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(f"not a date (YYYY-MM-DD): {text!r}") from None


@contextmanager
def _client(
    ctx: typer.Context, given: Path | None, offline: bool
) -> Iterator[tuple[HttpClient, duckdb.DuckDBPyConnection]]:
    """A client recording into the warehouse, and that warehouse's connection."""
    from inspire_build.sources import make_client  # the sources' clients: their commands alone

    root: _Context = ctx.obj
    with warehouse.open_warehouse(warehouse_of(ctx, given)) as con:
        yield make_client(root.settings, con, mode="replay" if offline else None), con


def _ids_map(paper_ids: PaperIds) -> dict[str, str]:
    return {p.scheme.value: p.value for p in paper_ids.typed()}


def paper_line(paper: Paper) -> dict[str, object]:
    """The JSON line of ``inspire fetch paper``. What the source did not give is null."""
    return {
        "source": paper.source.value,
        "title": paper.title,
        "publication_date": paper.publication_date.isoformat() if paper.publication_date else None,
        "year": paper.year,
        "ids": _ids_map(paper.ids),
        "abstract": paper.abstract,
        "referenced_works": list(paper.referenced_works)
        if paper.referenced_works is not None
        else None,
        "fields": list(paper.fields) or None,
        "versions": [{"version": v.version, "date": v.date.isoformat()} for v in paper.versions]
        if paper.versions is not None
        else None,
        "venue": paper.venue,
        "authors": list(paper.authors) or None,
        "reference_count": paper.reference_count,
        "problems": list(paper.problems),  # fields the source gave with the wrong type
    }


def reference_line(reference: Reference) -> dict[str, object]:
    """The JSON line of ``inspire fetch references``. What the source did not give is null."""
    return {
        "source": reference.provenance[0].source.value if reference.provenance else None,
        "title": reference.title,
        "year": reference.year,
        "publication_date": reference.publication_date.isoformat()
        if reference.publication_date
        else None,
        "ids": _ids_map(reference.ids),
        "resolved": reference.status is not ReferenceStatus.UNRESOLVED,
        "contexts": list(reference.contexts) if reference.contexts is not None else None,
        "intents": list(reference.intents) if reference.intents is not None else None,
        "is_influential": reference.is_influential,
        "reason": reference.reason,
    }


def _emit(lines: list[dict[str, object]], as_json: bool) -> None:
    for line in lines:
        if as_json:
            print(json.dumps(line, ensure_ascii=False))
        else:
            title = line.get("title") or "(no title)"
            when = line.get("publication_date") or line.get("year") or "undated"
            known = line.get("ids")
            shown = (
                " ".join(f"{k}:{v}" for k, v in known.items()) if isinstance(known, dict) else ""
            )
            print(f"{when}  {title}  [{shown or 'no IDs'}]")


def main() -> None:
    """Entry point of the ``inspire`` script: runs the app and translates errors once."""
    # At exit the interpreter's last collection walks the whole heap: about 1 s after a build of
    # 60 targets. Registered here, this runs after the exit handlers the command registers
    # (Prefect's log and event flushes) and lets the process end at once. Objects left in
    # reference cycles are then never finalized: every connection is closed before this.
    atexit.register(gc.freeze)
    gc_policy.collect_less()
    warehouse.hide_pandas()  # no command needs it; DuckDB would import it (0.6 CPU-s)
    try:
        app()
    except InspireError as error:
        err.print(f"error: {error}")
        sys.exit(error.exit_code)
    except duckdb.Error as error:
        # A damaged block surfaces when it is first read, mid-command; other DuckDB errors are
        # bugs, and keep their traceback.
        known = warehouse.translate(error)
        if known is None:
            raise
        err.print(f"error: {known}")
        sys.exit(known.exit_code)
    except pydantic.ValidationError as error:
        setting = error.title == "Settings"  # named as the user set it: INSPIRE_LLM_PRICES
        problems = "; ".join(f"{_where(e['loc'], setting)}: {e['msg']}" for e in error.errors())
        err.print(f"error: invalid configuration: {problems}")
        sys.exit(2)
