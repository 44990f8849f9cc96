"""The lineage step's I/O: select targets, fetch, merge (lineage.py), date (cutoff.py), write.

No Prefect here: flows call these functions. Fetching is batched across targets, so a work
cited by many targets is fetched once:

1. targets' OpenAlex records, in OR-filter batches (unless selection already listed them);
2. each target's S2 reference list (``limit=1000`` pages), in a thread beside 3 and 5;
3. every referenced work's OpenAlex record, in OR-filter batches of 100;
4. S2 records, through ``/paper/batch``, only for works no S2 list described;
5. arXiv records (v1 dates) for every work with an arXiv ID, 100 per request: first those
   OpenAlex named, while the S2 lists arrive, then the rest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import duckdb

from inspire_build import ids, sampling, warehouse
from inspire_build.boundary import published_cutoff
from inspire_build.config import Settings
from inspire_build.cutoff import (
    SourceDate,
    first_public,
    outside_window,
    reference_status,
)
from inspire_build.errors import InputError
from inspire_build.http import HttpClient, NotFound, UnreadableBody
from inspire_build.ids import PaperId, Scheme
from inspire_build.lineage import Mention, MergedReference, canonical_id, is_self, merge
from inspire_build.models import (
    DatePrecision,
    Paper,
    ReferenceStatus,
    Source,
    TargetStatus,
)
from inspire_build.sources import arxiv, openalex, semanticscholar

ALL_SOURCES = (Source.OPENALEX, Source.S2, Source.ARXIV)
SOURCE_PROBLEMS = "[source problems: "


@dataclasses.dataclass
class Work:
    """One work across targets: every ID it is known by, and every source's record of it."""

    ids: set[PaperId]
    records: list[Paper] = dataclasses.field(default_factory=list)
    dates: list[SourceDate] = dataclasses.field(default_factory=list)
    paper_id: str = ""

    def first_public(self) -> SourceDate | None:
        return first_public(self.dates)


@dataclasses.dataclass
class ResolvedReference:
    entry: MergedReference
    work: Work | None
    status: ReferenceStatus
    reason: str
    date: SourceDate | None


@dataclasses.dataclass
class TargetLineage:
    requested: str
    work: Work
    target_date: dt.date | None
    cutoff: dt.date | None
    references: list[ResolvedReference]
    status: TargetStatus
    reason: str

    def counts(self) -> Counter[str]:
        return Counter(r.status.value for r in self.references)


# --- target selection ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Selection:
    split: str
    candidates: int
    selected: list[str]
    statuses: Counter[str]
    records: dict[str, Paper] = dataclasses.field(default_factory=dict)  # the selected ones


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
    config = settings.split(split)
    limit = limit or config.limit
    works = openalex.list_works(client, openalex.candidate_filter(config))
    order = sampling.selection_order(
        [(w.ids.openalex or "", w.publication_date) for w in works], config.sample_seed
    )
    position_of = {key: position for position, key in enumerate(order)}
    works.sort(key=lambda w: (position_of[w.ids.openalex or ""], w.ids.openalex or ""))
    rows, selected, statuses, records = [], [], Counter[str](), {}
    now = dt.datetime.now(dt.UTC)
    canonical = _canonical_ids(con, works)
    for position, work in enumerate(works):
        paper_id = f"openalex:{work.ids.openalex}"
        if limit is not None and position >= limit:
            status, reason = TargetStatus.EXCLUDED, f"over the split's limit of {limit} targets"
        else:
            status, reason = TargetStatus.CANDIDATE, "selected: awaiting lineage"
            selected.append(paper_id)
            records[paper_id] = work
        statuses[status.value] += 1
        rows.append(
            {
                "split": split,
                "paper_id": canonical.get(paper_id, paper_id),
                "title": work.title,
                "first_public_date": work.publication_date,
                "cutoff_date": None,
                "status": status.value,
                "reason": reason,
                "updated_at": now,
            }
        )
    with warehouse.transaction(con):
        for stale in sorted(canonical):  # a row an earlier selection left under openalex:
            warehouse.replace_where(
                con, "targets", {"split": split, "paper_id": stale}, [], ["split", "paper_id"]
            )
        warehouse.upsert(con, "targets", rows, ["split", "paper_id"])
    return Selection(split, len(works), selected, statuses, records)


def _canonical_ids(con: duckdb.DuckDBPyConnection, works: Sequence[Paper]) -> dict[str, str]:
    """``openalex:W..`` -> the paper's canonical ID, for candidates an earlier build resolved,
    so that a paper keeps one row in ``targets`` (lineage moves a new one there itself)."""
    known = warehouse.lookup_ids(con, "openalex", [w.ids.openalex or "" for w in works])
    return {
        f"openalex:{value}": paper_id
        for value, paper_id in known.items()
        if paper_id != f"openalex:{value}"
    }


# --- resolving ----------------------------------------------------------------------------------


def _typed(paper: Paper) -> list[PaperId]:
    return paper.ids.typed()


def _date(
    source: Source, day: dt.date | None, year: int | None, precision: DatePrecision | None
) -> SourceDate | None:
    if day is not None:
        return SourceDate(source, day, precision or DatePrecision.DAY)
    if year is not None:
        return SourceDate(source, dt.date(year, 1, 1), DatePrecision.YEAR)
    return None


class _Works:
    """Union of IDs across every record and mention seen: one Work per connected set."""

    def __init__(self) -> None:
        self.by_id: dict[PaperId, Work] = {}

    def add(self, found: Iterable[PaperId]) -> Work | None:
        found = list(found)
        if not found:
            return None
        works = list({id(w): w for i in found if (w := self.by_id.get(i)) is not None}.values())
        work = works[0] if works else Work(ids=set())
        for other in works[1:]:
            work.ids |= other.ids
            work.records += other.records
            work.dates += other.dates
        work.ids.update(found)
        for paper_id in work.ids:
            self.by_id[paper_id] = work
        return work

    def current(self, work: Work) -> Work:
        """The live Work that ``work`` was merged into (or ``work`` itself)."""
        return next((self.by_id[i] for i in work.ids if i in self.by_id), work)

    def get(self, found: Iterable[PaperId]) -> Work | None:
        return next((self.by_id[i] for i in found if i in self.by_id), None)

    def all(self) -> list[Work]:
        return list({id(w): w for w in self.by_id.values()}.values())


def _s2_lookup_id(found: Iterable[PaperId]) -> str | None:
    by_scheme = {p.scheme: p for p in found}
    for scheme in (Scheme.S2, Scheme.CORPUS_ID, Scheme.ARXIV, Scheme.DOI):
        if scheme in by_scheme:
            return str(by_scheme[scheme])
    return None


def _openalex_lookup_id(found: Iterable[PaperId]) -> str | None:
    by_scheme = {p.scheme: p for p in found}
    for scheme in (Scheme.OPENALEX, Scheme.DOI, Scheme.ARXIV):
        if scheme in by_scheme:
            return by_scheme[scheme].value
    return None


def resolve_lineage(
    target_ids: Sequence[str],
    client: HttpClient,
    *,
    sources: Sequence[Source] = ALL_SOURCES,
    target_dates: Mapping[str, dt.date] | None = None,
    existing: Mapping[PaperId, str] | None = None,
    known_records: Mapping[str, Paper] | None = None,
    progress: Callable[[int, int], None] | None = None,
    window: tuple[dt.date, dt.date] | None = None,
    cutoff_offset: Callable[[str], int] | None = None,
) -> list[TargetLineage]:
    """Fetch, merge, date and classify the references of every target. Writes nothing.

    ``cutoff_offset(target paper_id)`` is the secret number of days the target's published
    cutoff lies before the paper's exact one (``boundary.cutoff_offset``); references are judged
    against that published cutoff, so the search environment and the gold agree. None: exact.

    ``known_records`` are targets' OpenAlex records already fetched (target selection lists
    them), so they are not asked for again. With a split's ``window``, a target first public
    outside it is excluded, with the reason (see ``cutoff.outside_window``).
    ``progress(done, total)`` follows the S2 reference lists, one request per target at S2's
    1/s: the step that bounds a build's wall time, which is why it runs in its own thread while
    OpenAlex and arXiv are fetched beside it.
    """
    target_dates = target_dates or {}
    parsed = {raw: ids.parse_any_id(raw) for raw in target_ids}
    works = _Works()
    use_oa, use_s2, use_arxiv = (s in sources for s in ALL_SOURCES)
    # ID -> why a source's answer about it could not be read; noted on its reference or target.
    failed: dict[str, str] = {}

    # 1. the targets' own OpenAlex records
    target_records: dict[str, Paper | None] = {
        raw: (known_records or {}).get(raw) for raw in target_ids
    }
    if use_oa:
        lookups = {
            raw: _openalex_lookup_id([p])
            for raw, p in parsed.items()
            if target_records[raw] is None
        }
        found = openalex.fetch_works(client, [v for v in lookups.values() if v], failed)
        target_records.update({raw: found.get(v) if v else None for raw, v in lookups.items()})
    target_works: dict[str, Work] = {}
    for raw, paper_id in parsed.items():
        record = target_records.get(raw)
        target_ids_all = [paper_id, *(_typed(record) if record else [])]
        work = works.add(target_ids_all)
        if work is None:
            raise InputError(f"no usable identifier in {raw!r}")
        if record is not None:
            _attach(work, record)
        target_works[raw] = work

    # 2. S2 reference lists, in a thread of their own (see the docstring)
    s2_failed: dict[str, str] = {}
    stop = threading.Event()

    def s2_reference_lists() -> dict[str, list[Mention]]:
        lists: dict[str, list[Mention]] = {raw: [] for raw in target_ids}
        for done, raw in enumerate(target_ids, 1):
            if stop.is_set():
                break
            lookup = _s2_lookup_id(target_works[raw].ids)
            if progress is not None:
                progress(done, len(target_ids))
            if lookup is None:
                continue
            try:
                references = semanticscholar.fetch_references(client, lookup)
            except NotFound:
                continue
            except UnreadableBody as error:
                s2_failed[lookup] = f"S2's reference list stays malformed: {error.problem}"
                continue
            lists[raw] = [
                Mention(
                    Source.S2,
                    i,
                    tuple(r.ids.typed()),
                    r.title,
                    r.year,
                    _date(Source.S2, r.publication_date, r.year, None),
                    r.contexts,
                    r.intents,
                    r.is_influential,
                )
                for i, r in enumerate(references)
            ]
        return lists

    s2_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s2-references")
    s2_future = s2_pool.submit(s2_reference_lists) if use_s2 else None
    s2_lists: dict[str, list[Mention]] = {raw: [] for raw in target_ids}
    records: dict[str, Paper | None] = {}
    arxiv_found: dict[str, Paper | None] = {}
    try:
        # 3a. referenced works' OpenAlex records, then arXiv records of the works known so far
        if use_oa:
            wanted = [
                w.removeprefix("openalex:")
                for r in target_records.values()
                if r
                for w in r.referenced_works or ()
            ]
            if wanted:
                records = openalex.fetch_works(client, list(dict.fromkeys(wanted)), failed)
        if use_arxiv:
            early = {
                i.value
                for r in [*target_records.values(), *records.values()]
                if r
                for i in _typed(r)
                if i.scheme is Scheme.ARXIV
            }
            arxiv_found = arxiv.fetch_records(client, sorted(early), failed) if early else {}
        if s2_future is not None:
            s2_lists = s2_future.result()
            failed.update(s2_failed)
    except BaseException:
        stop.set()  # the S2 thread stops before its next request
        raise
    finally:
        s2_pool.shutdown()

    # 3b. S2-only works' OpenAlex records (by DOI or arXiv ID), and every OpenAlex list
    oa_lists: dict[str, list[Mention]] = {raw: [] for raw in target_ids}
    if use_oa:
        # Works only S2 listed (its IDs match no OpenAlex record fetched so far), by DOI or arXiv.
        known = {i for r in records.values() if r for i in _typed(r)}
        s2_only = [
            lookup
            for ms in s2_lists.values()
            for m in ms
            if m.ids and known.isdisjoint(m.ids) and (lookup := _openalex_lookup_id(m.ids))
        ]
        if s2_only:
            records.update(openalex.fetch_works(client, list(dict.fromkeys(s2_only)), failed))
        for raw, record in target_records.items():
            listed = (
                [w.removeprefix("openalex:") for w in (record.referenced_works or ())]
                if record
                else []
            )
            for position, work_id in enumerate(listed):
                cited = records.get(work_id)
                if cited is None:
                    oa_lists[raw].append(
                        Mention(Source.OPENALEX, position, (PaperId(Scheme.OPENALEX, work_id),))
                    )
                    continue
                oa_lists[raw].append(
                    Mention(
                        Source.OPENALEX,
                        position,
                        tuple(_typed(cited)),
                        cited.title,
                        cited.year,
                        _date(Source.OPENALEX, cited.publication_date, cited.year, None),
                    )
                )
        for record in records.values():
            if record is not None:
                work = works.add(_typed(record))
                if work is not None:
                    _attach(work, record)

    # 4. merge each target's lists; every entry joins the global works
    merged = {raw: merge([oa_lists[raw], s2_lists[raw]]) for raw in target_ids}
    for entries in merged.values():
        for entry in entries:
            work = works.add(entry.ids)
            if work is not None:
                work.dates += [m.mention.date for m in entry.matches if m.mention.date]

    # 5. S2 records for works no S2 list described (and the targets)
    if use_s2:
        # Described: an S2 list entry with an S2 ID carried that work's record. A null-ID entry
        # (title and year only) did not, so such works are still looked up.
        described = {
            id(works.get(e.ids))
            for es in merged.values()
            for e in es
            if any(m.mention.source is Source.S2 and m.mention.ids for m in e.matches)
        }
        # A target whose date was given needs no record of its own (`lineage show --target-date`).
        described |= {id(works.current(target_works[raw])) for raw in target_dates}
        missing = [w for w in works.all() if id(w) not in described]
        s2_lookups = {id(w): _s2_lookup_id(w.ids) for w in missing}
        s2_found = semanticscholar.fetch_papers(
            client, [v for v in s2_lookups.values() if v], failed
        )
        for work in missing:
            lookup = s2_lookups[id(work)]
            paper = s2_found.get(lookup) if lookup else None
            if paper is not None:
                work = works.add(_typed(paper)) or work
                _attach(work, paper)

    # 6. arXiv v1 dates
    if use_arxiv:
        with_arxiv = {
            w_id.value: w for w in works.all() for w_id in w.ids if w_id.scheme is Scheme.ARXIV
        }
        late = sorted(set(with_arxiv) - set(arxiv_found))
        arxiv_found.update(arxiv.fetch_records(client, late, failed) if late else {})
        for arxiv_id in sorted(with_arxiv):  # one order, however the records were fetched
            paper = arxiv_found.get(arxiv_id)
            if paper is not None:
                _attach(with_arxiv[arxiv_id], paper)

    # 7. canonical IDs, dates and statuses
    for work in works.all():
        chosen = _existing_id(work.ids, existing or {}) or canonical_id(sorted(work.ids, key=str))
        work.paper_id = str(chosen)
    unreadable = {ids.parse_any_id(raw): why for raw, why in failed.items()}
    results = []
    for raw in target_ids:
        target = works.current(target_works[raw])  # it may have joined another work since
        results.append(
            _classify(
                raw,
                target,
                merged[raw],
                works,
                target_dates.get(raw),
                unreadable,
                window,
                cutoff_offset,
            )
        )
    return results


def _notes(found: Iterable[PaperId], work: Work | None, failed: Mapping[PaperId, str]) -> str:
    """Why the sources could not say more about a work: unreadable answers, wrong-typed fields.

    Returned as a reason's suffix, `` [source problems: ...]`` ("" when there is nothing to
    say), so a bad input stays visible on the row it affected; gold.py keeps it on a target.
    """
    notes = [failed[i] for i in sorted(found, key=str) if i in failed]
    for record in work.records if work else ():
        notes += [f"{record.source.value} gave {problem}" for problem in record.problems]
    return f" {SOURCE_PROBLEMS}{'; '.join(dict.fromkeys(notes))}]" if notes else ""


def _existing_id(found: Iterable[PaperId], existing: Mapping[PaperId, str]) -> str | None:
    known = sorted({existing[i] for i in found if i in existing})
    return known[0] if known else None


def _attach(work: Work, record: Paper) -> None:
    work.records.append(record)
    work.ids.update(_typed(record))
    if record.source is Source.ARXIV:
        v1 = arxiv.v1_date(record)
        if v1 is not None:
            work.dates.append(SourceDate(Source.ARXIV, v1))
        return
    date = _date(record.source, record.publication_date, record.year, record.date_precision)
    if date is not None:
        work.dates.append(date)


def _classify(
    raw: str,
    target: Work,
    entries: list[MergedReference],
    works: _Works,
    given_date: dt.date | None,
    failed: Mapping[PaperId, str],
    window: tuple[dt.date, dt.date] | None,
    cutoff_offset: Callable[[str], int] | None = None,
) -> TargetLineage:
    target_first = target.first_public()
    target_date = given_date or (target_first.date if target_first else None)
    title = next((r.title for r in target.records if r.title), None)
    year = target_date.year if target_date else None
    offset = cutoff_offset(target.paper_id) if cutoff_offset and target_date else 0
    cutoff = published_cutoff(target_date, offset) if target_date else None
    resolved: list[ResolvedReference] = []
    for entry in entries:
        work = works.get(entry.ids)
        date = work.first_public() if work else None
        if target_date is None or cutoff is None:
            status, reason = ReferenceStatus.NO_DATE, "the target has no first public date"
            if not entry.ids:
                status, reason = ReferenceStatus.UNRESOLVED, "no usable identifier in any source"
        else:
            status, reason = reference_status(
                date,
                target_date=target_date,
                cutoff=cutoff,
                resolved=bool(entry.ids),
                is_self=is_self(entry, target.ids, title, year) or work is target,
            )
        reason += _notes(entry.ids, work, failed)
        resolved.append(ResolvedReference(entry, work, status, reason, date))
    eligible = sum(r.status is ReferenceStatus.ELIGIBLE for r in resolved)
    verdict, why = (
        TargetStatus.CANDIDATE,
        f"lineage resolved: {eligible} eligible of {len(resolved)} references",
    )
    outside = outside_window(target_first, *window) if window and target_first else None
    if target_date is None:
        verdict, why = TargetStatus.EXCLUDED, "no first public date in any source"
    elif outside and not given_date:
        verdict, why = TargetStatus.EXCLUDED, outside
    elif not entries:
        verdict, why = TargetStatus.EXCLUDED, "no source lists any reference"
    elif not eligible:
        verdict, why = TargetStatus.EXCLUDED, "no reference is strictly before the cutoff"
    why += _notes(target.ids, target, failed)
    return TargetLineage(raw, target, target_date, cutoff, resolved, verdict, why)


def lower_bound(results: Sequence[TargetLineage]) -> dict[str, int]:
    """The fewest HTTP calls per source that could have resolved these targets.

    OpenAlex ⌈unique works / 100⌉; S2 one reference page per 1,000 listed references of each
    target plus ⌈unique works / 500⌉ batch calls; arXiv ⌈arXiv IDs / 100⌉.
    """
    works = {id(r.work): r.work for x in results for r in x.references if r.work}
    works.update({id(x.work): x.work for x in results})
    arxiv_ids = {i.value for w in works.values() for i in w.ids if i.scheme is Scheme.ARXIV}
    pages = 0
    for result in results:
        listed = sum(1 for r in result.references if Source.S2 in r.entry.sources)
        pages += max(1, -(-listed // semanticscholar.REFERENCES_LIMIT))
    return {
        "openalex": -(-len(works) // openalex.OR_VALUES_MAX),
        "s2": pages + -(-len(works) // semanticscholar.BATCH_MAX),
        "arxiv": -(-len(arxiv_ids) // arxiv.ID_LIST_MAX),
    }


# --- writing ------------------------------------------------------------------------------------


def crosswalk(con: duckdb.DuckDBPyConnection) -> dict[PaperId, str]:
    """The warehouse's ID crosswalk, as typed IDs."""
    known: dict[PaperId, str] = {}
    for scheme, value, paper_id in con.execute(
        "SELECT scheme, value, paper_id FROM paper_ids"
    ).fetchall():
        try:
            known[PaperId(Scheme(scheme), value)] = paper_id
        except ValueError:
            continue
    return known


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
    paper_rows, id_rows = [], []
    for work in works.values():
        paper_rows.append(_paper_row(work, now))
        for paper_id in sorted(work.ids, key=str):
            source = next(
                (r.source.value for r in work.records if paper_id in r.ids.typed()), "reference"
            )
            id_rows.append(
                {
                    "scheme": paper_id.scheme.value,
                    "value": paper_id.value,
                    "paper_id": work.paper_id,
                    "source": source,
                }
            )
    with warehouse.transaction(con):
        warehouse.upsert(con, "papers", paper_rows, ["paper_id"])
        warehouse.upsert(con, "paper_ids", id_rows, ["scheme", "value"])
        for result in results:
            target_id = result.work.paper_id
            warehouse.replace_where(
                con,
                "references",
                {"target_id": target_id},
                [_reference_row(target_id, i, r) for i, r in enumerate(result.references)],
                ["target_id", "ref_key"],
            )
            counts = result.counts()
            warehouse.upsert(
                con,
                "gold_completeness",
                [
                    {
                        "target_id": target_id,
                        "references_seen": len(result.references),
                        "resolved": sum(1 for r in result.references if r.entry.ids),
                        "dated": sum(1 for r in result.references if r.entry.ids and r.date),
                        **{s.value: counts.get(s.value, 0) for s in ReferenceStatus},
                        "sources": [s.value for s in sources],
                        "updated_at": now,
                    }
                ],
                ["target_id"],
            )
            if result.requested != target_id:  # the selection's row now lives under the work's ID
                warehouse.replace_where(
                    con,
                    "targets",
                    {"split": split, "paper_id": result.requested},
                    [],
                    ["split", "paper_id"],
                )
            title = next((p.title for p in result.work.records if p.title), None)
            warehouse.upsert(
                con,
                "targets",
                [
                    {
                        "split": split,
                        "paper_id": target_id,
                        "title": title,
                        "first_public_date": result.target_date,
                        "cutoff_date": result.cutoff,
                        "status": result.status.value,
                        "reason": result.reason,
                        "updated_at": now,
                    }
                ],
                ["split", "paper_id"],
            )


def _paper_row(work: Work, now: dt.datetime) -> dict[str, object]:
    def pick(attribute: str) -> object:
        for source in (Source.OPENALEX, Source.S2, Source.ARXIV):
            for record in work.records:
                value = getattr(record, attribute)
                if record.source is source and value:
                    return value
        return None

    def dated(source: Source) -> dt.date | None:
        found = [
            d.date for d in work.dates if d.source is source and d.precision is DatePrecision.DAY
        ]
        return min(found) if found else None

    first = work.first_public()
    authors, fields = pick("authors"), pick("fields")
    return {
        "paper_id": work.paper_id,
        "title": pick("title"),
        "abstract": pick("abstract"),
        "year": first.date.year if first else pick("year"),
        "venue": pick("venue"),
        "authors": list(authors) if isinstance(authors, tuple) else [],
        "fields": list(fields) if isinstance(fields, tuple) else [],
        "reference_count": pick("reference_count"),
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
    typed: dict[str, list[str]] = {}
    for paper_id in entry.ids:
        typed.setdefault(paper_id.scheme.value, []).append(paper_id.value)
    return {
        "target_id": target_id,
        "ref_key": f"{position:04d}",
        "paper_id": reference.work.paper_id if reference.work else None,
        "title": entry.title,
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


def parse_sources(text: str) -> list[Source]:
    """``"s2,openalex"`` -> sources, with a clear error naming the valid ones."""
    chosen = []
    for name in (t.strip() for t in text.split(",") if t.strip()):
        try:
            chosen.append(Source(name))
        except ValueError:
            raise InputError(f"unknown source {name!r}; known: openalex, s2, arxiv") from None
    if not chosen:
        raise InputError("no source given")
    return chosen


def check_ids(raw_ids: Sequence[str]) -> None:
    """Refuse a junk ID before any work starts (InvalidIdError is an InputError: exit 2)."""
    for raw in raw_ids:
        ids.parse_any_id(raw)
