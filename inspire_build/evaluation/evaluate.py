"""One evaluation, from files to scores (and, against a split, to the warehouse)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

import duckdb

from inspire_build import user_files, warehouse
from inspire_build.errors import InputError, InvalidIdError
from inspire_build.evaluation import inputs, report
from inspire_build.evaluation.funnel import Trajectory
from inspire_build.evaluation.score import GAINS, Scores, score
from inspire_build.ids import PaperId, parse_any_id
from inspire_build.tables import crosswalk as crosswalk_table
from inspire_build.tables import versions


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
    allow_unjudged: bool = False,
    record: bool = True,
) -> Scores:
    """Score ``run`` against a split version's qrels (written to the warehouse unless not
    ``record``) or a qrels file.

    With a qrels file, ``warehouse_path`` (optional) lends its crosswalk, so that the qrels' and
    the submission's IDs in any scheme are compared as paper IDs; without one, a run none of
    whose paper IDs is judged for its instance is refused unless ``allow_unjudged``.

    A malformed or oversized file, a run or trajectories none of whose instance IDs is judged,
    and a paper ID that could never match (:func:`entry_check`, unless ``allow_unjudged``) are
    refused with an ``InputError``; nothing is written then.
    """
    if gains not in GAINS:
        raise InputError(f"unknown gains {gains!r}; use {' or '.join(GAINS)}")
    if (qrels is None) == (split is None):
        raise InputError("give either a split (qrels from the warehouse) or a qrels file")
    cap = user_files.max_input_bytes() if max_bytes is None else max_bytes
    if qrels is not None:
        crosswalk = _crosswalk(warehouse_path) if warehouse_path is not None else None
        scores = _against_file(
            qrels, run, trajectories, cap, crosswalk, allow_unjudged, gains, samples
        )
        return dataclasses.replace(scores, qrels_file=str(qrels))
    if warehouse_path is None:
        raise InputError("scoring against a split needs the warehouse")
    with warehouse.open_warehouse(warehouse_path) as con:
        chosen = version or _latest(con, str(split))
        normalise = inputs.normaliser(crosswalk_table.with_corpus(con))
        judged = _qrels(con, chosen)
        if not judged:
            raise InputError(f"version {chosen} has no qrels")
        check = None if allow_unjudged else entry_check(judged, mapped=True)
        submission = _read(run, trajectories, normalise, cap, check)
        scores = _score(judged, submission, f"version {chosen}", gains, samples)
        scores = dataclasses.replace(scores, version=chosen)
        if not record:  # a comparison's scores, not a run of the leaderboard's
            return scores
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


def entry_check(judged: Mapping[str, Mapping[str, int]], mapped: bool) -> inputs.Check | None:
    """What refuses a submitted paper ID that could never match a judged document, when every
    judged document is a paper ID (qrels of another collection's document names check
    nothing): an ID of no scheme at all (a bare number, ``arXiv 1602.00002``), and, when no
    crosswalk ``mapped`` the IDs, one of a scheme that no judged document has (a DOI against
    arXiv IDs). Scored, each would be a miss whatever paper it names."""
    docs = {doc for grades in judged.values() for doc in grades}
    schemes = {_scheme(doc) for doc in docs}
    if None in schemes:
        return None
    fix = "; pass --allow-unjudged to score such IDs as misses"

    def check(paper: str) -> str | None:
        if paper in docs:
            return None
        scheme = _scheme(paper)
        if scheme is None:
            return f"is no paper ID of any scheme (doi:..., arxiv:..., CorpusId:..., W...){fix}"
        if not mapped and scheme not in schemes:
            return (
                f"is a {scheme} ID, a scheme no judged document has, and no warehouse's "
                f"crosswalk maps it (give --warehouse){fix}"
            )
        return None

    return check


def _scheme(paper: str) -> str | None:
    try:
        return str(parse_any_id(paper).scheme.value)
    except InvalidIdError:
        return None


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


def unjudged_instances(
    judged: Mapping[str, Mapping[str, int]], submitted: Mapping[str, Iterable[str]]
) -> tuple[int, int]:
    """(judged instances the submission gives any paper ID for, those of them none of whose
    IDs is a judged document of that instance)."""
    given = {i: set(ids) for i, ids in submitted.items() if i in judged}
    given = {i: ids for i, ids in given.items() if ids}
    return len(given), sum(1 for i, ids in given.items() if judged[i].keys().isdisjoint(ids))


def require_judged_ids(
    judged: Mapping[str, Mapping[str, int]],
    submitted: Mapping[str, Iterable[str]],
    what: str,
    against: str,
) -> None:
    """Refuse a submission whose paper IDs match no judged document of their instance in any
    instance: IDs of another scheme than the qrels' (a DOI against arXiv IDs), which would
    score 0 on every metric, silently."""
    given, unmatched = unjudged_instances(judged, submitted)
    if given and unmatched == given:
        raise InputError(
            f"no paper ID in {what} is a judged document of its instance in {against} "
            f"({unmatched} instance(s) with IDs, none matching); write the qrels' IDs, give a "
            "--warehouse whose crosswalk maps them, or pass --allow-unjudged to score them as "
            "they are"
        )


def _against_file(
    qrels: Path,
    run: Path,
    trajectories: Path | None,
    cap: int,
    crosswalk: dict[PaperId, str] | None,
    allow_unjudged: bool,
    gains: str,
    samples: int,
) -> Scores:
    """Scores against a qrels file, its IDs and the submission's mapped through ``crosswalk``
    when there is one; without one, a run that matches no judged document is refused."""
    normalise = inputs.normaliser(crosswalk)
    judged = inputs.read_qrels(qrels, normalise, cap)
    if not judged:
        raise InputError(f"{qrels}: no judgements")
    check = None if allow_unjudged else entry_check(judged, mapped=crosswalk is not None)
    submission = _read(run, trajectories, normalise, cap, check)
    whole = crosswalk is None and not allow_unjudged
    return _score(judged, submission, f"qrels file {qrels}", gains, samples, check_ids=whole)


def _crosswalk(path: Path) -> dict[PaperId, str]:
    con = warehouse.connect(path, read_only=True)
    try:
        return crosswalk_table.with_corpus(con)
    finally:
        con.close()


def _latest(con: duckdb.DuckDBPyConnection, split: str) -> str:
    """The split's latest version; refused when it has none yet."""
    found = versions.latest(con).get(split)
    if found is None:
        raise InputError(f"split {split!r} has no version yet; build it first")
    return found


def _qrels(con: duckdb.DuckDBPyConnection, version: str) -> dict[str, dict[str, int]]:
    """instance_id -> paper_id -> tier: a split version's graded antecedents."""
    found: dict[str, dict[str, int]] = {}
    for iid, paper_id, tier in versions.qrels(con, version):
        found.setdefault(iid, {})[paper_id] = tier
    return found


@dataclasses.dataclass(frozen=True)
class _Submission:
    what: str
    run: dict[str, list[str]]
    digest: str  # sha256 of the run file as read
    trajectories: dict[str, Trajectory] | None
    trajectories_what: str


def _read(
    run: Path,
    trajectories: Path | None,
    normalise: inputs.Normaliser,
    cap: int,
    check: inputs.Check | None,
) -> _Submission:
    data = user_files.read_bytes(run, cap)
    submitted = inputs.parse_run(inputs.decode(data, str(run)), normalise, str(run), check)
    paths = inputs.read_trajectories(trajectories, normalise, cap, check) if trajectories else None
    digest = hashlib.sha256(data).hexdigest()
    return _Submission(f"run {run}", submitted, digest, paths, f"trajectories {trajectories}")


def _score(
    judged: dict[str, dict[str, int]],
    submission: _Submission,
    against: str,
    gains: str,
    samples: int,
    check_ids: bool = False,
) -> Scores:
    require_overlap(judged, submission.run, submission.what, against)
    if check_ids:
        require_judged_ids(judged, submission.run, submission.what, against)
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
