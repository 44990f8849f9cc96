"""sandbox/corpus.py: a world's records as corpus records, with each API's IDs and dates."""

from __future__ import annotations

import datetime as dt

import pytest

from inspire_build.cutoff import SourceDate
from inspire_build.env import corpus
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import DatePrecision, Source
from inspire_build.sandbox.corpus import from_world
from tests.unit.sandbox.conftest import sandbox_record


def test_a_record_gives_every_id_and_every_apis_date() -> None:
    single = sandbox_record("P000001", "Sharded indexes")
    year_only = sandbox_record("P000002", "Graph caches", s2_publication_date=None, s2_year=2024)
    first, second = from_world([single, year_only])
    assert first.ids == (
        PaperId(Scheme.OPENALEX, single.openalex),
        PaperId(Scheme.S2, single.s2),
        PaperId(Scheme.CORPUS_ID, str(single.corpus_id)),
        PaperId(Scheme.DOI, single.doi),
    )
    assert (first.title, first.abstract, first.year, first.authors) == (
        "Sharded indexes",
        "The sharded indexes study.",
        2025,
        ("Ada Abe",),
    )
    day = dt.date(2025, 1, 2)
    assert first.dates == (SourceDate(Source.OPENALEX, day), SourceDate(Source.S2, day))
    assert second.dates == (
        SourceDate(Source.OPENALEX, day),
        SourceDate(Source.S2, dt.date(2024, 1, 1), DatePrecision.YEAR),
    )


def test_a_preprint_and_its_published_twin_merge_into_one_work() -> None:
    preprint = sandbox_record(
        "P000001",
        "Sharded indexes",
        kind="preprint",
        doi="10.48550/arXiv.2401.00001",  # arXiv's DataCite DOI: the arXiv ID itself
        arxiv="2401.00001",
        arxiv_versions=[(1, "2024-01-03"), (2, "2024-05-01")],
        publication_date="2024-01-04",
    )
    published = sandbox_record("P000002", "Sharded indexes", s2_arxiv="2401.00001")
    records = from_world([preprint, published])
    assert records[0].ids.count(PaperId(Scheme.ARXIV, "2401.00001")) == 1  # DOI and ID: one
    assert SourceDate(Source.ARXIV, dt.date(2024, 1, 3)) in records[0].dates
    assert PaperId(Scheme.ARXIV, "2401.00001") in records[1].ids  # S2's link to the preprint
    (work,) = corpus.merge(records, {}, {})
    assert work.records == 2
    assert work.first_public == SourceDate(Source.ARXIV, dt.date(2024, 1, 3))


def test_anything_but_a_world_record_is_refused() -> None:
    with pytest.raises(TypeError, match="sandbox world records"):
        from_world([object()])
