"""One evaluation, from files to scores (and, against a split, to the warehouse)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection
from pathlib import Path

from inspire_build import splits, warehouse
from inspire_build.errors import InputError
from inspire_build.evaluation import inputs, report
from inspire_build.evaluation.funnel import Trajectory
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
    max_bytes: int | None = None,
) -> Scores:
    """Score ``run`` against a split version's qrels (written to the warehouse) or a qrels file.

    A malformed or oversized file, and a run or trajectories none of whose instance IDs is
    judged, are refused with an ``InputError``; nothing is written then.
    """
    if gains not in GAINS:
        raise InputError(f"unknown gains {gains!r}; use {' or '.join(GAINS)}")
    if (qrels is None) == (split is None):
        raise InputError("give either a split (qrels from the warehouse) or a qrels file")
    cap = inputs.max_input_bytes() if max_bytes is None else max_bytes
    if qrels is not None:
        normalise = inputs.normaliser()
        judged = inputs.read_qrels(qrels, normalise, cap)
        if not judged:
            raise InputError(f"{qrels}: no judgements")
        submission = _read(run, trajectories, normalise, cap)
        scores = _score(judged, submission, f"qrels file {qrels}", gains, samples)
        return dataclasses.replace(scores, qrels_file=str(qrels))
    if warehouse_path is None:
        raise InputError("scoring against a split needs the warehouse")
    with warehouse.open_warehouse(warehouse_path) as con:
        chosen = version or splits.latest_version(con, str(split))
        normalise = inputs.normaliser(warehouse.crosswalk(con))
        judged = splits.version_qrels(con, chosen)
        if not judged:
            raise InputError(f"version {chosen} has no qrels")
        submission = _read(run, trajectories, normalise, cap)
        scores = _score(judged, submission, f"version {chosen}", gains, samples)
        scores = dataclasses.replace(scores, version=chosen)
        report.write(
            con,
            scores,
            name or run.stem,
            submission.digest,
            gains,
            samples,
            trajectories is not None,
        )
    return scores


def require_overlap(
    judged: Collection[str], submitted: Collection[str], what: str, against: str
) -> None:
    """Refuse a submission none of whose instance IDs is judged (made for another version, made
    up, or empty): scored, it would be 0 on every metric, silently."""
    if not submitted:
        raise InputError(f"{what} holds no instance; nothing to score against {against}")
    if set(judged).isdisjoint(submitted):
        raise InputError(
            f"none of the {len(submitted)} instance ID(s) in {what} is among the "
            f"{len(judged)} instance(s) of {against}; was it made for another version?"
        )


@dataclasses.dataclass(frozen=True)
class _Submission:
    what: str
    run: dict[str, list[str]]
    digest: str  # sha256 of the run file as read
    trajectories: dict[str, Trajectory] | None
    trajectories_what: str


def _read(
    run: Path, trajectories: Path | None, normalise: inputs.Normaliser, cap: int
) -> _Submission:
    data = inputs.read_bytes(run, cap)
    submitted = inputs.parse_run(inputs.decode(data, str(run)), normalise, str(run))
    paths = inputs.read_trajectories(trajectories, normalise, cap) if trajectories else None
    digest = hashlib.sha256(data).hexdigest()
    return _Submission(f"run {run}", submitted, digest, paths, f"trajectories {trajectories}")


def _score(
    judged: dict[str, dict[str, int]],
    submission: _Submission,
    against: str,
    gains: str,
    samples: int,
) -> Scores:
    require_overlap(judged, submission.run, submission.what, against)
    if submission.trajectories is not None:
        require_overlap(judged, submission.trajectories, submission.trajectories_what, against)
    known = {d for docs in judged.values() for d in docs}
    return score(
        judged,
        submission.run,
        submission.trajectories,
        gains=gains,
        samples=samples,
        known=known.__contains__,
    )
