"""One evaluation, from files to scores (and, against a split, to the warehouse)."""

from __future__ import annotations

from pathlib import Path

from inspire_build import resolve, splits, warehouse
from inspire_build.errors import InputError
from inspire_build.evaluation import inputs, report
from inspire_build.evaluation.score import GAINS, Scores, score


def evaluate(
    run: Path,
    *,
    split: str | None = None,
    version: str | None = None,
    qrels: Path | None = None,
    trajectories: Path | None = None,
    name: str | None = None,
    gains: str = "linear",
    samples: int = 1000,
    warehouse_path: Path | None = None,
) -> Scores:
    """Score ``run`` against a split version's qrels (written to the warehouse) or a qrels file."""
    if gains not in GAINS:
        raise InputError(f"unknown gains {gains!r}; use {' or '.join(GAINS)}")
    if (qrels is None) == (split is None):
        raise InputError("give either a split (qrels from the warehouse) or a qrels file")
    if qrels is not None:
        normalise = inputs.normaliser()
        from_file = inputs.read_qrels(qrels, normalise)
        return _score(from_file, run, trajectories, normalise, gains, samples)
    if warehouse_path is None:
        raise InputError("scoring against a split needs the warehouse")
    with warehouse.open_warehouse(warehouse_path) as con:
        chosen = version or splits.latest_version(con, str(split))
        normalise = inputs.normaliser(resolve.crosswalk(con))
        judged = splits.version_qrels(con, chosen)
        if not judged:
            raise InputError(f"version {chosen} has no qrels")
        scores = _score(judged, run, trajectories, normalise, gains, samples)
        report.write(
            con, scores, name or run.stem, chosen, run, gains, samples, trajectories is not None
        )
    return scores


def _score(
    judged: dict[str, dict[str, int]],
    run: Path,
    trajectories: Path | None,
    normalise: inputs.Normaliser,
    gains: str,
    samples: int,
) -> Scores:
    submitted = inputs.read_run(run, normalise)
    paths = inputs.read_trajectories(trajectories, normalise) if trajectories else None
    known = {d for docs in judged.values() for d in docs}
    return score(judged, submitted, paths, gains=gains, samples=samples, known=lambda d: d in known)
