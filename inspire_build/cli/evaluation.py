"""Scoring runs: `eval`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inspire_build.config import DEFAULT_WAREHOUSE
from inspire_build.errors import InputError

if TYPE_CHECKING:
    from inspire_build.evaluation.score import Scores
from inspire_build.cli.common import (
    JsonOption,
    WarehouseOption,
    _check_output_folder,
    app,
    check_split,
    err,
    out,
    warehouse_of,
)

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
    allow_unjudged: Annotated[
        bool,
        typer.Option(
            "--allow-unjudged",
            help="With --qrels and no warehouse: score a run whose IDs match no judged "
            "document (another ID scheme) as it is, instead of refusing it.",
            metavar="",
        ),
    ] = False,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Score a run (and trajectories) with nDCG@10, Recall@10, MRR, AnyHit@10, ≥3/≥5 hits
    and the exposure-selection-ranking funnel, with 95% bootstrap intervals."""
    check_split(ctx, split, version if split else None, warehouse_path)
    where = _scoring_warehouse(ctx, warehouse_path, split)
    options = _EvalOptions(split, version, qrels, bootstrap_samples, where, allow_unjudged)
    if ctx.invoked_subcommand is not None:
        ctx.obj = options
        return
    if run is None:
        raise InputError("give --run FILE (or use `inspire eval compare RUN_A RUN_B`)")
    if plots is not None:
        _check_output_folder(plots, "--plots")
    from inspire_build.evaluation import report

    scores = options.evaluate(run, trajectories, name=name, gains=gains)
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


def _scoring_warehouse(ctx: typer.Context, given: Path | None, split: str | None) -> Path | None:
    """The warehouse a split is scored from; with --qrels, the one whose crosswalk maps the
    IDs, when one is at hand: the one named (--warehouse, $INSPIRE_WAREHOUSE), which must
    exist, else the default file where it exists."""
    root = ctx.obj
    if split is None and given is None and root.warehouse == DEFAULT_WAREHOUSE:
        return DEFAULT_WAREHOUSE if DEFAULT_WAREHOUSE.is_file() else None
    return warehouse_of(ctx, given)


@dataclass(frozen=True)
class _EvalOptions:
    """What `inspire eval` was given to score against, which `eval compare` scores with too."""

    split: str | None
    version: str | None
    qrels: Path | None
    samples: int
    warehouse: Path | None  # a split's; with --qrels, only its crosswalk is read
    allow_unjudged: bool = False

    def evaluate(
        self, run: Path, trajectories: Path | None, name: str | None = None, gains: str = "linear"
    ) -> Scores:
        from inspire_build.evaluation.evaluate import evaluate

        return evaluate(
            run,
            split=self.split,
            version=self.version,
            qrels=self.qrels,
            trajectories=trajectories,
            name=name,
            gains=gains,
            samples=self.samples,
            warehouse_path=self.warehouse,
            allow_unjudged=self.allow_unjudged,
        )


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
    from inspire_build.evaluation.score import FUNNEL_PAIRED, TABLE2, paired

    if (trajectories_a is None) != (trajectories_b is None):
        raise InputError("give both runs' trajectories (--trajectories-a and -b), or neither")
    options: _EvalOptions = ctx.obj
    scored = [
        options.evaluate(path, paths)
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
