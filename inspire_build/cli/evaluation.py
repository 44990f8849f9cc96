"""Scoring runs: `eval`."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

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
            help="Score paper IDs that cannot match a judged document (no ID of any scheme; "
            "with --qrels and no warehouse, a scheme no judged document has, or a run that "
            "matches none) as misses, instead of refusing the run.",
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
    options = _EvalOptions(
        split,
        version,
        qrels,
        bootstrap_samples,
        where,
        allow_unjudged,
        gains,
        warehouse_path,
        as_json,
        plots,
    )
    if ctx.invoked_subcommand is not None:
        ctx.obj = options
        return
    if run is None:
        raise InputError("give --run FILE (or use `inspire eval compare RUN_A RUN_B`)")
    if plots is not None:
        _check_output_folder(plots, "--plots")
    from inspire_build.evaluation import report

    _check_names([name] if name is not None else [])
    scores = options.evaluate(run, trajectories, name=name, gains=gains)
    if plots is not None:
        from inspire_build.evaluation import plots as figures

        for path in figures.render({name or run.stem: scores}, plots):
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
    gains: str = "linear"  # what `eval report` and `eval compare` score with
    given_warehouse: Path | None = None  # the group's --warehouse, as given
    as_json: bool = False  # the group's --json and --plots, for its subcommands
    plots: Path | None = None

    def evaluate(
        self,
        run: Path,
        trajectories: Path | None,
        name: str | None = None,
        gains: str = "linear",
        record: bool = True,
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
            record=record,
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
    both runs' trajectories, of the funnel too (exposed and selected gain: the paper's Table 4).
    Scored with `inspire eval`'s --gains; nothing is written to the warehouse (`eval` and
    `eval report` write runs)."""
    from inspire_build.evaluation import report
    from inspire_build.evaluation.score import FUNNEL_PAIRED, TABLE2, paired

    if (trajectories_a is None) != (trajectories_b is None):
        raise InputError("give both runs' trajectories (--trajectories-a and -b), or neither")
    options: _EvalOptions = ctx.obj
    if options.plots is not None:
        raise InputError("--plots draws a run's or a report's figures; compare draws none")
    scored = [
        options.evaluate(path, paths, gains=options.gains, record=False)
        for path, paths in ((run_a, trajectories_a), (run_b, trajectories_b))
    ]
    metrics = TABLE2 + (FUNNEL_PAIRED if trajectories_a else ())
    for line in report.notes(scored[0], run_a.name) + report.notes(scored[1], run_b.name):
        err.print(line)
    differences = paired(scored[0], scored[1], metrics, options.samples)
    shared, against = len(scored[0].per_instance), report.against(scored[0])
    if options.as_json:
        names = (str(run_a), str(run_b))
        print(json.dumps(report.compare_json(scored[0], names, options.gains, differences)))
        return
    out.print(f"{run_a.name} - {run_b.name}, paired over {shared} instances of {against}")
    for metric, (mean, low, high) in differences.items():
        out.print(f"{metric:<20}{mean:>+8.3f}   [{low:+.3f}, {high:+.3f}]")


@eval_app.command("report")
def eval_report(
    ctx: typer.Context,
    runs: Annotated[
        list[Path] | None,
        typer.Option(
            "--run", help="A run file (JSONL or TREC); repeat it for each run.", metavar="FILE"
        ),
    ] = None,
    trajectories: Annotated[
        list[Path] | None,
        typer.Option(
            "--trajectories",
            help="Trajectories (JSONL): one per --run, in the same order, or none.",
            metavar="FILE",
        ),
    ] = None,
    names: Annotated[
        list[str] | None,
        typer.Option(
            "--name",
            help="A run's name: one per --run, in order (default: the files' stems).",
            metavar="NAME",
        ),
    ] = None,
    split: Annotated[str | None, typer.Option(help="Score against this split's qrels.")] = None,
    version: Annotated[str | None, typer.Option(help="A version ID (default: latest).")] = None,
    plots: Annotated[
        Path | None, typer.Option("--plots", help="Folder for the figures (PNG and SVG).")
    ] = None,
    bootstrap_samples: Annotated[
        int | None,
        typer.Option("--bootstrap", help="Bootstrap resamples (default: eval's, 1000).", min=1),
    ] = None,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """The Table 2 rows of several runs, and with their trajectories their Table 3 (funnel)
    rows, each with n and 95% bootstrap intervals; --plots draws them all in each figure.
    Against a split, each run is written to eval_runs as `inspire eval` writes it."""
    group: _EvalOptions = ctx.obj
    plots, as_json = plots or group.plots, as_json or group.as_json  # given before `report`
    if plots is not None:
        _check_output_folder(plots, "--plots")
    paired = _paired_runs(runs or [], trajectories or [], names or [])
    options = _report_options(ctx, split, version, bootstrap_samples, warehouse_path)
    scored = _score_all(options, paired)
    from inspire_build.evaluation import report

    for name, (run, _) in paired.items():
        for line in report.notes(scored[name], run.name):
            err.print(line)
    for line in _pairing_warnings(scored, paired):
        err.print(line)
    if plots is not None:
        from inspire_build.evaluation import plots as figures

        for path in figures.render(scored, plots):
            err.print(f"wrote {path}")
    if as_json:
        sources = {n: (str(r), str(t) if t else None) for n, (r, t) in paired.items()}
        print(json.dumps(report.report_json(scored, sources)))
        return
    for line in report.report_lines(scored):
        out.print(line)


def _report_options(
    ctx: typer.Context,
    split: str | None,
    version: str | None,
    samples: int | None,
    warehouse_path: Path | None,
) -> _EvalOptions:
    """`eval report`'s own --split, --version, --bootstrap and --warehouse, else those given to
    `inspire eval` before it (so `inspire eval --qrels Q report ...` works); a split or version
    given at both places must agree."""
    group: _EvalOptions = ctx.obj
    for option, here, there in (
        ("--split", split, group.split),
        ("--version", version, group.version),
    ):
        if here is not None and there is not None and here != there:
            raise InputError(f"{option} is given twice, as {there!r} and {here!r}; give one")
    split, version = split or group.split, version or group.version
    if (split is None) == (group.qrels is None):
        raise InputError("give either --split S or `inspire eval --qrels FILE report ...`")
    root = cast(typer.Context, ctx.find_root())  # the app's, whose obj holds the settings
    given = warehouse_path or group.given_warehouse
    check_split(root, split, version if split else None, given)
    where = _scoring_warehouse(root, given, split)
    chosen = samples or group.samples
    return dataclasses.replace(
        group, split=split, version=version, samples=chosen, warehouse=where, given_warehouse=given
    )


def _check_names(names: list[str]) -> None:
    """A run's name is a label of Table 2 and a row of eval_runs: some visible text on one
    line (an empty name, a line end or a terminal escape would make an empty or broken row)."""
    for name in names:
        if not name.strip() or not name.isprintable():
            raise InputError(f"--name {name!r}: a run's name is visible text on one line")


def _paired_runs(
    runs: list[Path], trajectories: list[Path], names: list[str]
) -> dict[str, tuple[Path, Path | None]]:
    """name -> (run, its trajectories): --trajectories and --name pair with --run by order, so
    each must be given once per --run or not at all; names must differ; every file must be a
    regular file."""
    if not runs:
        raise InputError("--run: give at least one run file (repeat --run for each run)")
    for option, given in (("--trajectories", trajectories), ("--name", names)):
        if given and len(given) != len(runs):
            raise InputError(
                f"{option}: give one per --run, in the same order, or none "
                f"({len(runs)} --run, {len(given)} {option})"
            )
    for option, files in (("--run", runs), ("--trajectories", trajectories)):
        # Checked before any run is scored (and written): a missing file is the usual slip.
        missing = [str(path) for path in files if not path.is_file()]
        if missing:
            raise InputError(f"{option}: not a regular file: {', '.join(missing)}")
    _check_names(names)
    labels = names or [run.stem for run in runs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        hint = "" if names else " (the runs' file names); name each run with --name"
        raise InputError(
            f"--name: each run needs its own name; {', '.join(twice)} is given twice{hint}"
        )
    paths: list[Path | None] = list(trajectories) or [None] * len(runs)
    return {label: (run, path) for label, run, path in zip(labels, runs, paths, strict=True)}


def _score_all(
    options: _EvalOptions, paired: dict[str, tuple[Path, Path | None]]
) -> dict[str, Scores]:
    """Each run scored as `inspire eval` scores it; the first fixes the version (the split's
    latest), so that every run is scored against the same one."""
    scored: dict[str, Scores] = {}
    for name, (run, paths) in paired.items():
        scored[name] = options.evaluate(run, paths, name=name, gains=options.gains)
        if options.split is not None and options.version is None:
            options = dataclasses.replace(options, version=scored[name].version)
    return scored


def _pairing_warnings(
    scored: dict[str, Scores], paired: dict[str, tuple[Path, Path | None]]
) -> list[str]:
    """A run whose submissions its trajectories never exposed was likely paired with another
    run's trajectories: say so (the env's agents submit only what they saw)."""
    found = []
    for name, (_, paths) in paired.items():
        unexposed = scored[name].aggregate.get("unexposed_submissions", 0.0)
        if paths is not None and unexposed:
            found.append(
                f"warning: {name}: {unexposed:.0f} submitted ID(s) that no step of {paths.name} "
                "exposed; are these the run's trajectories?"
            )
    return found
