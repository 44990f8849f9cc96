"""Evaluation output: Table 2 and Table 3 style lines, and the eval_runs/eval_scores rows."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

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


def lines(scores: Scores) -> list[str]:
    shown = [
        f"{len(scores.per_instance)} instance(s); {scores.unknown_ids} submitted ID(s) "
        "not among any instance's antecedents (scored as non-relevant)",
        "",
        f"{'metric':<22}{'value':>8}   95% interval",
    ]
    names = list(TABLE2) + ([m for m in TABLE3 if m != "ndcg@10"] if scores.curve else [])
    for metric in names:
        value = scores.aggregate.get(metric, 0.0)
        low, high = scores.intervals.get(metric, (value, value))
        shown.append(f"{metric:<22}{value:>8.3f}   [{low:.3f}, {high:.3f}]")
    if scores.curve:
        shown.append(
            f"{'unexposed_submissions':<22}{scores.aggregate['unexposed_submissions']:>8.0f}"
        )
        curve = "  ".join(f"{p:.1f}:{v:.3f}" for p, v in scores.curve.items())
        shown += ["", f"oracle exposed gain by search progress: {curve}"]
    return shown


def write(
    con: duckdb.DuckDBPyConnection,
    scores: Scores,
    name: str,
    version: str | None,
    run: Path,
    gains: str,
    samples: int,
    has_trajectories: bool,
) -> str:
    """Write the run and its per-instance and aggregate ('*') scores; returns the run ID."""
    digest = hashlib.sha256(run.read_bytes()).hexdigest()
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
