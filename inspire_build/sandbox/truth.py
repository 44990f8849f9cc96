"""Pure: score lineage results against a sandbox world's ground truth.

The sandbox serves each record's reference list in order, in both OpenAlex and S2, so every
mention (source, position) of a target's lists has a known true work. Merging is scored as
entity resolution over mentions, pairwise within each target:

- precision: of the mention pairs we put in one entry, the share that are one true work;
- recall: of the mention pairs that are one true work, the share we put in one entry.

Dates are scored per entry: our first public date equals the work's true one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from inspire_build.classify import TargetLineage
from inspire_build.models import Source
from inspire_build.sandbox.world import World, ground_truth


@dataclasses.dataclass(frozen=True)
class LineageScores:
    targets: int
    mentions: int
    entries: int
    pair_precision: float
    pair_recall: float
    dated_entries: int
    date_exact: float
    status_sums_ok: bool
    statuses: dict[str, int]


def score(world: World, results: Sequence[TargetLineage]) -> LineageScores:
    by_openalex = {r.openalex: r for r in world.records}
    by_key = world.by_key()
    first_by_work = {str(t["work"]): str(t["first_public_date"]) for t in ground_truth(world)}
    true_pairs = predicted_pairs = both = 0
    mentions = entries = dated = exact = 0
    sums_ok = True
    statuses: Counter[str] = Counter()
    for result in results:
        record = by_openalex[result.requested.removeprefix("openalex:")]
        true_work = [by_key[c.cites].work for c in record.references]
        labelled: list[tuple[int, str]] = []  # (entry index, true work) per mention
        for index, reference in enumerate(result.references):
            works_here = Counter[str]()
            for match in reference.entry.matches:
                mention = match.mention
                if mention.source is Source.OPENALEX and record.openalex_references_empty:
                    continue
                work = true_work[mention.position]
                labelled.append((index, work))
                works_here[work] += 1
            if works_here and reference.date is not None:
                dated += 1
                main_work = works_here.most_common(1)[0][0]
                expected = dt.date.fromisoformat(first_by_work[main_work])
                exact += reference.date.date == expected
            statuses[reference.status.value] += 1
        counts = result.counts()
        sums_ok &= sum(counts.values()) == len(result.references)
        mentions += len(labelled)
        entries += len(result.references)
        for (entry_a, work_a), (entry_b, work_b) in combinations(labelled, 2):
            same_entry, same_work = entry_a == entry_b, work_a == work_b
            predicted_pairs += same_entry
            true_pairs += same_work
            both += same_entry and same_work
    return LineageScores(
        targets=len(results),
        mentions=mentions,
        entries=entries,
        pair_precision=both / predicted_pairs if predicted_pairs else 1.0,
        pair_recall=both / true_pairs if true_pairs else 1.0,
        dated_entries=dated,
        date_exact=exact / dated if dated else 1.0,
        status_sums_ok=sums_ok,
        statuses=dict(sorted(statuses.items())),
    )
