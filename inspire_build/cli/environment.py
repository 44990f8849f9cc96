"""The search environment and its agents: `corpus`, `agent`, `hindsight`, `env`."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inspire_build import local_server, warehouse
from inspire_build.env.core import DEFAULT_BUDGET
from inspire_build.errors import InputError
from inspire_build.http import SourceMode

if TYPE_CHECKING:
    from inspire_build.env.audit import AuditRow
    from inspire_build.env.llm_run import LlmRun
    from inspire_build.env.server import ToolSessions
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
    agent_app,
    check_split,
    corpus_app,
    env_app,
    err,
    hindsight_app,
    out,
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
            records = [corpus.from_paper(p) for p in corpus.read_snapshot(snapshot_file)]
            origin = "snapshot"
        else:
            from inspire_build.sources import openalex

            if start is None or end is None:
                raise InputError("--from and --to go together")
            window = openalex.window_filter(
                fields or ["Computer Science"], _parse_date(start), _parse_date(end)
            )
            with _progress() as progress:
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


@contextmanager
def _progress() -> Iterator[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        yield progress


def _bars(shown: ExitStack, label: str) -> Callable[[str, int], Callable[[], None]]:
    """A run's ``started(version, instances)``: a progress bar, shown once the instances are
    known; what it returns advances it."""

    def started(chosen: str, instances: int) -> Callable[[], None]:
        bars = shown.enter_context(_progress())
        bar = bars.add_task(f"{label} on {chosen}", total=instances)
        return lambda: bars.advance(bar)

    return started


# The options of `agent run` that only `--agent llm` takes.
_ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="--agent llm: the model (default: $INSPIRE_LLM_MODEL)."),
]
_BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="--agent llm: an OpenAI-compatible endpoint (default: $INSPIRE_LLM_BASE_URL).",
    ),
]
_ApiKeyEnvOption = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="--agent llm: the environment variable that holds the endpoint's key "
        "(default: INSPIRE_LLM_API_KEY).",
    ),
]
_ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--concurrency",
        min=1,
        help="--agent llm: instances at once (default: $INSPIRE_LLM_CONCURRENCY).",
    ),
]
_InstanceTimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--instance-timeout",
        min=0,
        help="--agent llm: seconds an instance may take before it fails as a timeout "
        "(default 1800; 0: no limit).",
    ),
]


@dataclasses.dataclass(frozen=True)
class _LlmChoice:
    """The options of `agent run` that only `--agent llm` takes."""

    model: str | None
    base_url: str | None
    api_key_env: str | None
    concurrency: int | None
    instance_timeout: float | None

    def given(self) -> bool:
        return any(v is not None for v in dataclasses.astuple(self))


@agent_app.command("run")
def agent_run(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option("--agent", help="bm25-brief, multi-query or llm.")],
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
            help="A toy keyphrase policy (policy.json of `inspire hindsight build`) for "
            "multi-query; it showed no held-out gain (docs/evaluation.md).",
        ),
    ] = None,
    model: _ModelOption = None,
    base_url: _BaseUrlOption = None,
    api_key_env: _ApiKeyEnvOption = None,
    concurrency: _ConcurrencyOption = None,
    instance_timeout: _InstanceTimeoutOption = None,
    offline: OfflineOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Run an agent on every instance of a split version, as the operator: one session each,
    the agent holding only that session's tools; writes its run and trajectories."""
    from inspire_build.env import agents, run

    check_split(ctx, split, version, warehouse_path)
    mode: SourceMode | None = "replay" if offline else None
    where = (split, version, backend, budget)
    llm = _LlmChoice(model, base_url, api_key_env, concurrency, instance_timeout)
    if agent == "llm":
        if policy is not None:
            raise InputError("--policy applies to the multi-query agent only")
        _agent_run_llm(ctx, llm, where, mode, (out_path, trajectories), warehouse_path)
        return
    if llm.given():
        raise InputError(
            "--model, --base-url, --api-key-env, --concurrency and --instance-timeout apply "
            "to --agent llm only"
        )
    chosen_agent = agents.make_agent(agent)
    if policy is not None:
        from inspire_build.env.policy import Policy

        if not isinstance(chosen_agent, agents.MultiQueryAgent):
            raise InputError("--policy applies to the multi-query agent only")
        chosen_agent = agents.MultiQueryAgent(Policy.load(policy), name="multi-query-learned")
        agent = chosen_agent.name
    root: _Context = ctx.obj
    with (
        warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con,
        ExitStack() as shown,
    ):
        started = _bars(shown, agent)
        chosen, envs = run.run_split(con, root.settings, chosen_agent, where, mode, started)
    calls = run.write_run(envs, out_path, trajectories)
    out.print(
        f"{agent}: {len(envs)} instance(s) of {chosen}, {calls} tool call(s) on {backend}; "
        f"wrote {out_path} and {trajectories}"
    )


def _agent_run_llm(
    ctx: typer.Context,
    llm: _LlmChoice,
    where: tuple[str, str | None, str, int],
    mode: SourceMode | None,
    files: tuple[Path, Path],
    warehouse_path: Path | None,
) -> None:
    """`agent run --agent llm`: the run, its files, and what it counted."""
    from inspire_build.env import llm_agent, llm_run, run

    key = None
    if llm.api_key_env is not None:
        key = os.environ.get(llm.api_key_env)
        if not key:
            raise InputError(f"--api-key-env: the variable {llm.api_key_env} is not set")
    root: _Context = ctx.obj
    settings = llm_run.agent_settings(root.settings, llm.model, llm.base_url, key)
    timeout = llm_agent.DEFAULT_DEADLINE_S if llm.instance_timeout is None else llm.instance_timeout
    with (
        warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con,
        ExitStack() as shown,
    ):
        done = llm_run.run_llm(
            con,
            settings,
            where,
            workers=llm.concurrency or settings.llm_concurrency,
            deadline_s=timeout or None,
            started=_bars(shown, f"llm ({settings.llm_model})"),
            mode=mode,
        )
    calls = run.write_run(done.envs, *files, done.notes())
    for line in _llm_summary(done, settings.llm_model, calls, where[2]):
        out.print(line)
    out.print(f"wrote {files[0]} and {files[1]}")


def _llm_summary(done: LlmRun, model: str, calls: int, backend: str) -> list[str]:
    """What an LLM run did: instances, submissions and failures, turns, tokens and cost."""
    from inspire_build.llm_budget import usd

    failed = done.failures()
    ended = sum(failed.values())
    counted = ", ".join(f"{n} {reason}" for reason, n in failed.items())
    totals = done.totals
    cost = usd(totals.cost_usd)
    if totals.unpriced:
        cost = f"unknown ({model} has no price in INSPIRE_LLM_PRICES)"
    return [
        f"llm ({model}): {len(done.envs)} instance(s) of {done.version} in run "
        f"{done.run_name}, {calls} tool call(s) on {backend}",
        f"submitted by the model: {len(done.envs) - ended}; ended as an empty submission: "
        f"{ended}" + (f" ({counted})" if counted else ""),
        f"model turns: {totals.turns:,}; tokens {totals.tokens_in:,} in, "
        f"{totals.tokens_out:,} out; cost {cost}",
    ]


@hindsight_app.command("build")
def hindsight_build(
    ctx: typer.Context,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")],
    split: SplitOption = "train",
    version: VersionOption = None,
    budget: BudgetOption = DEFAULT_BUDGET,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Build a replay-checked demonstration per instance; write the kept ones as tool-call
    transcripts (OpenAI fine-tuning JSONL and TRL rows, each replayed through the environment),
    their run and trajectories, a manifest, and a toy keyphrase policy trained on them."""
    from inspire_build import hindsight, splits

    check_split(ctx, split, version, warehouse_path)
    with (
        warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con,
        ExitStack() as shown,
    ):
        chosen = version or splits.latest_version(con, split)

        def started(instances: int) -> Callable[[], None]:
            bars = shown.enter_context(_progress())  # once the instances are known
            bar = bars.add_task(f"demonstrations of {chosen}", total=instances)
            return lambda: bars.advance(bar)

        outcome, info, instances = hindsight.build_version(con, chosen, budget, started)
    manifest = hindsight.export(out_dir, outcome, info, instances)
    out.print(
        f"{manifest['kept']} of {manifest['instances']} demonstration(s) of {chosen} kept "
        f"({manifest['kept_share']:.1%}); dropped: "
        + (", ".join(f"{r} {n}" for r, n in outcome.drop_counts().items()) or "none")
    )
    funnel = manifest["funnel"]
    if isinstance(funnel, dict):
        out.print("  ".join(f"{m} {v:.3f}" for m, v in funnel.items()))
    if "policy" in manifest:
        out.print("policy.json is a toy: it showed no held-out gain (see the manifest)")
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
            with _progress() as progress:
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
