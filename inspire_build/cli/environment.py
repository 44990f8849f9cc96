"""The search environment: `corpus` and `env` (its audit, instances and tool servers). Agents
run on it through `agent` and `hindsight` (:mod:`inspire_build.cli.agents`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inspire_build import warehouse
from inspire_build.env.core import DEFAULT_BUDGET
from inspire_build.errors import InputError

if TYPE_CHECKING:
    from inspire_build.env.audit import AuditRow
    from inspire_build.env.server import ToolSessions
    from inspire_build.http import SourceMode
from inspire_build.cli.common import (
    BackendOption,
    BudgetOption,
    JsonOption,
    OfflineOption,
    SplitOption,
    VersionOption,
    WarehouseOption,
    _client,
    _Context,
    _parse_date,
    check_split,
    corpus_app,
    env_app,
    err,
    out,
    progress_bars,
    warehouse_of,
)


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
            from inspire_build.sandbox import corpus as world_corpus
            from inspire_build.sandbox import world

            records = world_corpus.from_world(world.load(world_dir).records)
            origin = "sandbox-world"
        elif snapshot_file is not None:
            repaired: list[tuple[int, Sequence[str]]] = []
            works = corpus.read_snapshot(snapshot_file, lambda *noted: repaired.append(noted))
            records = [corpus.from_paper(p) for p in works]
            origin = "snapshot"
            if repaired:
                line, problems = repaired[0]
                err.print(
                    f"warning: {len(repaired):,} snapshot record(s) kept without fields that "
                    f"could not be read, the first at {snapshot_file}:{line}: {'; '.join(problems)}"
                )
        else:
            from inspire_build.sources import openalex

            if start is None or end is None:
                raise InputError("--from and --to go together")
            window = openalex.window_filter(
                fields or ["Computer Science"], _parse_date(start), _parse_date(end)
            )
            with progress_bars() as progress:
                listing = progress.add_task("OpenAlex works", total=None)
                records = corpus.from_openalex(client, window, lambda: progress.advance(listing))
            origin = "openalex"
        size = store.write_corpus(con, records, origin)
    out.print(
        f"corpus: {size.works:,} works from {size.records:,} {origin} records "
        f"({size.records - size.works:,} merged as versions of one work); "
        f"{size.known_papers:,} also in the warehouse's papers; {size.undated:,} undated "
        "(never shown)"
    )


@env_app.command("audit")
def env_audit(
    ctx: typer.Context,
    split: SplitOption = "eval",
    version: VersionOption = None,
    backends: Annotated[
        list[str] | None, typer.Option("--backend", help="Backends to audit (default: local).")
    ] = None,
    k: Annotated[int, typer.Option(help="Results per query.", min=1, max=100)] = 10,
    remote_sample: Annotated[
        int | None,
        typer.Option(
            "--remote-sample",
            min=1,
            help="Probe each brief on a remote backend (openalex) with N queries: the whole "
            "brief and N-1 of its sentences, drawn with --seed; the report says so. The local "
            "backend probes every sentence. Default: every sentence on every backend.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --remote-sample draw.")] = 0,
    as_json: JsonOption = False,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Cutoff-violation rate per backend: results dated at or after the cutoff, before our
    post-filter, for the brief and each of its sentences on every instance (on a remote
    backend, a seeded sample of the sentences with --remote-sample)."""
    from inspire_build.env import audit, run

    check_split(ctx, split, version, warehouse_path)
    root: _Context = ctx.obj
    sample = audit.Sample(remote_sample, seed) if remote_sample is not None else None
    rows = []
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        for name in backends or ["local"]:
            mode: SourceMode | None = "replay" if offline else None
            chosen, tasks, made = run.prepare(con, root.settings, split, version, name, mode)
            drawn = sample if name != "local" else None
            with progress_bars() as progress:
                bar = progress.add_task(f"audit {name} on {chosen}", total=len(tasks))
                advance = partial(progress.advance, bar)
                rows.append(audit.audit_backend(made, tasks, k, advance, drawn))
    for row in rows:
        line = {
            **dataclasses.asdict(row),
            "sampled": row.sampled,
            "violation_rate": row.violation_rate,
            "undated_rate": row.undated_rate,
        }
        if as_json:
            print(json.dumps(line))
        else:
            out.print(
                f"{row.backend:<9} {_probed(row)}, {row.returned:,} results: "
                f"cutoff-violation rate {row.violation_rate:.4f} ({row.late:,} at or after the "
                f"cutoff), undated {row.undated:,}, target {row.target:,} "
                "(all withheld by the environment)"
            )


def _probed(row: AuditRow) -> str:
    """The queries an audit row counts: all of its briefs' sentences, or the sample of them."""
    if row.sample is None:
        return f"{row.queries:,} queries"
    return (
        f"{row.queries:,} of {row.population:,} queries sampled ({row.sample.per_brief} per "
        f"brief of {row.briefs:,}: the brief and {row.sample.per_brief - 1} of its sentences, "
        f"seed {row.sample.seed})"
    )


@contextmanager
def _tool_sessions(
    ctx: typer.Context,
    split: str,
    version: str | None,
    backend: str,
    budget: int,
    lines: tuple[Path | None, Path | None],
    run_name: str | None,
    debug_reveal_scores: bool,
    warehouse_path: Path | None,
) -> Iterator[ToolSessions]:
    """The sessions of one run, served while its warehouse stays open; ``lines`` are the run and
    trajectory files appended on submit."""
    from inspire_build.env import run, server
    from inspire_build.env.core import SearchEnv

    check_split(ctx, split, version, warehouse_path)
    root: _Context = ctx.obj
    run_path, trajectories = lines

    def submitted(env: SearchEnv, scores_revealed: bool) -> None:
        if run_path is not None:
            run.append_jsonl(run_path, env.run_line())
        if trajectories is not None:
            run.append_jsonl(trajectories, env.trajectory_line(scores_revealed))

    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        chosen, tasks, made = run.prepare(con, root.settings, split, version, backend)
        if debug_reveal_scores:
            err.print(REVEAL_WARNING)
        yield server.ToolSessions(
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


@env_app.command("instances")
def env_instances(
    ctx: typer.Context,
    split: SplitOption = "eval",
    version: VersionOption = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """The operator's list of a split version's instances (default: the split's latest), one
    JSON line each: instance_id, brief and cutoff. For a harness that starts `inspire env mcp
    --instance ID` per instance."""
    from inspire_build import splits
    from inspire_build.env import store

    check_split(ctx, split, version, warehouse_path)
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        chosen = version or splits.latest_version(con, split)
        tasks = store.load_tasks(con, chosen)
    for task in tasks:
        line = {"instance_id": task.instance_id, "brief": task.brief}
        print(json.dumps({**line, "cutoff": task.cutoff.isoformat()}, ensure_ascii=False))


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
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--operator-key-file",
            help="Where to write the operator key (mode 0600; removed when the server stops). "
            "Default: beside the warehouse, as <warehouse>.operator-key.",
        ),
    ] = None,
    debug_reveal_scores: RevealOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Serve the search environment over HTTP/JSON on 127.0.0.1: the operator (with the
    operator key, made now, shown once on stderr and written to a 0600 file) lists instances and
    starts sessions; an agent, with its session's token, searches, reads and submits."""
    from inspire_build import local_server
    from inspire_build.env import server

    path = key_file or server.operator_key_file(warehouse_of(ctx, warehouse_path))
    key, lines = server.new_operator_key(), (run_path, trajectories)
    sock = local_server.bind(port)  # a busy port fails here, before the warehouse opens
    try:
        with _tool_sessions(
            ctx, split, version, backend, budget, lines, run_name, debug_reveal_scores,
            warehouse_path,
        ) as sessions:  # fmt: skip
            server.write_secret(path, key)
            err.print(
                f"serving {len(sessions.tasks)} instance(s) of run {sessions.run_name!r} on "
                f"http://127.0.0.1:{sock.getsockname()[1]}\n"
                f"operator key (shown once; also in {path}, mode 0600): {key}"
            )
            local_server.serve_on(server.create_app(sessions, key), sock)
    finally:
        sock.close()
        if server.read_secret(path) == key:  # not a later server's key
            path.unlink()


@env_app.command("mcp")
def env_mcp(
    ctx: typer.Context,
    instance: Annotated[
        str, typer.Option("--instance", help="The one instance this server's session is on.")
    ],
    split: SplitOption = "eval",
    version: VersionOption = None,
    backend: BackendOption = "local",
    budget: BudgetOption = DEFAULT_BUDGET,
    run_path: RunAppendOption = None,
    trajectories: TrajectoriesAppendOption = None,
    run_name: RunNameOption = None,
    session_file: Annotated[
        Path | None,
        typer.Option(
            "--session-file",
            help="Where the session's token is kept (mode 0600): written when the session "
            "opens, read to resume it. Default: a file under <warehouse>.sessions/.",
        ),
    ] = None,
    debug_reveal_scores: RevealOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Serve ONE session as MCP tools over stdio: opens the instance's session (or resumes it
    with its kept token) and offers the agent search, read and submit only."""
    from inspire_build.env import server
    from inspire_build.env.mcp_server import create_mcp

    lines = (run_path, trajectories)
    with _tool_sessions(
        ctx, split, version, backend, budget, lines, run_name, debug_reveal_scores, warehouse_path
    ) as sessions:
        where = warehouse_of(ctx, warehouse_path)
        kept = session_file or server.session_file(where, sessions.run_name, instance)
        token = server.hold_session(sessions, instance, "mcp", kept)
        create_mcp(sessions, token).run("stdio")
