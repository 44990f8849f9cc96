"""The lineage step's fetching: records and reference lists from the sources, merged
(lineage.py) and judged (classify.py). Writes nothing: lineage_rows.py writes the results.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from inspire_build import ids
from inspire_build.bulk_source import BulkSource
from inspire_build.classify import ResolvedWork, TargetLineage, Works, classify, source_date
from inspire_build.cutoff import SourceDate
from inspire_build.errors import InputError
from inspire_build.http import HttpClient, NotFound, UnreadableBody
from inspire_build.ids import PaperId, Scheme
from inspire_build.lineage import Mention, MergedReference, canonical_id, merge
from inspire_build.models import Paper, Reference, Source
from inspire_build.sources import arxiv, openalex, semanticscholar

ALL_SOURCES = (Source.OPENALEX, Source.S2, Source.ARXIV)
Progress = Callable[[int, int], None]


Fetch = Callable[[HttpClient, Sequence[str], dict[str, str]], dict[str, Paper | None]]


@dataclasses.dataclass
class Memo:
    """The records a build has fetched, by source and ID, so that a later chunk of its targets
    does not ask for them again (the answer would be the same). An ID whose answer could not be
    read is not kept: it is asked again, and its failure noted again."""

    answers: dict[tuple[str, str], Paper | None] = dataclasses.field(default_factory=dict)

    def fetch(
        self,
        fetch: Fetch,
        client: HttpClient,
        wanted: Sequence[str],
        failed: dict[str, str],
    ) -> dict[str, Paper | None]:
        """``fetch(client, wanted, failed)``, asking only for the IDs not answered before."""
        source = fetch.__module__
        new = [i for i in dict.fromkeys(wanted) if (source, i) not in self.answers]
        found = fetch(client, new, failed) if new else {}
        self.answers.update({(source, i): found.get(i) for i in new if i not in failed})
        return {i: found[i] if i in found else self.answers[source, i] for i in wanted}


@dataclasses.dataclass
class _Fetched:
    """What one :func:`resolve_lineage` call has fetched so far, phase by phase."""

    client: HttpClient
    target_ids: Sequence[str]
    sources: Sequence[Source]
    works: Works = dataclasses.field(default_factory=Works)
    # ID -> why a source's answer about it could not be read; noted on its reference or target.
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    target_records: dict[str, Paper | None] = dataclasses.field(default_factory=dict)
    target_works: dict[str, ResolvedWork] = dataclasses.field(default_factory=dict)
    records: dict[str, Paper | None] = dataclasses.field(default_factory=dict)  # OpenAlex, cited
    arxiv_found: dict[str, Paper | None] = dataclasses.field(default_factory=dict)
    s2_lists: dict[str, list[Mention]] = dataclasses.field(default_factory=dict)
    memo: Memo = dataclasses.field(default_factory=Memo)
    bulk: BulkSource | None = None
    served: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    unidentified: dict[str, int] = dataclasses.field(default_factory=dict)

    def uses(self, source: Source) -> bool:
        return source in self.sources

    def ask(self, fetch: Fetch, wanted: Sequence[str]) -> dict[str, Paper | None]:
        asked = self.bulk.fetching(fetch) if self.bulk is not None else fetch
        return self.memo.fetch(asked, self.client, wanted, self.failed)

    def s2_references(self, raw: str, lookup: str) -> list[Reference]:
        """A target's S2 reference list: the bulk citations', or else the API's."""
        held = self.bulk.references(lookup) if self.bulk is not None else None
        if held is None:
            self.served.setdefault(raw, {})["s2 references"] = "api"
            return semanticscholar.fetch_references(self.client, lookup)
        self.served.setdefault(raw, {})["s2 references"] = held.label
        self.unidentified[raw] = held.unidentified
        return held.references

    def label_targets(self) -> None:
        """Which side served each target's OpenAlex record (the bulk source answers first)."""
        wanted = [_openalex_lookup_id([ids.parse_any_id(raw)]) for raw in self.target_ids]
        held = self.bulk.labels("openalex", [w for w in wanted if w]) if self.bulk else {}
        for raw, lookup in zip(self.target_ids, wanted, strict=True):
            record = self.target_records.get(raw)
            if record is not None or lookup:
                self.served.setdefault(raw, {})["openalex"] = held.get(lookup or "", "api")


def resolve_lineage(
    target_ids: Sequence[str],
    client: HttpClient,
    *,
    sources: Sequence[Source] = ALL_SOURCES,
    target_dates: Mapping[str, dt.date] | None = None,
    existing: Mapping[PaperId, str] | None = None,
    known_records: Mapping[str, Paper] | None = None,
    progress: Progress | None = None,
    window: tuple[dt.date, dt.date] | None = None,
    cutoff_offset: Callable[[str], int] | None = None,
    memo: Memo | None = None,
    bulk: BulkSource | None = None,
) -> list[TargetLineage]:
    """Fetch, merge, date and classify the references of every target. Writes nothing.

    ``cutoff_offset(target paper_id)`` is the secret number of days the target's published
    cutoff lies before the paper's exact one (``boundary.cutoff_offset``); references are judged
    against that published cutoff, so the search environment and the gold agree. None: exact.

    ``known_records`` are targets' OpenAlex records already fetched (target selection lists
    them), so they are not asked for again. With a split's ``window``, a target first public
    outside it is excluded, with the reason (see ``cutoff.outside_window``).
    ``memo`` keeps the records fetched for an earlier chunk of the build's targets, which are
    then not asked for again; ``bulk`` answers from the bulk tables what they hold, before the
    APIs are asked (bulk_source.py). ``progress(done, total)`` follows the S2 reference lists, one
    request per target at S2's 1/s: the step that bounds a build's wall time, which is why it
    runs in its own thread while OpenAlex and arXiv are fetched beside it.
    """
    target_dates = target_dates or {}
    fetched = _Fetched(
        client, target_ids, sources, memo=memo if memo is not None else Memo(), bulk=bulk
    )
    _targets(fetched, known_records or {})
    _with_s2_lists(fetched, progress)
    oa_lists = _openalex_lists(fetched)
    merged = {raw: merge([oa_lists[raw], fetched.s2_lists[raw]]) for raw in target_ids}
    _join_entries(fetched.works, merged)
    _s2_records(fetched, merged, target_dates)
    _arxiv_dates(fetched)
    for work in fetched.works.all():
        chosen = _existing_id(work.ids, existing or {}) or canonical_id(sorted(work.ids, key=str))
        work.paper_id = str(chosen)
    unreadable = {ids.parse_any_id(raw): why for raw, why in fetched.failed.items()}
    fetched.label_targets()
    return [
        dataclasses.replace(
            classify(
                raw,
                fetched.works.current(fetched.target_works[raw]),  # it may have joined another
                merged[raw],
                fetched.works,
                target_dates.get(raw),
                unreadable,
                window,
                cutoff_offset,
            ),
            served_by=dict(sorted(fetched.served.get(raw, {}).items())),
            unidentified=fetched.unidentified.get(raw, 0),
        )
        for raw in target_ids
    ]


def _targets(fetched: _Fetched, known_records: Mapping[str, Paper]) -> None:
    """Phase 1: the targets' own OpenAlex records, and a work for each target."""
    parsed = {raw: ids.parse_any_id(raw) for raw in fetched.target_ids}
    fetched.target_records = {raw: known_records.get(raw) for raw in fetched.target_ids}
    if fetched.uses(Source.OPENALEX):
        lookups = {
            raw: _openalex_lookup_id([p])
            for raw, p in parsed.items()
            if fetched.target_records[raw] is None
        }
        found = fetched.ask(openalex.fetch_works, [v for v in lookups.values() if v])
        fetched.target_records.update(
            {raw: found.get(v) if v else None for raw, v in lookups.items()}
        )
    for raw, paper_id in parsed.items():
        record = fetched.target_records.get(raw)
        work = fetched.works.add([paper_id, *(_typed(record) if record else [])])
        if work is None:
            raise InputError(f"no usable identifier in {raw!r}")
        if record is not None:
            _attach(work, record)
        fetched.target_works[raw] = work


def _with_s2_lists(fetched: _Fetched, progress: Progress | None) -> None:
    """Phase 2 in a thread of its own (S2's reference lists, at 1/s, bound the build), beside
    phase 3a: the cited works' OpenAlex records, then the arXiv records of the works known."""
    s2_failed: dict[str, str] = {}
    stop = threading.Event()
    lists: dict[str, list[Mention]] = {raw: [] for raw in fetched.target_ids}
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s2-references")
    future = (
        pool.submit(_s2_reference_lists, fetched, progress, stop, s2_failed)
        if fetched.uses(Source.S2)
        else None
    )
    try:
        _beside_s2(fetched)
        if future is not None:
            lists = future.result()
            fetched.failed.update(s2_failed)
    except BaseException:
        stop.set()  # the S2 thread stops before its next request
        raise
    finally:
        pool.shutdown()
    fetched.s2_lists = lists


def _s2_reference_lists(
    fetched: _Fetched, progress: Progress | None, stop: threading.Event, failed: dict[str, str]
) -> dict[str, list[Mention]]:
    """Each target's S2 reference list, as mentions (an empty list where S2 has none)."""
    lists: dict[str, list[Mention]] = {raw: [] for raw in fetched.target_ids}
    for done, raw in enumerate(fetched.target_ids, 1):
        if stop.is_set():
            break
        lookup = _s2_lookup_id(fetched.target_works[raw].ids)
        if progress is not None:
            progress(done, len(fetched.target_ids))
        if lookup is None:
            continue
        try:
            references = fetched.s2_references(raw, lookup)
        except NotFound:
            continue
        except UnreadableBody as error:
            failed[lookup] = f"S2's reference list stays malformed: {error.problem}"
            continue
        lists[raw] = [
            Mention(
                Source.S2,
                i,
                tuple(r.ids.typed()),
                r.title,
                r.year,
                source_date(Source.S2, r.publication_date, r.year, None),
                r.contexts,
                r.intents,
                r.is_influential,
            )
            for i, r in enumerate(references)
        ]
    return lists


def _beside_s2(fetched: _Fetched) -> None:
    """Phase 3a: the cited works' OpenAlex records, then arXiv records of the works so far."""
    if fetched.uses(Source.OPENALEX):
        wanted = [
            w.removeprefix("openalex:")
            for r in fetched.target_records.values()
            if r
            for w in r.referenced_works or ()
        ]
        if wanted:
            fetched.records = fetched.ask(openalex.fetch_works, list(dict.fromkeys(wanted)))
    if fetched.uses(Source.ARXIV):
        early = {
            i.value
            for r in [*fetched.target_records.values(), *fetched.records.values()]
            if r
            for i in _typed(r)
            if i.scheme is Scheme.ARXIV
        }
        if early:
            fetched.arxiv_found = fetched.ask(arxiv.fetch_records, sorted(early))


def _openalex_lists(fetched: _Fetched) -> dict[str, list[Mention]]:
    """Phase 3b: OpenAlex records of the works only S2 listed (by DOI or arXiv ID), then each
    target's OpenAlex reference list as mentions; every OpenAlex record joins the works."""
    oa_lists: dict[str, list[Mention]] = {raw: [] for raw in fetched.target_ids}
    if not fetched.uses(Source.OPENALEX):
        return oa_lists
    known = {i for r in fetched.records.values() if r for i in _typed(r)}
    s2_only = [
        lookup
        for ms in fetched.s2_lists.values()
        for m in ms
        if m.ids and known.isdisjoint(m.ids) and (lookup := _openalex_lookup_id(m.ids))
    ]
    if s2_only:
        fetched.records.update(fetched.ask(openalex.fetch_works, list(dict.fromkeys(s2_only))))
    for raw, record in fetched.target_records.items():
        listed = record.referenced_works or () if record else ()
        oa_lists[raw] = [
            _openalex_mention(position, work_id.removeprefix("openalex:"), fetched.records)
            for position, work_id in enumerate(listed)
        ]
    for record in fetched.records.values():
        if record is not None and (work := fetched.works.add(_typed(record))) is not None:
            _attach(work, record)
    return oa_lists


def _openalex_mention(position: int, work_id: str, records: Mapping[str, Paper | None]) -> Mention:
    cited = records.get(work_id)
    if cited is None:
        return Mention(Source.OPENALEX, position, (PaperId(Scheme.OPENALEX, work_id),))
    return Mention(
        Source.OPENALEX,
        position,
        tuple(_typed(cited)),
        cited.title,
        cited.year,
        source_date(Source.OPENALEX, cited.publication_date, cited.year, None),
    )


def _join_entries(works: Works, merged: Mapping[str, list[MergedReference]]) -> None:
    """Phase 4: every merged entry joins the global works, with its mentions' dates."""
    for entries in merged.values():
        for entry in entries:
            work = works.add(entry.ids)
            if work is not None:
                work.dates += [m.mention.date for m in entry.matches if m.mention.date]


def _s2_records(
    fetched: _Fetched,
    merged: Mapping[str, list[MergedReference]],
    target_dates: Mapping[str, dt.date],
) -> None:
    """Phase 5: S2 records for the works no S2 list described (and the targets)."""
    if not fetched.uses(Source.S2):
        return
    works = fetched.works
    # Described: an S2 list entry with an S2 ID carried that work's record. A null-ID entry
    # (title and year only) did not, so such works are still looked up.
    described = {
        id(works.get(e.ids))
        for es in merged.values()
        for e in es
        if any(m.mention.source is Source.S2 and m.mention.ids for m in e.matches)
    }
    # A target whose date was given needs no record of its own (`lineage show --target-date`).
    described |= {id(works.current(fetched.target_works[raw])) for raw in target_dates}
    missing = [w for w in works.all() if id(w) not in described]
    lookups = {id(w): _s2_lookup_id(w.ids) for w in missing}
    found = fetched.ask(semanticscholar.fetch_papers, [v for v in lookups.values() if v])
    for work in missing:
        lookup = lookups[id(work)]
        paper = found.get(lookup) if lookup else None
        if paper is not None:
            work = works.add(_typed(paper)) or work
            _attach(work, paper)


def _arxiv_dates(fetched: _Fetched) -> None:
    """Phase 6: arXiv v1 dates of every work with an arXiv ID (those not fetched early)."""
    if not fetched.uses(Source.ARXIV):
        return
    with_arxiv = {
        w_id.value: w for w in fetched.works.all() for w_id in w.ids if w_id.scheme is Scheme.ARXIV
    }
    late = sorted(set(with_arxiv) - set(fetched.arxiv_found))
    if late:
        fetched.arxiv_found.update(fetched.ask(arxiv.fetch_records, late))
    for arxiv_id in sorted(with_arxiv):  # one order, however the records were fetched
        paper = fetched.arxiv_found.get(arxiv_id)
        if paper is not None:
            _attach(with_arxiv[arxiv_id], paper)


def _typed(paper: Paper) -> list[PaperId]:
    return paper.ids.typed()


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


def _existing_id(found: Iterable[PaperId], existing: Mapping[PaperId, str]) -> str | None:
    known = sorted({existing[i] for i in found if i in existing})
    return known[0] if known else None


def _attach(work: ResolvedWork, record: Paper) -> None:
    work.add_records([record])
    work.ids.update(_typed(record))
    if record.source is Source.ARXIV:
        v1 = arxiv.v1_date(record)
        if v1 is not None:
            work.dates.append(SourceDate(Source.ARXIV, v1))
        return
    date = source_date(record.source, record.publication_date, record.year, record.date_precision)
    if date is not None:
        work.dates.append(date)


def lower_bound(results: Sequence[TargetLineage]) -> dict[str, int]:
    """About the fewest HTTP calls per source that could have resolved these targets: a bound
    for a build to be measured against, not a proof (a run asked 86 against 87: a target
    whose S2 list came in the batch, or works S2 need not be asked for, beat it).

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
