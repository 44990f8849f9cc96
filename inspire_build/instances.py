"""Pure: a build counted in instances. The walk hands out the selected candidates in their
seeded, month-stratified order, a round at a time, until ``wanted`` are accepted or none is
left; each round is the candidates the yield measured so far (accepted per candidate handed out)
says the instances still missing need, so a round overshoots by chance only.

A round's steps all end before the next round is sized, so which candidates a build reaches
depends only on the order and on each target's outcome, never on timing: the same config gives
the same version at any concurrency. The version holds the accepted candidates up to the
``wanted``-th; those accepted after it, and those never reached, are recorded as over the
build's count (:attr:`Walk.surplus`, :attr:`Walk.unreached`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

# Before anything is measured: the share of candidates that become instances, weighed as this
# many candidates. A constant: an earlier build's yield would make the walk, and so the
# version, depend on the warehouse's history.
PRIOR_YIELD, PRIOR_WEIGHT = 0.5, 4
LOWEST_YIELD = 0.02  # a round is at most 1 / this times the instances still needed


@dataclasses.dataclass
class Walk:
    order: Sequence[str]  # the selected candidates, in selection order
    wanted: int | None  # instances to reach; None: every candidate in one round
    prior: float = PRIOR_YIELD
    taken: int = 0  # candidates handed out
    resolved: list[str] = dataclasses.field(default_factory=list)  # with lineage, in order
    accepted: list[str] = dataclasses.field(default_factory=list)  # in order

    def next_round(self) -> list[str]:
        """The next candidates to build (empty: the walk is over)."""
        left = len(self.order) - self.taken
        if left <= 0 or (self.wanted is not None and len(self.accepted) >= self.wanted):
            return []
        size = left if self.wanted is None else self.round_size()
        part = list(self.order[self.taken : self.taken + size])
        self.taken += len(part)
        return part

    def round_size(self) -> int:
        needed = (self.wanted or 0) - len(self.accepted)
        return max(1, math.ceil(needed / self.expected_yield()))

    def expected_yield(self) -> float:
        """Accepted per candidate, the prior counting as PRIOR_WEIGHT candidates."""
        measured = len(self.accepted) + self.prior * PRIOR_WEIGHT
        return max(LOWEST_YIELD, measured / (self.taken + PRIOR_WEIGHT))

    def record(self, resolved: Sequence[str], accepted: Sequence[str]) -> None:
        """A round's candidates that lineage resolved, and those of them accepted, in order."""
        self.resolved += resolved
        self.accepted += accepted

    @property
    def kept(self) -> list[str]:
        """The resolved candidates the version is written from: up to the wanted-th accepted."""
        if self.wanted is None or len(self.accepted) <= self.wanted:
            return list(self.resolved)
        last = self.resolved.index(self.accepted[self.wanted - 1])
        return self.resolved[: last + 1]

    @property
    def surplus(self) -> list[str]:
        """Accepted after the wanted-th: built, but over the build's count."""
        return [] if self.wanted is None else self.accepted[self.wanted :]

    @property
    def unreached(self) -> list[str]:
        return list(self.order[self.taken :])

    @property
    def short(self) -> int:
        """Instances the candidates ran out before reaching (0: none missing)."""
        return 0 if self.wanted is None else max(0, self.wanted - len(self.accepted))
