"""Agents on the search environment: `agent run` (the baselines and an LLM with tools) and
`hindsight build` (demonstrations for training one)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inspire_build import warehouse
from inspire_build.env.core import DEFAULT_BUDGET
from inspire_build.errors import InputError

if TYPE_CHECKING:
    from inspire_build.env.llm_run import LlmRun
    from inspire_build.http import SourceMode
from inspire_build.cli.common import (
    BackendOption,
    BudgetOption,
    OfflineOption,
    SplitOption,
    VersionOption,
    WarehouseOption,
    _Context,
    agent_app,
    check_split,
    hindsight_app,
    out,
    progress_bars,
    warehouse_of,
)


def _bars(shown: ExitStack, label: str) -> Callable[[str, int], Callable[[], None]]:
    """A run's ``started(version, instances)``: a progress bar, shown once the instances are
    known; what it returns advances it."""

    def started(chosen: str, instances: int) -> Callable[[], None]:
        bars = shown.enter_context(progress_bars())
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
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Run file to write (JSONL); default: a new file under run/agents/."
        ),
    ] = None,
    trajectories: Annotated[
        Path | None,
        typer.Option(
            "--trajectories",
            help="Trajectory file to write (JSONL); default: beside the default run file.",
        ),
    ] = None,
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
    out_path, trajectories = _run_files(agent, split, out_path, trajectories)
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


def _run_files(
    agent: str, split: str, out_path: Path | None, trajectories: Path | None
) -> tuple[Path, Path]:
    """--out and --trajectories, else two new files under run/agents/, named by the agent, the
    split and the time: a rerun never overwrites an earlier run's."""
    if (out_path is None) != (trajectories is None):
        raise InputError("give both --out and --trajectories, or neither (both go to run/agents/)")
    if out_path is not None and trajectories is not None:
        return out_path, trajectories
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    stem = Path("run", "agents", f"{agent}-{split}-{stamp}")
    return Path(f"{stem}.jsonl"), Path(f"{stem}.trajectories.jsonl")


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
            bars = shown.enter_context(progress_bars())  # once the instances are known
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
