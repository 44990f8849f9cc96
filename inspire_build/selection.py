"""Target selection: a split's candidates from OpenAlex (from its snapshot, when one was
ingested, and the API for the part of the window after it), a seeded sample of them stratified
by month across the window, and a status with a reason for every candidate in ``targets``."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Sequence

import duckdb

from inspire_build import sampling, warehouse
from inspire_build.bulk_source import BulkSource
from inspire_build.config import Settings
from inspire_build.http import HttpClient
from inspire_build.models import Paper, Target, TargetOutcome, TargetStatus
from inspire_build.sources import openalex
from inspire_build.tables import crosswalk as crosswalk_table
from inspire_build.tables import lineage as lineage_table


@dataclasses.dataclass(frozen=True)
class Selection:
    split: str
    candidates: int
    selected: list[str]
    statuses: Counter[str]
    records: dict[str, Paper] = dataclasses.field(default_factory=dict)  # the selected ones
    served: dict[str, int] = dataclasses.field(default_factory=dict)  # candidates, by source
    # a selected ID -> the ID its row in ``targets`` has, where an earlier build resolved it
    row_ids: dict[str, str] = dataclasses.field(default_factory=dict)


def select_targets(
    client: HttpClient,
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    limit: int | None = None,
) -> Selection:
    """Candidates from OpenAlex for a split; every one gets a status and a reason in ``targets``.

    The first ``limit`` (or the split's limit) in :func:`sampling.selection_order` are
    selected, a seeded sample stratified by month across the window; the rest are recorded as
    excluded for being over the limit.
    """
    limit = limit or settings.split(split).limit
    works, served = listing(client, con, settings, split)
    rows, selected, statuses, records = [], [], Counter[str](), {}
    now = dt.datetime.now(dt.UTC)
    canonical = _canonical_ids(con, works)
    for position, work in enumerate(works):
        paper_id = f"openalex:{work.ids.openalex}"
        if limit is not None and position >= limit:
            status, reason = TargetStatus.EXCLUDED, f"over the split's limit of {limit} targets"
            outcome = TargetOutcome.OVER_LIMIT
        else:
            status, reason = TargetStatus.CANDIDATE, "selected: awaiting lineage"
            outcome = TargetOutcome.SELECTED
            selected.append(paper_id)
            records[paper_id] = work
        statuses[status.value] += 1
        rows.append(
            Target(
                split=split,
                paper_id=canonical.get(paper_id, paper_id),
                title=work.title,
                # every candidate's text: the audit's bm25 attacker ranks a window's candidates
                abstract=work.abstract,
                first_public_date=work.publication_date,
                status=status,
                reason=reason,
                outcome=outcome,
                updated_at=now,
            )
        )
    with warehouse.transaction(con):
        for stale in sorted(canonical):  # a row an earlier selection left under openalex:
            warehouse.replace_where(
                con, "targets", {"split": split, "paper_id": stale}, [], ["split", "paper_id"]
            )
        lineage_table.write_targets(con, rows)
    row_ids = {t: canonical[t] for t in selected if t in canonical}
    return Selection(split, len(works), selected, statuses, records, served, row_ids)


def listing(
    client: HttpClient, con: duckdb.DuckDBPyConnection, settings: Settings, split: str
) -> tuple[list[Paper], dict[str, int]]:
    """A split's candidates in the order a build walks them (:func:`sampling.selection_order`),
    and how many each source served; writes nothing but the responses to the raw store."""
    config = settings.split(split)
    bulk = BulkSource.of(con, settings.bulk)
    listed = bulk.candidates(client, config) if bulk is not None else None
    if listed is None:
        works = openalex.list_works(client, openalex.candidate_filter(config))
        listed = works, {"openalex api": len(works)}
    works, served = listed
    order = sampling.selection_order(
        [(w.ids.openalex or "", w.publication_date) for w in works], config.sample_seed
    )
    position_of = {key: position for position, key in enumerate(order)}
    works.sort(key=lambda w: (position_of[w.ids.openalex or ""], w.ids.openalex or ""))
    return works, served


def _canonical_ids(con: duckdb.DuckDBPyConnection, works: Sequence[Paper]) -> dict[str, str]:
    """``openalex:W..`` -> the paper's canonical ID, for candidates an earlier build resolved,
    so that a paper keeps one row in ``targets`` (lineage moves a new one there itself)."""
    known = crosswalk_table.lookup_ids(con, "openalex", [w.ids.openalex or "" for w in works])
    return {
        f"openalex:{value}": paper_id
        for value, paper_id in known.items()
        if paper_id != f"openalex:{value}"
    }
