"""The ``inspire`` command: a thin typer CLI.

Commands call library functions and print. Errors raised inside are translated into a one-line
message and an exit code here, once, in :func:`main`: 2 for bad input, 3 for a locked
warehouse, 1 for anything else the product raised on purpose.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import duckdb
import pydantic
import typer
from rich.console import Console
from rich.table import Table

from inspire_build import (
    boundary_store,
    lineage_rows,
    resolve,
    selection,
    snapshot,
    sources,
    warehouse,
)
from inspire_build.config import Settings, get_settings
from inspire_build.env.core import DEFAULT_BUDGET
from inspire_build.errors import InputError, InspireError, InvalidIdError
from inspire_build.http import HttpClient, SourceMode
from inspire_build.ids import parse_any_id
from inspire_build.models import Paper, PaperIds, Reference, ReferenceStatus, Source
from inspire_build.pipeline import check_sources
from inspire_build.sources import CODECS, make_client
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import llm_log

if TYPE_CHECKING:
    from inspire_build.env.server import ToolSessions


def _plain_help_flag() -> None:
    """typer 0.29 (which vendors click) shows the built-in flag as `--help <bool>`; a flag takes
    no value, so its help names none, like every flag of ours (``metavar=""``)."""
    try:
        from typer._click.core import Command
    except ImportError:  # a typer that uses click itself shows plain flags already
        return
    made = Command.get_help_option

    def get_help_option(self: Any, ctx: Any) -> Any:
        option = made(self, ctx)
        if option is not None:
            option.metavar = ""
        return option

    if not getattr(made, "plain", False):
        get_help_option.plain = True  # type: ignore[attr-defined]
        Command.get_help_option = get_help_option  # type: ignore[method-assign]


_plain_help_flag()

app = typer.Typer(
    help="Build INSPIRE-style literature-search benchmarks and score agents on them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
warehouse_app = typer.Typer(help="Create and inspect the DuckDB warehouse.", no_args_is_help=True)
ids_app = typer.Typer(help="Normalise paper identifiers.", no_args_is_help=True)
fetch_app = typer.Typer(
    help="Fetch papers and references from OpenAlex, Semantic Scholar or arXiv.",
    no_args_is_help=True,
)
snapshot_app = typer.Typer(
    help="Import, export and inspect the raw response store.", no_args_is_help=True
)
sandbox_app = typer.Typer(
    help="The local emulator of OpenAlex, S2, arXiv and an OpenAI-compatible API.",
    no_args_is_help=True,
)
targets_app = typer.Typer(help="Select a split's candidate target papers.", no_args_is_help=True)
lineage_app = typer.Typer(
    help="Merge targets' references across sources, date them, apply the cutoff.",
    no_args_is_help=True,
)
stats_app = typer.Typer(help="Statistics read from the warehouse.", no_args_is_help=True)
gold_app = typer.Typer(
    help="Briefs, leakage audits and grades for resolved targets.", no_args_is_help=True
)
app.add_typer(gold_app, name="gold")
app.add_typer(targets_app, name="targets")
app.add_typer(lineage_app, name="lineage")
app.add_typer(stats_app, name="stats")
app.add_typer(warehouse_app, name="warehouse")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(ids_app, name="ids")
app.add_typer(fetch_app, name="fetch")
app.add_typer(snapshot_app, name="snapshot")
corpus_app = typer.Typer(
    help="The search corpus the agent environment's local backend searches.", no_args_is_help=True
)
env_app = typer.Typer(
    help="The agent search environment: leak audit, HTTP tool server, MCP server.",
    no_args_is_help=True,
)
agent_app = typer.Typer(help="Run baseline agents in the search environment.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
app.add_typer(env_app, name="env")
app.add_typer(agent_app, name="agent")
hindsight_app = typer.Typer(
    help="Hindsight demonstrations from a train split's gold, exported as SFT data.",
    no_args_is_help=True,
)
app.add_typer(hindsight_app, name="hindsight")
key_app = typer.Typer(
    help="The warehouse's secret instance key (keys instance IDs and cutoff offsets).",
    no_args_is_help=True,
)
app.add_typer(key_app, name="key")

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


def _print_version(wanted: bool) -> None:
    if wanted:
        from inspire_build import __version__

        out.print(f"inspire {__version__}")
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


def _warehouse_path(ctx: typer.Context, given: Path | None, *, create: bool = False) -> Path:
    """The command's --warehouse, else the root's --warehouse or the setting.

    Only the commands that make a warehouse pass ``create``; every other one refuses a path
    that holds none, so that a typo is an error and not a new, empty warehouse.
    """
    root: _Context = ctx.obj
    path = given or root.warehouse
    if not create:
        warehouse.require(path)
    return path


def _check_split(
    ctx: typer.Context,
    split: str | None,
    version: str | None = None,
    warehouse_path: Path | None = None,
) -> None:
    """Refuse a split the settings do not name, or a version the warehouse does not hold, in
    one line, before anything opens the warehouse for writing or starts a Prefect server.

    Every command that takes a split or a version calls this first.
    """
    from inspire_build import splits

    root: _Context = ctx.obj
    if split is not None:
        root.settings.split(split)
    if version is not None:
        con = warehouse.connect(_warehouse_path(ctx, warehouse_path), read_only=True)
        try:
            splits.check_version(con, version)
        finally:
            con.close()


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


@warehouse_app.command("init")
def warehouse_init(ctx: typer.Context, warehouse_path: WarehouseOption = None) -> None:
    """Create the warehouse if needed and apply every pending migration."""
    path = _warehouse_path(ctx, warehouse_path, create=True)
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
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.", metavar="")] = False,
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


# Every bool option is a plain flag, off by default. metavar="" because typer's help otherwise
# shows a flag as if it took a value (`--json <bool>`).
OfflineOption = Annotated[
    bool,
    typer.Option(
        "--offline", help="Replay mode: answer only from the raw response store.", metavar=""
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON lines.", metavar="")]


class PaperSource(StrEnum):
    openalex = "openalex"
    s2 = "s2"
    arxiv = "arxiv"


class ReferenceSource(StrEnum):
    s2 = "s2"
    openalex = "openalex"
    both = "both"


@fetch_app.command("paper")
def fetch_paper(
    ctx: typer.Context,
    paper_id: Annotated[str, typer.Argument(help="A paper ID in any known scheme.")],
    source: Annotated[
        PaperSource | None,
        typer.Option(help="Default: by the ID's scheme (W-id and DOI: openalex; arXiv: arxiv)."),
    ] = None,
    offline: OfflineOption = False,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Fetch one paper's metadata, recording the response in the raw store."""
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
    names = ["s2", "openalex"] if source is ReferenceSource.both else [source.value]
    with _client(ctx, warehouse_path, offline) as (client, _):
        lines = [
            reference_line(reference)
            for name in names
            for reference in sources.fetch_references(client, paper_id, name)
        ]
    _emit(lines, as_json)


@snapshot_app.command("import")
def snapshot_import(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Cassette files or folders of them.")],
    warehouse_path: WarehouseOption = None,
) -> None:
    """Import recorded responses (vcrpy, R vcr or arxiv.py fixtures) into the raw store."""
    files = snapshot.cassette_files(paths)
    root: _Context = ctx.obj
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        report = snapshot.import_cassettes(files, con, CODECS, root.settings)
    by_source = ", ".join(f"{n} {c}" for n, c in sorted(report.by_source.items())) or "none"
    out.print(
        f"{report.files} file(s), {report.interactions} interaction(s): "
        f"{sum(report.by_source.values())} filed ({by_source}) "
        f"as {report.imported} distinct request(s)"
    )
    for reason, count in sorted(report.skipped.items()):
        out.print(f"skipped {count}: {reason}")
    for rejected in report.rejected_files:
        err.print(f"rejected {rejected}")
    if report.rejected_files and not report.imported:
        raise InputError("nothing imported: no file was a readable cassette")


@snapshot_app.command("export")
def snapshot_export(
    ctx: typer.Context,
    out_path: Annotated[Path, typer.Option("--out", help="Parquet file to write.")],
    warehouse_path: WarehouseOption = None,
) -> None:
    """Export the raw response store to a Parquet file (secrets are never stored)."""
    con = warehouse.connect(_warehouse_path(ctx, warehouse_path), read_only=True)
    try:
        count = snapshot.export_parquet(con, out_path)
    finally:
        con.close()
    out.print(f"wrote {count} response(s) to {out_path}")


@snapshot_app.command("stats")
def snapshot_stats(
    ctx: typer.Context, as_json: JsonOption = False, warehouse_path: WarehouseOption = None
) -> None:
    """Count the stored responses by source and origin."""
    con = warehouse.connect(_warehouse_path(ctx, warehouse_path), read_only=True)
    try:
        rows = snapshot.stats(con)
    finally:
        con.close()
    if as_json:
        for row in rows:
            print(json.dumps(dataclasses.asdict(row)))
        return
    table = Table(title="raw response store")
    for column in ("source", "origin", "responses", "errors", "complete pages", "bytes"):
        table.add_column(column, justify="left" if column in ("source", "origin") else "right")
    for row in rows:
        table.add_row(
            row.source,
            row.origin,
            f"{row.responses:,}",
            f"{row.errors:,}",
            f"{row.complete_pages:,}",
            f"{row.body_bytes:,}",
        )
    out.print(table)


@sandbox_app.command("world")
def sandbox_world(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the world into.")],
    seed: Annotated[int, typer.Option(help="Random seed: one seed, one world, byte for byte.")] = 0,
    papers: Annotated[int, typer.Option(help="Number of paper records.", min=10)] = 2000,
    hostile: Annotated[
        bool,
        typer.Option(
            "--hostile", help="Mark records with bad inputs (README: sandbox).", metavar=""
        ),
    ] = False,
) -> None:
    """Generate a synthetic scholarly world and its ground truth."""
    from inspire_build.sandbox import world

    try:
        generated = world.generate(world.WorldConfig(seed=seed, papers=papers, hostile=hostile))
    except ValueError as error:  # too small a world for the hostile targets
        raise InputError(str(error)) from error
    for path in world.write(generated, out_dir):
        out.print(f"wrote {path}")
    references = sum(len(r.references) for r in generated.records)
    out.print(f"{len(generated.records):,} records, {references:,} references (seed {seed})")


Rate = float | None  # a --llm-* rate, unset: the sandbox's default


def _rate(help_text: str) -> Any:
    """A --llm-* option: a rate from 0 to 1 (unset: sandbox/llm_truth.py's default)."""
    return typer.Option(help=help_text, min=0, max=1)


@sandbox_app.command("serve")
def sandbox_serve(
    world_dir: Annotated[Path, typer.Option("--world", help="A folder from `sandbox world`.")],
    port: Annotated[
        int, typer.Option(help="Port on 127.0.0.1 (0: any free one).", min=0, max=65535)
    ] = 8799,
    faults: Annotated[float, typer.Option(help="Share of requests that fail.", min=0, max=1)] = 0,
    time_scale: Annotated[
        float, typer.Option(help="Multiplies every rate limit, so tests run fast.", min=0.01)
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the fault and LLM dice.")] = 0,
    llm_latency: Annotated[
        float, typer.Option(help="Seconds every chat completion waits.", min=0)
    ] = 0.0,
    llm_rpm: Annotated[
        int | None,
        typer.Option(help="Chat requests per real minute (not time-scaled) before 429s.", min=1),
    ] = None,
    llm_tpm: Annotated[
        int | None,
        typer.Option(help="Prompt + max_tokens tokens per real minute before 429s.", min=1),
    ] = None,
    llm_leak_name: Annotated[Rate, _rate("Rate of briefs that name the method.")] = None,
    llm_leak_acronym: Annotated[
        Rate, _rate("Rate of briefs that use the method's acronym.")
    ] = None,
    llm_leak_title: Annotated[Rate, _rate("Rate of briefs that copy a title 4-gram.")] = None,
    llm_leak_mechanism: Annotated[
        Rate, _rate("Rate of briefs that give the mechanism words.")
    ] = None,
    llm_leak_numbers: Annotated[
        Rate, _rate("Rate of briefs that state the result numbers.")
    ] = None,
    llm_bad_length: Annotated[Rate, _rate("Rate of briefs under 120 or over 250 words.")] = None,
    llm_refusal: Annotated[Rate, _rate("Rate of answers refused.")] = None,
    llm_invalid_json: Annotated[Rate, _rate("Rate of answers that are not valid JSON.")] = None,
    llm_drop_grade: Annotated[Rate, _rate("Rate of grade sheets missing one antecedent.")] = None,
    llm_grade_shift: Annotated[Rate, _rate("Rate of grades one tier off (per antecedent).")] = None,
    llm_grade_overinclude: Annotated[
        Rate, _rate("Rate of tier-0 references graded 1 or 2.")
    ] = None,
) -> None:
    """Serve a world on 127.0.0.1 until interrupted; prints the variables to export.

    Its OpenAI-compatible API answers the pipeline's prompts from the world's truth; the
    --llm-* rates (0-1, defaults in sandbox/llm_truth.py) plant failures in those answers.
    """
    from inspire_build import local_server
    from inspire_build.sandbox import server, world
    from inspire_build.sandbox.llm_truth import TruthRates
    from inspire_build.sandbox.openai_api import OpenAIConfig

    if not (world_dir / world.RECORDS_FILE).exists():
        raise InputError(f"{world_dir} holds no world; create one with `inspire sandbox world`")
    given = {
        "leak_name": llm_leak_name,
        "leak_acronym": llm_leak_acronym,
        "leak_title": llm_leak_title,
        "leak_mechanism": llm_leak_mechanism,
        "leak_numbers": llm_leak_numbers,
        "bad_length": llm_bad_length,
        "refusal": llm_refusal,
        "invalid_json": llm_invalid_json,
        "drop_grade": llm_drop_grade,
        "grade_shift": llm_grade_shift,
        "grade_overinclude": llm_grade_overinclude,
    }
    rates = TruthRates.from_mapping({k: v for k, v in given.items() if v is not None})
    llm = OpenAIConfig(seed=seed, latency_s=llm_latency, rpm=llm_rpm, tpm=llm_tpm, truth=rates)
    config = server.SandboxConfig(seed=seed, time_scale=time_scale, fault_rate=faults, openai=llm)
    sock = local_server.bind(port)  # a busy port is one error, before any export line
    bound = sock.getsockname()[1]  # --port 0 picks a free one: print the port it picked
    for line in server.env_lines(f"http://127.0.0.1:{bound}", time_scale):
        out.print(f"export {line}")
    server.serve(world_dir, config, sock)


@sandbox_app.command("env")
def sandbox_env(
    port: Annotated[int, typer.Option(help="The sandbox's port on 127.0.0.1.")] = 8799,
    time_scale: Annotated[float, typer.Option(help="The sandbox's time scale.", min=0.01)] = 1.0,
) -> None:
    """Print the INSPIRE_* variables that point the pipeline at a running sandbox."""
    from inspire_build.sandbox import server

    for line in server.env_lines(f"http://127.0.0.1:{port}", time_scale):
        print(f"export {line}")


@targets_app.command("select")
def targets_select(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="A split name from the settings (train, eval).")],
    limit: Annotated[int | None, typer.Option(help="Most targets to select.", min=1)] = None,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Find a split's candidates in OpenAlex and record each with a status and a reason."""
    _check_split(ctx, split)
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
    root: _Context = ctx.obj
    _check_ids(paper_ids)
    with _client(ctx, warehouse_path, offline) as (client, con):
        results = resolve.resolve_lineage(
            paper_ids,
            client,
            existing=warehouse.crosswalk(con),
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
    _check_ids([paper_id])
    chosen = _parse_sources(sources)
    dates = {paper_id: _parse_date(target_date)} if target_date else {}
    with _client(ctx, warehouse_path, offline) as (client, _):
        result = resolve.resolve_lineage([paper_id], client, sources=chosen, target_dates=dates)[0]
    out.print(
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


@stats_app.command("lineage")
def stats_lineage(
    ctx: typer.Context, as_json: JsonOption = False, warehouse_path: WarehouseOption = None
) -> None:
    """Gold completeness per target: references seen, kept, and lost under each status."""
    rows = _read(ctx, warehouse_path, lineage_table.completeness)
    if _print_rows(rows, as_json, "gold completeness", ("target_id", "sources")):
        return
    if rows:
        seen = sum(int(r["references_seen"]) for r in rows)
        eligible = sum(int(r["eligible"]) for r in rows)
        out.print(f"{len(rows)} target(s): {eligible:,} eligible of {seen:,} references seen")


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


@stats_app.command("llm")
def stats_llm(
    ctx: typer.Context, as_json: JsonOption = False, warehouse_path: WarehouseOption = None
) -> None:
    """LLM calls, tokens and estimated cost per step (prompt) and model."""
    rows = _read(ctx, warehouse_path, llm_log.usage)
    title = "LLM calls (each is logged once; reruns are served from the log)"
    if _print_rows(rows, as_json, title, ("step", "backend", "model")):
        return
    total = sum(float(r["cost_usd"] or 0) for r in rows)
    out.print(f"{sum(int(r['calls']) for r in rows):,} call(s), estimated ${total:.4f}")


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


@key_app.command("export")
def key_export(
    ctx: typer.Context,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="Write the key to this file (mode 0600) instead of stdout."),
    ] = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Print the instance key, to rebuild byte-identical exports elsewhere with
    INSPIRE_INSTANCE_KEY. It is a secret: whoever holds it can map targets to instance IDs."""
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        key = boundary_store.stored_key(con)
    if out_file is None:
        print(key)
    else:
        out_file.touch(mode=0o600, exist_ok=True)
        out_file.chmod(0o600)
        out_file.write_text(key + "\n", encoding="utf-8")
    err.print("this key is secret: keep it with the private side, never in a public export")


eval_app = typer.Typer(
    help="Score agents' runs: `inspire eval --run R ...`, or `inspire eval compare A B`.",
    invoke_without_command=True,
)
app.add_typer(eval_app, name="eval")


@eval_app.callback()
def eval_command(
    ctx: typer.Context,
    run: Annotated[
        Path | None, typer.Option("--run", help="JSONL {instance_id, ranking} or TREC run.")
    ] = None,
    split: Annotated[str | None, typer.Option(help="Score against this split's qrels.")] = None,
    version: Annotated[str | None, typer.Option(help="A version ID (default: latest).")] = None,
    qrels: Annotated[
        Path | None, typer.Option("--qrels", help="A TREC qrels file instead of a split.")
    ] = None,
    trajectories: Annotated[
        Path | None, typer.Option("--trajectories", help="JSONL search trajectories.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of the run in eval_runs.")] = None,
    gains: Annotated[str, typer.Option(help="linear (T3=3) or exp (2^T-1).")] = "linear",
    plots: Annotated[
        Path | None, typer.Option("--plots", help="Folder for the figures (PNG and SVG).")
    ] = None,
    bootstrap_samples: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap resamples for the 95% intervals.", min=1)
    ] = 1000,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Score a run (and trajectories) with nDCG@10, Recall@10, MRR, AnyHit@10, ≥3/≥5 hits
    and the exposure-selection-ranking funnel, with 95% bootstrap intervals."""
    _check_split(ctx, split, version if split else None, warehouse_path)
    if ctx.invoked_subcommand is not None:
        where = _warehouse_path(ctx, warehouse_path) if split else None
        ctx.obj = _EvalOptions(split, version, qrels, bootstrap_samples, where)
        return
    if run is None:
        raise InputError("give --run FILE (or use `inspire eval compare RUN_A RUN_B`)")
    if plots is not None:
        _check_output_folder(plots, "--plots")
    from inspire_build.evaluation import report
    from inspire_build.evaluation.evaluate import evaluate

    scores = evaluate(
        run,
        split=split,
        version=version,
        qrels=qrels,
        trajectories=trajectories,
        name=name,
        gains=gains,
        samples=bootstrap_samples,
        warehouse_path=_warehouse_path(ctx, warehouse_path) if split else None,
    )
    if plots is not None:
        from inspire_build.evaluation import plots as figures

        label = name or run.stem
        hits = [int(m["hits@10"] or 0) for m in scores.per_instance.values()]
        made = figures.recovered_histogram(hits, plots)
        if scores.curve:
            made += figures.funnel_chart({label: scores}, plots)
            made += figures.oracle_curve({label: scores.curve}, plots)
        for path in made:
            err.print(f"wrote {path}")
    for line in report.notes(scores):
        err.print(line)
    if as_json:
        print(json.dumps(report.as_json(scores)))
        return
    for line in report.lines(scores):
        out.print(line)


@dataclass(frozen=True)
class _EvalOptions:
    split: str | None
    version: str | None
    qrels: Path | None
    samples: int
    warehouse: Path | None  # with a split only


@eval_app.command("compare")
def eval_compare(
    ctx: typer.Context,
    run_a: Annotated[Path, typer.Argument(help="The first run file.")],
    run_b: Annotated[Path, typer.Argument(help="The second run file, on the same instances.")],
    trajectories_a: Annotated[
        Path | None, typer.Option("--trajectories-a", help="Run A's trajectories (JSONL).")
    ] = None,
    trajectories_b: Annotated[
        Path | None, typer.Option("--trajectories-b", help="Run B's trajectories (JSONL).")
    ] = None,
) -> None:
    """Paired bootstrap differences (A - B) of every Table 2 metric, with 95% intervals; with
    both runs' trajectories, of the funnel too (exposed and selected gain: the paper's Table 4)."""
    from inspire_build.evaluation import report
    from inspire_build.evaluation.evaluate import evaluate
    from inspire_build.evaluation.score import FUNNEL_PAIRED, TABLE2, paired

    if (trajectories_a is None) != (trajectories_b is None):
        raise InputError("give both runs' trajectories (--trajectories-a and -b), or neither")
    options: _EvalOptions = ctx.obj
    where = options.warehouse if options.split else None
    scored = [
        evaluate(
            path,
            split=options.split,
            version=options.version,
            qrels=options.qrels,
            trajectories=paths,
            samples=options.samples,
            warehouse_path=where,
        )
        for path, paths in ((run_a, trajectories_a), (run_b, trajectories_b))
    ]
    metrics = TABLE2 + (FUNNEL_PAIRED if trajectories_a else ())
    for line in report.notes(scored[0], run_a.name) + report.notes(scored[1], run_b.name):
        err.print(line)
    shared, against = len(scored[0].per_instance), report.against(scored[0])
    out.print(f"{run_a.name} - {run_b.name}, paired over {shared} instances of {against}")
    differences = paired(scored[0], scored[1], metrics, options.samples)
    for metric, (mean, low, high) in differences.items():
        out.print(f"{metric:<20}{mean:>+8.3f}   [{low:+.3f}, {high:+.3f}]")


@corpus_app.command("build")
def corpus_build(
    ctx: typer.Context,
    world_dir: Annotated[
        Path | None, typer.Option("--world", help="A Sandbox world folder: all its records.")
    ] = None,
    snapshot_file: Annotated[
        Path | None,
        typer.Option("--snapshot", help="OpenAlex works JSONL (.gz too), e.g. a bulk snapshot."),
    ] = None,
    start: Annotated[
        str | None, typer.Option("--from", help="OpenAlex works published from YYYY-MM-DD.")
    ] = None,
    end: Annotated[str | None, typer.Option("--to", help="... up to YYYY-MM-DD.")] = None,
    fields: Annotated[
        list[str] | None, typer.Option("--field", help="OpenAlex field (default: CS).")
    ] = None,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Fill the corpus (replacing it) and rebuild its bm25 index; prints its size."""
    from inspire_build.env import corpus, store

    chosen = [
        world_dir is not None,
        snapshot_file is not None,
        start is not None or end is not None,
    ]
    if sum(chosen) != 1:
        raise InputError("give one of --world DIR, --snapshot FILE, or --from DATE --to DATE")
    with _client(ctx, warehouse_path, offline) as (client, con):
        if world_dir is not None:
            from inspire_build.sandbox import world

            records = corpus.from_world(world.load(world_dir).records)
            origin = "sandbox-world"
        elif snapshot_file is not None:
            records = [corpus.from_paper(p) for p in corpus.read_snapshot(snapshot_file)]
            origin = "snapshot"
        else:
            from inspire_build.sources import openalex

            if start is None or end is None:
                raise InputError("--from and --to go together")
            window = openalex.window_filter(
                fields or ["Computer Science"], _parse_date(start), _parse_date(end)
            )
            records = []
            with _progress() as progress:
                listing = progress.add_task("OpenAlex works", total=None)
                for paper in openalex.iter_works(client, window):
                    records.append(corpus.from_paper(paper))
                    progress.advance(listing)
            origin = "openalex"
        size = store.write_corpus(con, records, origin)
    out.print(
        f"corpus: {size.works:,} works from {size.records:,} {origin} records "
        f"({size.records - size.works:,} merged as versions of one work); "
        f"{size.known_papers:,} also in the warehouse's papers; {size.undated:,} undated "
        "(never shown)"
    )


BackendOption = Annotated[str, typer.Option("--backend", help="local (corpus bm25) or openalex.")]
BudgetOption = Annotated[
    int, typer.Option("--budget", help="Tool calls (search, read) per instance.", min=0)
]
SplitOption = Annotated[str, typer.Option("--split", help="The split to run on.")]
VersionOption = Annotated[
    str | None, typer.Option("--version", help="A version ID (default: latest).")
]


@contextmanager
def _progress() -> Iterator[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        yield progress


@agent_app.command("run")
def agent_run(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option("--agent", help="bm25-brief or multi-query.")],
    out_path: Annotated[Path, typer.Option("--out", help="Run file to write (JSONL).")],
    trajectories: Annotated[
        Path, typer.Option("--trajectories", help="Trajectory file to write (JSONL).")
    ],
    split: SplitOption = "eval",
    version: VersionOption = None,
    backend: BackendOption = "local",
    budget: BudgetOption = DEFAULT_BUDGET,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="A keyphrase policy (policy.json of `inspire hindsight build`) for multi-query.",
        ),
    ] = None,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Run an agent on every instance of a split version; writes its run and trajectories."""
    from inspire_build.env import agents, run, store
    from inspire_build.env.core import SearchEnv

    _check_split(ctx, split, version, warehouse_path)
    chosen_agent = agents.make_agent(agent)
    if policy is not None:
        from inspire_build.env.policy import Policy

        if not isinstance(chosen_agent, agents.MultiQueryAgent):
            raise InputError("--policy applies to the multi-query agent only")
        chosen_agent = agents.MultiQueryAgent(Policy.load(policy), name="multi-query-learned")
        agent = chosen_agent.name
    root: _Context = ctx.obj
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        mode: SourceMode | None = "replay" if offline else None
        chosen, tasks, made = run.prepare(con, root.settings, split, version, backend, mode)
        with _progress() as progress:
            bar = progress.add_task(f"{agent} on {chosen}", total=len(tasks))
            sessions = run.run_agent(
                chosen_agent,
                tasks,
                lambda task: SearchEnv(task, budget, made),
                chosen,
                lambda: progress.advance(bar),
            )
        store.write_sessions(con, sessions)
    run.write_jsonl(out_path, (s.env.run_line() for s in sessions))
    run.write_jsonl(trajectories, (s.env.trajectory_line() for s in sessions))
    calls = sum(len(s.env.steps) for s in sessions)
    out.print(
        f"{agent}: {len(sessions)} instance(s) of {chosen}, {calls} tool call(s) on {backend}; "
        f"wrote {out_path} and {trajectories}"
    )


@hindsight_app.command("build")
def hindsight_build(
    ctx: typer.Context,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")],
    split: SplitOption = "train",
    version: VersionOption = None,
    budget: BudgetOption = DEFAULT_BUDGET,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Build a replay-checked demonstration per instance; write the chat SFT JSONL, the kept
    run and trajectories, a manifest, and the keyphrase policy trained on them."""
    from inspire_build import hindsight, splits
    from inspire_build.env import backends, store
    from inspire_build.env.policy import train

    _check_split(ctx, split, version, warehouse_path)
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        chosen = version or splits.latest_version(con, split)
        info = hindsight.version_info(con, chosen)
        if not store.corpus_size(con):
            raise InputError("the corpus is empty; fill it with `inspire corpus build`")
        instances = hindsight.load_instances(con, chosen)
        with _progress() as progress:
            bar = progress.add_task(f"demonstrations of {chosen}", total=len(instances))
            outcome = hindsight.build_all(
                instances, backends.LocalBackend(con), budget, lambda: progress.advance(bar)
            )
    kept = outcome.kept
    manifest = hindsight.write(out_dir, outcome, info, hindsight.funnel(kept, instances))
    if kept:
        policy = train([(d.brief, d.queries) for d in kept])
        (out_dir / "policy.json").write_text(json.dumps(policy.to_json()) + "\n", encoding="utf-8")
    out.print(
        f"{manifest['kept']} of {manifest['instances']} demonstration(s) of {chosen} kept "
        f"({manifest['kept_share']:.1%}); dropped: "
        + (", ".join(f"{r} {n}" for r, n in outcome.drop_counts().items()) or "none")
    )
    funnel = manifest["funnel"]
    if isinstance(funnel, dict):
        out.print("  ".join(f"{m} {v:.3f}" for m, v in funnel.items()))
    out.print(f"wrote {out_dir}")


@env_app.command("audit")
def env_audit(
    ctx: typer.Context,
    split: SplitOption = "eval",
    version: VersionOption = None,
    backends: Annotated[
        list[str] | None, typer.Option("--backend", help="Backends to audit (default: local).")
    ] = None,
    k: Annotated[int, typer.Option(help="Results per query.", min=1, max=100)] = 10,
    as_json: JsonOption = False,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Cutoff-violation rate per backend: results dated at or after the cutoff, before our
    post-filter, for the brief and each of its sentences on every instance."""
    from inspire_build.env import audit, run

    _check_split(ctx, split, version, warehouse_path)
    root: _Context = ctx.obj
    rows = []
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        for name in backends or ["local"]:
            mode: SourceMode | None = "replay" if offline else None
            chosen, tasks, made = run.prepare(con, root.settings, split, version, name, mode)
            with _progress() as progress:
                bar = progress.add_task(f"audit {name} on {chosen}", total=len(tasks))
                rows.append(audit.audit_backend(made, tasks, k, partial(progress.advance, bar)))
    for row in rows:
        line = {
            **dataclasses.asdict(row),
            "violation_rate": row.violation_rate,
            "undated_rate": row.undated_rate,
        }
        if as_json:
            print(json.dumps(line))
        else:
            out.print(
                f"{row.backend:<9} {row.queries:,} queries, {row.returned:,} results: "
                f"cutoff-violation rate {row.violation_rate:.4f} ({row.late:,} at or after the "
                f"cutoff), undated {row.undated:,}, target {row.target:,} "
                "(all withheld by the environment)"
            )


def _tool_sessions(
    ctx: typer.Context,
    con: duckdb.DuckDBPyConnection,
    split: str,
    version: str | None,
    backend: str,
    budget: int,
    lines: tuple[Path | None, Path | None],
    run_name: str | None,
    debug_reveal_scores: bool,
) -> ToolSessions:
    """The sessions of one run; ``lines`` are the run and trajectory files appended on submit."""
    from inspire_build.env import run, server
    from inspire_build.env.core import SearchEnv

    root: _Context = ctx.obj
    run_path, trajectories = lines
    chosen, tasks, made = run.prepare(con, root.settings, split, version, backend)

    def submitted(env: SearchEnv, scores_revealed: bool) -> None:
        if run_path is not None:
            run.append_jsonl(run_path, env.run_line())
        if trajectories is not None:
            run.append_jsonl(trajectories, env.trajectory_line(scores_revealed))

    if debug_reveal_scores:
        err.print(REVEAL_WARNING)
    return server.ToolSessions(
        tasks,
        made,
        con,
        budget=budget,
        run_name=run_name or (run_path.stem if run_path is not None else "default"),
        version=chosen,
        on_submit=submitted,
        judge=server.judge_from(con, chosen) if debug_reveal_scores else None,
    )


REVEAL_WARNING = (
    "WARNING: --debug-reveal-scores-to-agent: every submit is answered with the instance's "
    "scores against the gold.\nWARNING: that makes the server an answer oracle. Runs served "
    "like this are not benchmark results;\nWARNING: each session it touches is recorded with "
    "scores_revealed = true (env_sessions and the trajectory line)."
)
RunAppendOption = Annotated[
    Path | None, typer.Option("--run", help="Append each submission's run line here.")
]
TrajectoriesAppendOption = Annotated[
    Path | None,
    typer.Option("--trajectories", help="Append each submitted session's trajectory here."),
]
RunNameOption = Annotated[
    str | None,
    typer.Option(
        "--run-name",
        help="The run these sessions belong to: one budget and one submission per instance "
        "and run, kept across restarts. Default: the --run file's name, else 'default'.",
    ),
]
RevealOption = Annotated[
    bool,
    typer.Option(
        "--debug-reveal-scores-to-agent",
        help="Debugging only: answer submit with the instance's scores (an answer oracle); "
        "warns, and marks every session it touches with scores_revealed.",
        metavar="",
    ),
]


@env_app.command("serve")
def env_serve(
    ctx: typer.Context,
    split: SplitOption = "eval",
    version: VersionOption = None,
    backend: BackendOption = "local",
    budget: BudgetOption = DEFAULT_BUDGET,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8765,
    run_path: RunAppendOption = None,
    trajectories: TrajectoriesAppendOption = None,
    run_name: RunNameOption = None,
    debug_reveal_scores: RevealOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Serve search/read/submit over HTTP/JSON on 127.0.0.1: one token-bound session per
    instance, kept in the warehouse."""
    from inspire_build.env import server

    _check_split(ctx, split, version, warehouse_path)
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        sessions = _tool_sessions(
            ctx, con, split, version, backend, budget, (run_path, trajectories), run_name,
            debug_reveal_scores,
        )  # fmt: skip
        err.print(
            f"serving {len(sessions.tasks)} instance(s) of run {sessions.run_name!r} on "
            f"http://127.0.0.1:{port}"
        )
        server.serve(server.create_app(sessions), port)


@env_app.command("mcp")
def env_mcp(
    ctx: typer.Context,
    split: SplitOption = "eval",
    version: VersionOption = None,
    backend: BackendOption = "local",
    budget: BudgetOption = DEFAULT_BUDGET,
    run_path: RunAppendOption = None,
    trajectories: TrajectoriesAppendOption = None,
    run_name: RunNameOption = None,
    debug_reveal_scores: RevealOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Serve search/read/submit as MCP tools over stdio: one token-bound session per instance,
    kept in the warehouse."""
    from inspire_build.env.mcp_server import create_mcp

    _check_split(ctx, split, version, warehouse_path)
    with warehouse.open_warehouse(_warehouse_path(ctx, warehouse_path)) as con:
        sessions = _tool_sessions(
            ctx, con, split, version, backend, budget, (run_path, trajectories), run_name,
            debug_reveal_scores,
        )  # fmt: skip
        create_mcp(sessions).run("stdio")


def _read(
    ctx: typer.Context,
    given: Path | None,
    reader: Callable[[duckdb.DuckDBPyConnection], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """A table module's rows, read from the warehouse opened read-only."""
    con = warehouse.connect(_warehouse_path(ctx, given), read_only=True)
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
    table = Table(title=title)
    for name in rows[0] if rows else ():
        table.add_column(name, justify="left" if name in left else "right")
    for row in rows:
        table.add_row(
            *[",".join(map(str, v)) if isinstance(v, list) else str(v) for v in row.values()]
        )
    out.print(table)
    return False


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
    root: _Context = ctx.obj
    with warehouse.open_warehouse(_warehouse_path(ctx, given)) as con:
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
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        err.print(f"error: invalid configuration: {problems}")
        sys.exit(2)


if __name__ == "__main__":
    main()
