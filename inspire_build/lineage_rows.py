"""The lineage step's rows: papers, the ID crosswalk, each target's references, its gold
completeness and its ``targets`` row, written in one transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

import duckdb

from inspire_build import warehouse
from inspire_build.classify import ResolvedReference, ResolvedWork, TargetLineage
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import DatePrecision, Paper, ReferenceStatus, Source, Target
from inspire_build.tables import lineage as lineage_table


def write(
    con: duckdb.DuckDBPyConnection,
    results: Sequence[TargetLineage],
    split: str,
    sources: Sequence[Source],
) -> None:
    """Write papers, the crosswalk, references, targets and gold completeness, in one go.

    A rerun replaces each target's own reference rows; works and IDs are upserted.
    """
    now = dt.datetime.now(dt.UTC)
    works = {id(w): w for r in results for w in [r.work, *(x.work for x in r.references if x.work)]}
    paper_rows = [_paper_row(work, now) for work in works.values()]
    id_rows = [row for work in works.values() for row in _id_rows(work)]
    references, completeness, targets, dropped = _target_rows(results, split, sources, now)
    with warehouse.transaction(con):
        warehouse.upsert(con, "papers", paper_rows, ["paper_id"])
        warehouse.upsert(con, "paper_ids", id_rows, ["scheme", "value"])
        for target_id in references:  # each target's own rows go, whatever it lists now
            warehouse.replace_where(
                con, "references", {"target_id": target_id}, [], ["target_id", "ref_key"]
            )
        rows = [row for listed in references.values() for row in listed]
        warehouse.upsert(con, "references", rows, ["target_id", "ref_key"])
        warehouse.upsert(con, "gold_completeness", completeness, ["target_id"])
        for paper_id in dropped:  # a selection's row that now lives under its work's ID
            warehouse.replace_where(
                con, "targets", {"split": split, "paper_id": paper_id}, [], ["split", "paper_id"]
            )
        lineage_table.write_targets(con, targets)


_Rows = list[dict[str, object]]


def _target_rows(
    results: Sequence[TargetLineage], split: str, sources: Sequence[Source], now: dt.datetime
) -> tuple[dict[str, _Rows], _Rows, list[Target], list[str]]:
    """Each target's reference rows, gold completeness row and ``targets`` row, as the
    targets written one after another would leave them; and the selection's rows to delete.

    One statement per table for all targets, not one per target: each statement costs DuckDB
    about as much as a target's rows (60 targets: 2.5 s of CPU written one by one). A target
    given twice keeps its last rows; a ``targets`` row deleted after it was written is gone,
    and one written again after its deletion is written afresh (its key is in ``dropped``)."""
    references: dict[str, _Rows] = {}
    rows: dict[str, Target] = {}
    dropped: list[str] = []
    for result in results:
        target_id = result.work.paper_id
        references.pop(target_id, None)  # a later write of a target replaces its earlier rows
        references[target_id] = [
            _reference_row(target_id, i, r) for i, r in enumerate(result.references)
        ]
        if result.requested != target_id:  # the selection's row now lives under the work's ID
            rows.pop(result.requested, None)
            dropped.append(result.requested)
        rows[target_id] = _target(result, split, now)
    completeness = [_completeness_row(result, sources, now) for result in results]
    return references, completeness, list(rows.values()), list(dict.fromkeys(dropped))


def _id_rows(work: ResolvedWork) -> list[dict[str, object]]:
    """Each of a work's IDs in the crosswalk, with the source that gave it."""
    rows: list[dict[str, object]] = []
    given = [(r.source.value, set(r.ids.typed())) for r in work.records]
    for paper_id in sorted(work.ids, key=str):
        source = next((name for name, held in given if paper_id in held), "reference")
        rows.append(
            {
                "scheme": paper_id.scheme.value,
                "value": paper_id.value,
                "paper_id": work.paper_id,
                "source": source,
            }
        )
    return rows


def _target(result: TargetLineage, split: str, now: dt.datetime) -> Target:
    """A target's ``targets`` row."""
    return Target.model_validate(
        {
            "split": split,
            "paper_id": result.work.paper_id,
            "title": _pick(result.work, "title"),
            "abstract": _pick(result.work, "abstract"),
            "first_public_date": result.target_date,
            "cutoff_date": result.cutoff,
            "status": result.status,
            "reason": result.reason,
            "outcome": result.outcome,
            "source_problems": result.source_problems,
            "updated_at": now,
        }
    )


def _completeness_row(
    result: TargetLineage, sources: Sequence[Source], now: dt.datetime
) -> dict[str, object]:
    counts = result.counts()
    return {
        "target_id": result.work.paper_id,
        "references_seen": len(result.references),
        "resolved": sum(1 for r in result.references if r.entry.ids),
        "dated": sum(1 for r in result.references if r.entry.ids and r.date),
        **{s.value: counts.get(s.value, 0) for s in ReferenceStatus},
        "sources": [s.value for s in sources],
        "served_by": result.served_by,
        "unidentified": result.unidentified,
        "updated_at": now,
    }


def _pick(work: ResolvedWork | None, attribute: str, cited: Iterable[PaperId] = ()) -> object:
    """The work's value of ``attribute`` from the first source, in priority order, that has it;
    first from the records of the IDs ``cited`` (those a target's own list gave), since the
    work's other records (duplicates with other titles) depend on what else the build fetched
    beside it, and a target's texts must not depend on its chunk."""
    return _picks(work, (attribute,), cited)[0]


def _picks(
    work: ResolvedWork | None, attributes: Sequence[str], cited: Iterable[PaperId] = ()
) -> list[object]:
    """:func:`_pick` of each attribute, the cited records found once for all of them."""
    cited = set(cited)
    records = work.records if work else []
    own = [r for r in records if _native_id(r) in cited] if cited else []
    return [_first(own, records, attribute) for attribute in attributes]


def _first(own: Sequence[Paper], records: Sequence[Paper], attribute: str) -> object:
    for group in (own, records):
        for source in (Source.OPENALEX, Source.S2, Source.ARXIV):
            for record in group:
                value = getattr(record, attribute)
                if record.source is source and value:
                    return value
    return None


def _native_id(record: Paper) -> PaperId | None:
    """The ID a source keys ``record`` by; a DOI or arXiv ID is shared by duplicates."""
    scheme, value = {
        Source.OPENALEX: (Scheme.OPENALEX, record.ids.openalex),
        Source.S2: (Scheme.S2, record.ids.s2),
        Source.ARXIV: (Scheme.ARXIV, record.ids.arxiv),
    }[record.source]
    return PaperId(scheme, value) if value else None


def _paper_row(work: ResolvedWork, now: dt.datetime) -> dict[str, object]:
    def dated(source: Source) -> dt.date | None:
        found = [
            d.date for d in work.dates if d.source is source and d.precision is DatePrecision.DAY
        ]
        return min(found) if found else None

    first = work.first_public()
    authors, fields = _pick(work, "authors"), _pick(work, "fields")
    return {
        "paper_id": work.paper_id,
        "title": _pick(work, "title"),
        "abstract": _pick(work, "abstract"),
        "year": first.date.year if first else _pick(work, "year"),
        "venue": _pick(work, "venue"),
        "authors": list(authors) if isinstance(authors, tuple) else [],
        "fields": list(fields) if isinstance(fields, tuple) else [],
        "reference_count": _pick(work, "reference_count"),
        "arxiv_v1_date": dated(Source.ARXIV),
        "openalex_date": dated(Source.OPENALEX),
        "s2_date": dated(Source.S2),
        "date_precision": first.precision.value if first else None,
        "first_public_date": first.date if first else None,
        "first_public_source": first.source.value if first else None,
        "sources": sorted({r.source.value for r in work.records}),
        "updated_at": now,
    }


def _reference_row(
    target_id: str, position: int, reference: ResolvedReference
) -> dict[str, object]:
    entry = reference.entry
    rule, score = entry.match
    found = entry.ids
    typed: dict[str, list[str]] = {}
    for paper_id in found:
        typed.setdefault(paper_id.scheme.value, []).append(paper_id.value)
    work_title, work_abstract = _picks(reference.work, ("title", "abstract"), found)
    return {
        "target_id": target_id,
        "ref_key": f"{position:04d}",
        "paper_id": reference.work.paper_id if reference.work else None,
        "title": entry.title,
        # what the target's LLM steps read: the work as this target's lineage resolved it
        "work_title": work_title,
        "work_abstract": work_abstract,
        "year": entry.year,
        "ids": typed,
        "sources": [s.value for s in entry.sources],
        "match_rule": rule.value if rule else None,
        "match_score": score,
        "contexts": list(entry.contexts) if entry.contexts is not None else None,
        "intents": list(entry.intents) if entry.intents is not None else None,
        "is_influential": entry.is_influential,
        "status": reference.status.value,
        "reason": reference.reason,
    }
