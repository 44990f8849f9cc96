"""The ``evaluate`` flow: score a run (and trajectories) against a split version."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger

from inspire_build.config import get_settings
from inspire_build.evaluation import report
from inspire_build.evaluation.evaluate import evaluate as evaluate_run


@flow(name="evaluate", log_prints=True)
def evaluate(
    run: str,
    split: str = "eval",
    version: str | None = None,
    trajectories: str | None = None,
    name: str | None = None,
    gains: str = "linear",
    bootstrap: int = 1000,
) -> dict[str, float | None]:
    """Score, write eval_runs/eval_scores, log the Table 2/3 report; return the aggregates."""
    scores = evaluate_run(
        Path(run),
        split=split,
        version=version,
        trajectories=Path(trajectories) if trajectories else None,
        name=name,
        gains=gains,
        samples=bootstrap,
        warehouse_path=get_settings().warehouse,
    )
    logger = get_run_logger()
    for line in report.notes(scores):
        logger.warning(line)
    for line in report.lines(scores):
        logger.info(line)
    return scores.aggregate
