"""A Sandbox world as search corpus records: every record of the world, distractors included,
with the dates and IDs each emulated API gives it. ``inspire corpus build --world`` and the tests
and benchmarks that search a world read it here, so the search environment (``env/``) never
imports the emulator."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from inspire_build import cutoff, ids
from inspire_build.env.corpus import CorpusRecord
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import DatePrecision, Source
from inspire_build.sandbox.world import Record


def from_world(records: Iterable[object]) -> list[CorpusRecord]:
    """Every record of a Sandbox world, with the dates and links each API would give.

    S2 links a published version to its preprint's arXiv ID, which is what merges the twins.
    """
    found = []
    for record in records:
        if not isinstance(record, Record):
            raise TypeError("from_world takes sandbox world records")
        typed = [
            PaperId(Scheme.OPENALEX, record.openalex),
            PaperId(Scheme.S2, record.s2),
            PaperId(Scheme.CORPUS_ID, str(record.corpus_id)),
            ids.parse_any_id(record.doi),  # an arXiv DataCite DOI parses as the arXiv ID
        ]
        typed += [PaperId(Scheme.ARXIV, a) for a in (record.arxiv, record.s2_arxiv) if a]
        dates = [cutoff.SourceDate(Source.OPENALEX, dt.date.fromisoformat(record.publication_date))]
        if record.arxiv_versions:
            v1 = dt.date.fromisoformat(record.arxiv_versions[0][1])
            dates.append(cutoff.SourceDate(Source.ARXIV, v1))
        if record.s2_publication_date:
            dates.append(
                cutoff.SourceDate(Source.S2, dt.date.fromisoformat(record.s2_publication_date))
            )
        elif record.s2_year:
            dates.append(
                cutoff.SourceDate(Source.S2, dt.date(record.s2_year, 1, 1), DatePrecision.YEAR)
            )
        found.append(
            CorpusRecord(
                tuple(dict.fromkeys(typed)),
                record.title,
                record.abstract,
                int(record.publication_date[:4]),
                tuple(record.authors),
                tuple(dates),
            )
        )
    return found
