"""The bulk source: what a build's lineage asks the sources for, answered from the bulk tables
first (``inspire snapshot ingest``), and from the APIs only for what they do not hold: a work
newer than the release, a source the release lacks (arXiv's version dates), an ID no bulk
record carries.

The records are the ones the sources' ``parse`` functions gave at ingest, and an S2 reference
list is rebuilt from the Datasets' citations through ``semanticscholar.parse_reference``, so
lineage merges and judges them by the same rules as the APIs' answers. Which side served a
target's record and list is lineage's to record (``gold_completeness.served_by``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Sequence
from typing import Any

import duckdb

from inspire_build import ids
from inspire_build.config import SplitConfig
from inspire_build.errors import InvalidIdError
from inspire_build.http import HttpClient
from inspire_build.models import DatePrecision, Paper, Reference
from inspire_build.sources import openalex, semanticscholar
from inspire_build.tables import bulk as bulk_table

_DAY = dt.timedelta(days=1)
Fetch = Callable[[HttpClient, Sequence[str], dict[str, str]], dict[str, Paper | None]]

# A fetch function's module -> the source its records come from in the bulk tables.
_SOURCES = {
    "inspire_build.sources.openalex": "openalex",
    "inspire_build.sources.semanticscholar": "s2",
    "inspire_build.sources.arxiv": "arxiv",
}


class BulkSource:
    """Lookups in the bulk tables through a cursor of their own per call (lineage asks from
    two threads)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection, enabled: bool = True) -> BulkSource | None:
        """A bulk source over ``con``'s bulk tables, or None when they hold nothing (or the
        ``bulk`` setting is off)."""
        return cls(con) if enabled and bulk_table.files(con) else None

    def candidates(
        self, client: HttpClient, split: SplitConfig
    ) -> tuple[list[Paper], dict[str, int]] | None:
        """A split's candidate works: those the snapshot holds, tested as OpenAlex's filter
        tests them, and, for the part of the window after the snapshot's release, those the
        API lists. None when no snapshot works were ingested. Also returns how many each side
        gave."""
        release = bulk_table.newest_release(self._con, "openalex-works")
        if release is None:
            return None
        held = [
            Paper.model_validate_json(paper)
            for paper in bulk_table.candidate_works(
                self._con,
                openalex.field_ids(split.fields),
                split.start,
                min(split.end, release),
                split.min_references,
            )
        ]
        newer: list[Paper] = []
        if split.end > release:
            after = split.model_copy(update={"start": max(split.start, release + _DAY)})
            newer = openalex.list_works(client, openalex.candidate_filter(after))
        listed = {w.ids.openalex for w in newer}
        works = [w for w in held if w.ids.openalex not in listed] + newer
        return works, {
            f"openalex bulk {release}": len(works) - len(newer),
            "openalex api": len(newer),
        }

    def fetching(self, fetch: Fetch) -> Fetch:
        """``fetch``, asking the API only for the IDs the bulk tables do not hold."""
        source = _SOURCES.get(fetch.__module__)
        if source is None:
            return fetch

        @functools.wraps(fetch)  # keeps __module__: the memo files answers under it
        def bulk_first(
            client: HttpClient, wanted: Sequence[str], failed: dict[str, str]
        ) -> dict[str, Paper | None]:
            held = self.records(source, wanted)
            rest = [i for i in wanted if i not in held]
            return {**held, **(fetch(client, rest, failed) if rest else {})}

        return bulk_first

    def records(self, source: str, wanted: Sequence[str]) -> dict[str, Paper]:
        """The bulk records of the IDs in ``wanted`` that the tables hold, by the ID asked."""
        typed = {raw: key for raw in wanted if (key := _typed(raw)) is not None}
        found = bulk_table.records_by_id(self._con, source, sorted(set(typed.values())))
        return {raw: _paper(*found[key]) for raw, key in typed.items() if key in found}

    def references(self, lookup: str) -> HeldList | None:
        """A paper's S2 reference list from the Datasets' citations, or None when the release
        does not hold the paper, or may not hold all its citations (a filtered ingest keeps
        those of papers on arXiv: ``tables.bulk.citations``); the API is asked then. A
        citation that names no cited paper (the Datasets give no title for it, unlike the API)
        cannot be a reference: it is only counted."""
        key = _typed(lookup)
        held = bulk_table.records_by_id(self._con, "s2", [key] if key else [])
        if key is None or key not in held:
            return None
        corpus = Paper.model_validate_json(held[key][0]).ids.corpus_id
        rows = bulk_table.citations(self._con, int(corpus)) if corpus else None
        if rows is None:
            return None
        target = str(ids.parse_any_id(lookup))
        named = [row for row in rows if row[0] is not None]
        references = [
            semanticscholar.parse_reference(_reference_item(*row), target, position)
            for position, row in enumerate(named)
        ]
        return HeldList(references, len(rows) - len(named), self._label("s2-citations"))

    def labels(self, source: str, wanted: Sequence[str]) -> dict[str, str]:
        """``"bulk <release>"`` for each ID in ``wanted`` the bulk tables hold a record of."""
        held = self.records(source, wanted)
        label = self._label(_KINDS[source])
        return {raw: label for raw in held}

    def _label(self, kind: str) -> str:
        return f"bulk {bulk_table.newest_release(self._con, kind)}"


# A source -> the kind of file its records come from.
_KINDS = {"openalex": "openalex-works", "s2": "s2-papers", "arxiv": "arxiv-metadata"}


@dataclasses.dataclass(frozen=True)
class HeldList:
    """An S2 reference list the bulk tables hold, and the citations in it that name no paper."""

    references: list[Reference]
    unidentified: int
    label: str  # "bulk <release>"


def _typed(raw: str) -> tuple[str, str] | None:
    """An ID as the fetch functions take it (``W…``, a DOI, ``s2:…``, ``CorpusId:…``) ->
    (scheme, value) as ``bulk_ids`` holds it."""
    text = raw.strip()
    head, _, rest = text.partition(":")
    if head.lower() == "corpusid" and rest:
        text = f"corpusid:{rest}"
    try:
        parsed = ids.parse_any_id(text)
    except InvalidIdError:
        return None
    return parsed.scheme.value, parsed.value


def _paper(paper: str, abstract: str | None) -> Paper:
    record = Paper.model_validate_json(paper)
    return record.model_copy(update={"abstract": abstract}) if abstract else record


def _reference_item(
    cited_corpus: int | None,
    influential: bool | None,
    contexts: list[str] | None,
    intents: list[str] | None,
    paper: str | None,
    abstract: str | None,
) -> dict[str, Any]:
    """A Datasets citation -> the Graph API's reference item, for ``parse_reference``."""
    cited: dict[str, Any] = {"paperId": None, "corpusId": cited_corpus}
    if paper is not None:
        record = Paper.model_validate_json(paper)
        day = record.publication_date if record.date_precision is DatePrecision.DAY else None
        cited = {
            "paperId": record.ids.s2,
            "corpusId": cited_corpus,
            "externalIds": {"DOI": record.ids.doi, "ArXiv": record.ids.arxiv},
            "title": record.title,
            "year": record.year,
            "publicationDate": day.isoformat() if day else None,
        }
    return {
        "citedPaper": cited,
        "contexts": contexts,
        "intents": intents,
        "isInfluential": influential,
    }
