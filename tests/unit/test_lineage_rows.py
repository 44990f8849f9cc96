"""A reference's texts come from the records of the IDs the target's own list gave, so that a
duplicate fetched beside it (a variant title, shared DOI) cannot change what its brief reads."""

from __future__ import annotations

import duckdb

from inspire_build import warehouse
from inspire_build.classify import ResolvedReference, ResolvedWork, TargetLineage
from inspire_build.ids import PaperId, Scheme
from inspire_build.lineage import Match, Mention, MergedReference
from inspire_build.lineage_rows import _pick, write
from inspire_build.models import (
    Paper,
    PaperIds,
    ReferenceStatus,
    Source,
    TargetStatus,
)

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


# --- one write for many targets leaves what writing them one after another would -----------


def _result(requested: str, paper_id: str, titles: list[str], reason: str) -> TargetLineage:
    work = ResolvedWork(ids={PaperId(Scheme.OPENALEX, paper_id)}, paper_id=paper_id)
    references = [
        ResolvedReference(
            MergedReference([Match(Mention(Source.S2, i, title=title), None, None)]),
            None,
            ReferenceStatus.UNRESOLVED,
            "no ID",
            None,
        )
        for i, title in enumerate(titles)
    ]
    return TargetLineage(requested, work, None, None, references, TargetStatus.CANDIDATE, reason)


def _written(results: list[TargetLineage]) -> duckdb.DuckDBPyConnection:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con)
    write(con, [_result("W9", "W9", ["old"], "before"), _result("W5", "W5", [], "before")], "s", [])
    write(con, results, "s", [])
    return con


def test_a_target_given_twice_keeps_the_rows_of_its_last_lineage() -> None:
    con = _written([_result("W1", "W1", ["a", "b"], "first"), _result("W1", "W1", ["c"], "last")])
    rows = con.execute("SELECT ref_key, title FROM \"references\" WHERE target_id = 'W1'")
    assert rows.fetchall() == [("0000", "c")]
    seen = con.execute("SELECT references_seen FROM gold_completeness WHERE target_id = 'W1'")
    assert seen.fetchall() == [(1,)]
    assert con.execute("SELECT reason FROM targets WHERE paper_id = 'W1'").fetchall() == [("last",)]


def test_a_selection_row_moved_away_stays_gone_unless_written_again_after() -> None:
    moves = [
        _result("W9", "W1", [], "W9 is W1"),  # the selection's W9 row moves to W1
        _result("W1", "W2", [], "W1 is W2"),  # and W1's row, just written, to W2
    ]
    con = _written(moves)
    rows = con.execute("SELECT paper_id, reason FROM targets ORDER BY paper_id").fetchall()
    assert rows == [("W2", "W1 is W2"), ("W5", "before")]
    con = _written([*moves, _result("W5", "W1", [], "W5 is W1")])  # W1 again, after its deletion
    rows = con.execute("SELECT paper_id, reason FROM targets ORDER BY paper_id").fetchall()
    assert rows == [("W1", "W5 is W1"), ("W2", "W1 is W2")]
    kept = con.execute('SELECT DISTINCT target_id FROM "references" ORDER BY 1').fetchall()
    assert kept == [("W9",)]  # a target's reference rows go only when it is written again
