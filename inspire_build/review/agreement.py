"""Pure: the review sample and model-curator agreement, the validity estimate of a real build.

**The sample.** :func:`draw` takes the first N of a seeded order of a version's instances,
stratified by the target's first public month and the instance's highest gold tier (its
strongest antecedent: an instance whose best is T1 is another kind of task than one with a
T3), in proportion to each stratum's size (``sampling.stratified_order``). The same seed gives
the same sample, and a larger N keeps every instance a smaller one drew.

**Reviewed.** A sampled instance is *reviewed* when its target has any standing decision (the
review page's own count: accepted, rejected, regraded, leak-marked or rewritten). Rejections
and leak marks are shares of the reviewed instances.

**Tiers.** Tiers are compared on the reviewed instances a curator passed on the grades of and
kept: accepted, or regraded and not rejected (a leak mark or a rewritten brief alone says
nothing of the grades; a rejected instance leaves the benchmark). Each graded reference of such
an instance (tier 0 included) gives one pair: the curator's tier, its standing regrade or else
the model's tier (looked at and left), against the model's. Quadratic-weighted kappa (Cohen
1968, over tiers 0-3) and exact agreement are pooled over the pairs; their 95% intervals come
from a seeded bootstrap over instances (an instance's references are not independent); a
resample whose tiers are one and the same value on both sides counts as full agreement, the
convention of ``quadratic_kappa`` (``evaluation.kappa``, the validity bench's too).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence

from inspire_build import sampling
from inspire_build.evaluation import bootstrap
from inspire_build.evaluation.kappa import exact, quadratic_kappa
from inspire_build.review import decisions
from inspire_build.review.decisions import Standing, State

Pair = tuple[int, int]  # (curator's tier, model's tier) of one reference


@dataclasses.dataclass(frozen=True)
class Candidate:
    """An instance a sample may draw, with what it is stratified by."""

    instance_id: str
    month: str  # its target's first public month, YYYY-MM (or "undated")
    tier: int  # its highest gold tier (0: none)

    @property
    def stratum(self) -> str:
        return f"{self.month} T{self.tier}"


def draw(candidates: Sequence[Candidate], n: int, seed: int) -> list[Candidate]:
    """The first ``n`` of the seeded stratified order (all of them when ``n`` is larger).
    Raises ValueError for an ``n`` below 1."""
    if n < 1:
        raise ValueError(f"a sample needs at least one instance, not {n}")
    by_id = {c.instance_id: c for c in candidates}
    order = sampling.stratified_order([(c.instance_id, c.stratum) for c in candidates], seed)
    return [by_id[key] for key in order[:n]]


def strata(drawn: Sequence[Candidate]) -> dict[str, int]:
    """Stratum -> how many of ``drawn`` are in it, in stratum order."""
    return dict(sorted(Counter(c.stratum for c in drawn).items()))


@dataclasses.dataclass(frozen=True)
class Sampled:
    """A sampled instance as the agreement reads it."""

    target_id: str
    brief: str
    tiers: Mapping[str, int]  # each graded reference's tier, as the model graded it


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A figure with its 95% bootstrap interval over ``instances``."""

    value: float
    low: float
    high: float
    instances: int
    references: int = 0  # for tiers: the pairs compared


@dataclasses.dataclass(frozen=True)
class Share:
    """``count`` of ``instances``, with the 95% bootstrap interval of the share."""

    count: int
    instances: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.count / self.instances


@dataclasses.dataclass(frozen=True)
class Agreement:
    """Model-curator agreement over a review sample; a figure is None when nothing measures
    it (no reviewed instance, or none kept with a graded reference)."""

    sampled: int
    reviewed: int
    kappa: Estimate | None  # tiers, quadratic-weighted
    exact: Estimate | None  # tiers, the share of identical ones
    leaking: Share | None  # reviewed briefs a curator's leak mark stands on
    rejected: Share | None  # reviewed instances rejected


def pairs(instance: Sampled, decided: Standing) -> list[Pair]:
    """(curator, model) tiers of each graded reference, by paper."""
    found = []
    for paper, tier in sorted(instance.tiers.items()):
        regrade = decided.grades.get(paper)
        found.append((int(regrade.after["tier"]) if regrade else tier, tier))
    return found


def _tier_reviewed(decided: Standing) -> bool:
    accepted = decided.state is State.ACCEPTED
    return not decided.rejected and (accepted or bool(decided.grades))


def _share(flags: Sequence[bool], samples: int, seed: int) -> Share | None:
    if not flags:
        return None
    low, high = bootstrap.mean_interval([float(f) for f in flags], samples, seed)
    return Share(sum(flags), len(flags), low, high)


def _tiers(groups: list[list[Pair]], samples: int, seed: int) -> tuple[Estimate, Estimate] | None:
    pooled = [pair for group in groups for pair in group]
    if not pooled:
        return None
    found = []
    for statistic in (quadratic_kappa, exact):
        low, high = bootstrap.grouped_interval(groups, statistic, samples, seed)
        found.append(Estimate(statistic(pooled), low, high, len(groups), len(pooled)))
    return found[0], found[1]


def measure(
    sample: Sequence[Sampled],
    standing: Mapping[str, Standing],
    samples: int = bootstrap.SAMPLES,
    seed: int = bootstrap.SEED,
) -> Agreement:
    """The agreement of the model with the curators over ``sample`` (see the module's words),
    ``standing`` being each target's standing decisions."""
    decided = [(s, standing.get(s.target_id, decisions.NOT_REVIEWED)) for s in sample]
    reviewed = [(s, d) for s, d in decided if d.state is not State.UNREVIEWED]
    groups = [pairs(s, d) for s, d in reviewed if _tier_reviewed(d)]
    tiers = _tiers([g for g in groups if g], samples, seed)
    return Agreement(
        sampled=len(sample),
        reviewed=len(reviewed),
        kappa=tiers[0] if tiers else None,
        exact=tiers[1] if tiers else None,
        leaking=_share([decisions.leak_holds(d, s.brief) for s, d in reviewed], samples, seed),
        rejected=_share([d.rejected for _, d in reviewed], samples, seed),
    )


def rows(found: Agreement) -> list[tuple[str, str]]:
    """(figure, value with its interval and n) of each figure, as the card and the audit show
    them; a figure with nothing to measure says so."""
    tiers = "no reviewed instance kept with a graded reference"
    return [
        ("sampled instances reviewed", f"{found.reviewed:,} of {found.sampled:,}"),
        ("tiers, quadratic-weighted kappa", _tier_value(found.kappa, "{:.3f}") or tiers),
        ("tiers, exact agreement", _tier_value(found.exact, "{:.1%}") or tiers),
        ("briefs marked leaking", _share_value(found.leaking)),
        ("instances rejected", _share_value(found.rejected)),
    ]


def _tier_value(figure: Estimate | None, form: str) -> str | None:
    if figure is None:
        return None
    values = (form.format(v) for v in (figure.value, figure.low, figure.high))
    return "{} (95% CI {} to {}; n = {:,} references of {:,} instances)".format(
        *values, figure.references, figure.instances
    )


def _share_value(share: Share | None) -> str:
    if share is None:
        return "no sampled instance reviewed"
    return (
        f"{share.count:,} of {share.instances:,}: {share.value:.1%} "
        f"(95% CI {share.low:.1%} to {share.high:.1%}; n = {share.instances:,} instances)"
    )
