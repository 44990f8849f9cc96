"""A reference's texts come from the records of the IDs the target's own list gave, so that a
duplicate fetched beside it (a variant title, shared DOI) cannot change what its brief reads."""

from __future__ import annotations

from inspire_build.classify import ResolvedWork
from inspire_build.ids import PaperId, Scheme
from inspire_build.lineage_rows import _pick
from inspire_build.models import Paper, PaperIds, Source

DOI = "10.5555/x.1"


def _work() -> ResolvedWork:
    work = ResolvedWork(ids=set())
    work.add_records(
        [
            Paper(source=Source.OPENALEX, ids=PaperIds(openalex="W1", doi=DOI), title="Duplicate"),
            Paper(source=Source.OPENALEX, ids=PaperIds(openalex="W2", doi=DOI), title="Cited"),
            Paper(source=Source.S2, ids=PaperIds(s2="a" * 40, doi=DOI), abstract="From S2"),
        ]
    )
    return work


def test_the_cited_records_text_comes_first_not_a_duplicates_sharing_its_doi() -> None:
    cited = [PaperId(Scheme.OPENALEX, "W2"), PaperId(Scheme.DOI, DOI)]
    assert _pick(_work(), "title", cited) == "Cited"
    assert _pick(_work(), "title") == "Duplicate"  # without a list: the first record in order


def test_a_text_the_cited_records_lack_comes_from_the_works_other_records() -> None:
    assert _pick(_work(), "abstract", [PaperId(Scheme.OPENALEX, "W2")]) == "From S2"
    assert _pick(None, "title", [PaperId(Scheme.OPENALEX, "W2")]) is None
