"""Review samples against the warehouse: :func:`draw_sample` draws a version's sample and stores
it (``inspire review sample``); :func:`agreement_of` measures model-curator agreement over it
(:mod:`inspire_build.review.agreement` says how) for the dataset card and ``inspire audit``.

A version made by ``inspire build --apply-reviews`` reports the sample of its base, the version
the curators read: its rejected instances are gone from the new one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import duckdb

from inspire_build import sampling, splits
from inspire_build.errors import InputError
from inspire_build.review import agreement
from inspire_build.review.agreement import Agreement, Candidate, Sampled
from inspire_build.review.apply import base_of
from inspire_build.review.curation import standing_of
from inspire_build.tables import review_samples as table
from inspire_build.tables import reviews


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A stored sample: the version it was drawn from, how, and what it drew."""

    version_id: str
    seed: int
    requested: int
    available: int  # the version's instances
    drawn: list[Candidate]

    @property
    def strata(self) -> dict[str, int]:
        return agreement.strata(self.drawn)


def _split_of(con: duckdb.DuckDBPyConnection, split: str, version_id: str) -> None:
    splits.check_version(con, version_id)
    header = reviews.version(con, version_id) or {}
    if header.get("split") != split:
        raise InputError(f"version {version_id} is of split {header.get('split')!r}, not {split!r}")
    if header.get("reviews"):  # its grades hold the curators' regrades: each would "agree"
        base = base_of(con, version_id)
        raise InputError(
            f"version {version_id} applies curators' reviews: its tiers are theirs, so a sample "
            f"of it would count every regrade as agreement with the model; sample {base}"
        )


def draw_sample(
    con: duckdb.DuckDBPyConnection, split: str, version_id: str | None, n: int, seed: int = 0
) -> Drawn:
    """Draw ``n`` instances of ``version_id`` (default: the split's latest, or the version it
    applies reviews to) for review and store them as the version's sample, replacing any drawn
    before; ``n`` above the version's size draws them all. Raises InputError for an unknown
    version, another split's, one made by ``--apply-reviews``, or ``n`` < 1."""
    # the latest version, or the one it applies reviews to: a sample measures the model
    chosen = version_id or base_of(con, splits.latest_version(con, split))
    _split_of(con, split, chosen)
    if n < 1:
        raise InputError(f"--n must be at least 1, not {n}")
    found = [
        Candidate(str(r["instance_id"]), sampling.month(r["first_public_date"]), int(r["tier"]))
        for r in table.candidates(con, split, chosen)
    ]
    if not found:
        raise InputError(f"version {chosen} has no instance to sample")
    drawn = agreement.draw(found, n, seed)
    now = dt.datetime.now(dt.UTC)
    rows = [
        {
            "version_id": chosen,
            "instance_id": c.instance_id,
            "split": split,
            "position": position,
            "month": c.month,
            "tier": c.tier,
            "seed": seed,
            "requested": n,
            "drawn_at": now,
        }
        for position, c in enumerate(drawn, start=1)
    ]
    table.replace(con, chosen, rows)
    return Drawn(chosen, seed, n, len(found), drawn)


@dataclasses.dataclass(frozen=True)
class Measured:
    """The agreement over the sample of ``version_id``, drawn with ``seed``."""

    version_id: str
    seed: int
    figures: Agreement


def agreement_of(con: duckdb.DuckDBPyConnection, version_id: str) -> Measured | None:
    """The agreement over the sample of ``version_id``, or of its base for a version
    ``--apply-reviews`` made; None when neither has a sample."""
    for sampled in dict.fromkeys((version_id, base_of(con, version_id))):
        rows = table.of_version(con, sampled)
        if rows:
            break
    else:
        return None
    tiers: dict[str, dict[str, int]] = {}
    for grade in reviews.grades(con, sampled):
        tiers.setdefault(str(grade["target_id"]), {})[str(grade["paper_id"])] = int(grade["tier"])
    sample = [
        Sampled(str(r["target_id"]), str(r["brief"]), tiers.get(str(r["target_id"]), {}))
        for r in rows
    ]
    split = str((reviews.version(con, sampled) or {})["split"])
    figures = agreement.measure(sample, standing_of(con, split))
    return Measured(sampled, int(rows[0]["seed"]), figures)


def report_lines(con: duckdb.DuckDBPyConnection, version_id: str) -> list[str]:
    """What ``inspire audit`` prints of the agreement (it does not decide the audit's verdict)."""
    found = agreement_of(con, version_id)
    if found is None:
        return [f"curator agreement of {version_id}: no review sample (`inspire review sample`)"]
    shown = [
        f"curator agreement over the sample of {found.version_id} (seed {found.seed}, "
        f"{found.figures.sampled} instance(s); 95% bootstrap intervals over instances)"
    ]
    if not found.figures.reviewed:
        return [*shown, "  no sampled instance reviewed yet (`inspire review serve`)"]
    return shown + [f"  {name}: {value}" for name, value in agreement.rows(found.figures)]
