"""The warehouse and what it holds: `warehouse`, `snapshot`, `stats`, `key`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path
from typing import Annotated

import duckdb
import typer
from rich.table import Table

from inspire_build import warehouse
from inspire_build.cli.common import (
    JsonOption,
    WarehouseOption,
    _Context,
    _print_rows,
    _read,
    err,
    key_app,
    out,
    snapshot_app,
    stats_app,
    warehouse_app,
    warehouse_of,
)
from inspire_build.errors import InputError
from inspire_build.tables.bulk import Kind


@warehouse_app.command("init")
def warehouse_init(ctx: typer.Context, warehouse_path: WarehouseOption = None) -> None:
    """Create the warehouse if needed and apply every pending migration."""
    path = warehouse_of(ctx, warehouse_path, create=True)
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
    path = warehouse_of(ctx, warehouse_path)
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


@snapshot_app.command("import")
def snapshot_import(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Cassette files or folders of them.")],
    warehouse_path: WarehouseOption = None,
) -> None:
    """Import recorded responses (vcrpy, R vcr or arxiv.py fixtures) into the raw store."""
    from inspire_build import snapshot
    from inspire_build.sources import CODECS

    files = snapshot.cassette_files(paths)
    root: _Context = ctx.obj
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
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


@snapshot_app.command("ingest")
def snapshot_ingest(
    ctx: typer.Context,
    paths: Annotated[
        list[str],
        typer.Argument(
            help="OpenAlex snapshot folders (updated_date=…/part_*.gz) and S2 Datasets files "
            "(papers, abstracts, citations, paper-ids), and arXiv's metadata snapshot: files, "
            "folders or globs."
        ),
    ],
    kind: Annotated[
        Kind | None,
        typer.Option("--kind", help="What the files are, where their folders do not say."),
    ] = None,
    release: Annotated[
        str | None,
        typer.Option(
            "--release", help="Release date (YYYY-MM-DD), where the path does not name one."
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            min=1,
            help="Processes that read and parse the next files while one is written "
            "(default: the CPUs, at most 4; 1 parses in this process).",
        ),
    ] = min(4, os.cpu_count() or 1),
    keep_all: Annotated[
        bool,
        typer.Option(
            "--keep-all",
            help="Keep every OpenAlex work and S2 citation; by default only the works on arXiv "
            "or of a configured split's field, and the citations of S2 papers on arXiv, are kept, "
            "and the rest counted as filtered out.",
            metavar="",
        ),
    ] = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Ingest bulk distributions into the bulk tables, one transaction per file: a rerun skips
    the files already in, and a file that cannot be read whole is refused with nothing of it
    kept."""
    from inspire_build import bulk

    released = _release(release)
    root: _Context = ctx.obj
    works = bulk.WorkFilter.of(root.settings.splits.values(), keep_all)
    out.print(f"Filter: {works.describe()}")
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path, create=True)) as con:
        done = bulk.ingest(
            con, paths, kind=kind, release=released, say=lambda r: out.print(r.line()), jobs=jobs,
            works=works,
        )  # fmt: skip
    new = [r for r in done if not r.skipped]
    seconds = sum(r.seconds for r in new)
    megabytes = sum(r.bytes for r in new) / 1e6
    out.print(
        f"{len(new)} file(s) ingested, {len(done) - len(new)} already in: "
        f"{sum(r.rows for r in new):,} rows, {sum(r.filtered for r in new):,} filtered out, "
        f"{megabytes:.1f} MB in {seconds:.1f} s"
    )


def _release(text: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if text else None
    except ValueError:
        raise InputError(f"--release {text!r} is not a date (YYYY-MM-DD)") from None


@snapshot_app.command("export")
def snapshot_export(
    ctx: typer.Context,
    out_path: Annotated[Path, typer.Option("--out", help="Parquet file to write.")],
    warehouse_path: WarehouseOption = None,
) -> None:
    """Export the raw response store to a Parquet file (secrets are never stored)."""
    from inspire_build import snapshot

    if out_path.is_dir():
        raise InputError(f"--out {out_path} is a folder; give a file")
    con = warehouse.connect(warehouse_of(ctx, warehouse_path), read_only=True)
    try:
        count = snapshot.export_parquet(con, out_path)
    except (OSError, duckdb.IOException) as error:  # a path through a file, a read-only place
        raise InputError(f"--out {out_path} cannot be written: {error}") from None
    finally:
        con.close()
    out.print(f"wrote {count} response(s) to {out_path}")


@snapshot_app.command("stats")
def snapshot_stats(
    ctx: typer.Context, as_json: JsonOption = False, warehouse_path: WarehouseOption = None
) -> None:
    """Count the stored responses by source and origin."""
    from inspire_build import snapshot

    con = warehouse.connect(warehouse_of(ctx, warehouse_path), read_only=True)
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


@stats_app.command("lineage")
def stats_lineage(
    ctx: typer.Context, as_json: JsonOption = False, warehouse_path: WarehouseOption = None
) -> None:
    """Gold completeness per target: references seen, kept, and lost under each status."""
    from inspire_build.tables import lineage as lineage_table

    rows = _read(ctx, warehouse_path, lineage_table.completeness)
    if _print_rows(rows, as_json, "gold completeness", ("target_id", "sources")):
        return
    if rows:
        seen = sum(int(r["references_seen"]) for r in rows)
        eligible = sum(int(r["eligible"]) for r in rows)
        out.print(f"{len(rows)} target(s): {eligible:,} eligible of {seen:,} references seen")


@stats_app.command("llm")
def stats_llm(
    ctx: typer.Context, as_json: JsonOption = False, warehouse_path: WarehouseOption = None
) -> None:
    """LLM calls, tokens and estimated cost per step (prompt) and model."""
    from inspire_build.tables import llm_log

    rows = _read(ctx, warehouse_path, llm_log.usage)
    title = "LLM calls (each is logged once; reruns are served from the log)"
    if _print_rows(rows, as_json, title, ("step", "backend", "model")):
        return
    total = sum(float(r["cost_usd"] or 0) for r in rows)
    line = f"{sum(int(r['calls']) for r in rows):,} call(s), estimated ${total:.4f}"
    unpriced = sum(int(r["unpriced_calls"]) for r in rows)
    if unpriced:  # their cost is unknown: left out of the sum, never counted as $0
        line += f" for the priced; {unpriced:,} of a model with no price (INSPIRE_LLM_PRICES)"
    out.print(line)


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
    from inspire_build import boundary_store

    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        key = boundary_store.stored_key(con)
    if out_file is None:
        print(key)
    else:
        out_file.touch(mode=0o600, exist_ok=True)
        out_file.chmod(0o600)
        out_file.write_text(key + "\n", encoding="utf-8")
    err.print("this key is secret: keep it with the private side, never in a public export")
