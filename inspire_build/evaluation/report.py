"""Evaluation output: Table 2 and Table 3 style lines, and the eval_runs/eval_scores rows."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence

import duckdb

from inspire_build import warehouse
from inspire_build.evaluation.score import TABLE2, Scores

TABLE3 = (
    "exposed_gain",
    "no_relevant_exposed",
    "selected_gain",
    "ndcg@10",
    "gain_kept",
    "rank_quality",
    "total_calls",
)
SHOWN_UNKNOWN = 5  # unknown instance IDs named in a warning


def against(scores: Scores) -> str:
    """What was scored against: the split version, or the qrels file."""
    if scores.version is not None:
        return f"version {scores.version}"
    return f"qrels file {scores.qrels_file}" if scores.qrels_file else "the given qrels"


def lines(scores: Scores) -> list[str]:
    shown = [
        f"scored against {against(scores)}: {len(scores.per_instance)} instance(s)",
        f"{len(scores.unknown_instances)} submitted instance ID(s) not in it (not scored); "
        f"{scores.unknown_ids} submitted paper ID(s) not among any instance's antecedents "
        "(scored as non-relevant)",
        "",
        f"{'metric':<22}{'value':>8}   95% interval",
    ]
    names = list(TABLE2) + ([m for m in TABLE3 if m != "ndcg@10"] if scores.curve else [])
    for metric in names:
        shown.append(f"{metric:<22}{_cell(scores, metric, '{:>8.3f}   [{:.3f}, {:.3f}]')}")
    shown.append(_multi_hit_note(scores))
    if scores.curve:
        shown.append(
            f"{'unexposed_submissions':<22}{scores.aggregate['unexposed_submissions']:>8.0f}"
        )
        curve = "  ".join(f"{p:.1f}:{v:.3f}" for p, v in scores.curve.items())
        shown += ["", f"oracle exposed gain by search progress: {curve}"]
    return shown


def table(runs: Mapping[str, Scores], metrics: Sequence[str]) -> list[str]:
    """One row per run (name -> scores): n, the instances scored, then each metric's mean and
    95% bootstrap interval; a header row first."""
    width = max([len("run"), *map(len, runs)])
    cells = {name: [_cell(scores, m) for m in metrics] for name, scores in runs.items()}
    sizes = [max([len(m), *(len(row[i]) for row in cells.values())]) for i, m in enumerate(metrics)]
    head = [
        f"{'run':<{width}}  {'n':>5}",
        *(f"{m:<{w}}" for m, w in zip(metrics, sizes, strict=True)),
    ]
    shown = ["  ".join(head).rstrip()]
    for name, scores in runs.items():
        row = [f"{name:<{width}}  {len(scores.per_instance):>5}"]
        row += [f"{c:<{w}}" for c, w in zip(cells[name], sizes, strict=True)]
        shown.append("  ".join(row).rstrip())
    return shown


def _cell(scores: Scores, metric: str, shape: str = "") -> str:
    """A metric's mean and interval in ``shape``; where it is undefined (hits>=5 when no
    instance has five antecedents, rank quality when nothing was selected), a dash: a mean of
    nothing is not 0."""
    value = scores.aggregate.get(metric)
    if value is None:
        return f"{'-':>8}   (undefined)" if shape else "-"
    low, high = scores.intervals.get(metric, (value, value))
    digits = 1 if metric == "total_calls" else 3
    shape = shape or f"{{:.{digits}f}} [{{:.{digits}f}}, {{:.{digits}f}}]"
    return shape.format(value, low, high)


def report_lines(runs: Mapping[str, Scores]) -> list[str]:
    """What ``inspire eval report`` prints: what was scored against, then the Table 2 rows of
    every run and, for runs scored with trajectories, their Table 3 (funnel) rows."""
    first = next(iter(runs.values()))
    shown = [
        f"scored against {against(first)}: {len(first.per_instance)} instance(s), "
        f"{len(runs)} run(s)"
    ]
    shown += ["", "Table 2: mean and 95% bootstrap interval", *table(runs, TABLE2)]
    shown += [_multi_hit_note(first)]
    traced = {name: scores for name, scores in runs.items() if scores.curve is not None}
    if traced:
        shown += [
            "",
            "Table 3: the funnel, mean and 95% bootstrap interval",
            *table(traced, TABLE3),
            _unexposed_note(traced),
        ]
    return shown


def _multi_hit_note(scores: Scores) -> str:
    """hits>=3 and hits>=5 are means over fewer instances: those with that many antecedents."""
    counts = [
        sum(1 for m in scores.per_instance.values() if m.get(metric) is not None)
        for metric in ("hits>=3", "hits>=5")
    ]
    return (
        f"(hits>=3 is over the {counts[0]} instance(s) with at least 3 antecedents, "
        f"hits>=5 over the {counts[1]} with at least 5)"
    )


def _unexposed_note(runs: Mapping[str, Scores]) -> str:
    counts = ", ".join(
        f"{name} {scores.aggregate.get('unexposed_submissions', 0.0):.0f}"
        for name, scores in runs.items()
    )
    return f"(submitted IDs no step of the run's trajectories exposed: {counts})"


def report_json(
    runs: Mapping[str, Scores], sources: Mapping[str, tuple[str, str | None]]
) -> dict[str, object]:
    """What ``inspire eval report --json`` prints: per run (in order), its name, files and what
    ``inspire eval --json`` prints less ``per_instance``, with the oracle curve."""
    first = next(iter(runs.values()))
    return {
        "version": first.version,
        "qrels_file": first.qrels_file,
        "instances": len(first.per_instance),
        "runs": [
            {
                "name": name,
                "run": sources[name][0],
                "trajectories": sources[name][1],
                **{k: v for k, v in as_json(scores).items() if k != "per_instance"},
                "curve": {str(p): v for p, v in (scores.curve or {}).items()} or None,
            }
            for name, scores in runs.items()
        ],
    }


def notes(scores: Scores, run: str = "the run") -> list[str]:
    """Warnings for stderr: submitted instance IDs that are not in what was scored against, and
    instances scored against that the run has no line for (each scores 0, as trec_eval -c)."""
    found = []
    if missing := scores.missing_instances:
        more = ", ..." if len(missing) > SHOWN_UNKNOWN else ""
        found.append(
            f"warning: {len(missing)} of the {len(scores.per_instance)} instance(s) of "
            f"{against(scores)} have no line in {run}: each scores 0: "
            + ", ".join(missing[:SHOWN_UNKNOWN])
            + more
        )
    if revealed := scores.revealed:
        found.append(
            f"warning: {len(revealed)} of the {len(scores.per_instance)} instance(s) in "
            f"{run}'s trajectories come from sessions told their scores "
            "(--debug-reveal-scores-to-agent): the run is no fair comparison"
        )
    for what, unknown in (
        (run, scores.unknown_instances),
        (f"{run}'s trajectories", scores.unknown_trajectories),
    ):
        if unknown:
            more = ", ..." if len(unknown) > SHOWN_UNKNOWN else ""
            named = ", ".join(unknown[:SHOWN_UNKNOWN]) + more
            found.append(
                f"warning: {len(unknown)} instance ID(s) in {what} not in {against(scores)}, "
                f"not scored: {named}"
            )
    return found


def as_json(scores: Scores) -> dict[str, object]:
    """What ``inspire eval --json`` prints: the target, counts, means, intervals, per instance."""
    return {
        "version": scores.version,
        "qrels_file": scores.qrels_file,
        "instances": len(scores.per_instance),
        "unknown_instance_ids": len(scores.unknown_instances),
        "missing_instance_ids": len(scores.missing_instances),
        "unknown_trajectory_instance_ids": len(scores.unknown_trajectories),
        "scores_revealed_instances": len(scores.revealed),
        "unknown_paper_ids": scores.unknown_ids,
        "aggregate": scores.aggregate,
        "intervals": {metric: list(bounds) for metric, bounds in scores.intervals.items()},
        "per_instance": scores.per_instance,
    }


def compare_json(
    a: Scores,
    runs: tuple[str, str],
    gains: str,
    differences: Mapping[str, tuple[float, float, float]],
) -> dict[str, object]:
    """What ``inspire eval compare --json`` prints: what was scored against, the two run files,
    the gains, n, and each metric's paired difference A - B with its interval."""
    return {
        "version": a.version,
        "qrels_file": a.qrels_file,
        "run_a": runs[0],
        "run_b": runs[1],
        "gains": gains,
        "instances": len(a.per_instance),
        "differences": {
            metric: {"mean": mean, "low": low, "high": high}
            for metric, (mean, low, high) in differences.items()
        },
    }


def write(
    con: duckdb.DuckDBPyConnection,
    scores: Scores,
    name: str,
    digest: str,
    gains: str,
    samples: int,
    has_trajectories: bool,
) -> str:
    """Write the run (``digest``: its file's sha256) and its per-instance and aggregate ('*')
    scores against ``scores.version``; returns the run ID."""
    version = scores.version
    run_id = hashlib.sha256(f"{name}\0{version}\0{digest}\0{gains}".encode()).hexdigest()[:16]
    rows = [
        {
            "run_id": run_id,
            "instance_id": iid,
            "metric": metric,
            "value": value,
            "ci_low": None,
            "ci_high": None,
        }
        for iid, metrics in scores.per_instance.items()
        for metric, value in metrics.items()
    ]
    rows += [
        {
            "run_id": run_id,
            "instance_id": "*",
            "metric": metric,
            "value": value,
            "ci_low": scores.intervals.get(metric, (None, None))[0],
            "ci_high": scores.intervals.get(metric, (None, None))[1],
        }
        for metric, value in scores.aggregate.items()
    ]
    with warehouse.transaction(con):
        warehouse.upsert(
            con,
            "eval_runs",
            [
                {
                    "run_id": run_id,
                    "version_id": version,
                    "name": name,
                    "run_sha256": digest,
                    "params": {"gains": gains, "bootstrap_samples": samples},
                    "n_instances": len(scores.per_instance),
                    "has_trajectories": has_trajectories,
                    "created_at": dt.datetime.now(dt.UTC),
                }
            ],
            ["run_id"],
        )
        warehouse.replace_where(
            con, "eval_scores", {"run_id": run_id}, rows, ["run_id", "instance_id", "metric"]
        )
    return run_id
