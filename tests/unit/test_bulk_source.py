"""What the bulk source can serve of the S2 citations a filtered ingest keeps: those made by a
paper whose S2 record is on arXiv (a build's targets are), the others counted in the file's row
and kept under --keep-all. The bulk source serves every reference list it can hold whole, and
sends the others to the API; the citations come after the papers whatever the order of the
paths, and papers that arrive later read the filtered citations again."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inspire_build import bulk, warehouse
from inspire_build.bulk_source import BulkSource
from inspire_build.tables import bulk as bulk_table

RELEASE = dt.date(2027, 1, 1)
FILTER = bulk.WorkFilter((17,))
SHA = "{:040x}"


def _paper(corpus: int, arxiv: str | None, doi: str) -> dict[str, Any]:
    external = {"DOI": doi, "CorpusId": str(corpus), **({"ArXiv": arxiv} if arxiv else {})}
    return {
        "corpusid": corpus, "externalids": external,
        "url": f"https://www.semanticscholar.org/paper/{SHA.format(corpus)}",
        "title": f"Paper {corpus}", "authors": [{"authorId": "1", "name": "A. Author"}],
        "venue": "", "year": 2024, "referencecount": 2, "s2fieldsofstudy": None,
        "publicationdate": "2024-03-01",
    }  # fmt: skip


def _citation(citing: int, cited: int | None, context: str) -> dict[str, Any]:
    return {
        "citingcorpusid": str(citing), "citedcorpusid": None if cited is None else str(cited),
        "isinfluential": False, "contexts": [context], "intents": ["methodology"],
    }  # fmt: skip


ON_ARXIV, OFF_ARXIV, CITED = 11, 12, 13  # the citing papers (one on arXiv), and the cited one
CITATIONS = [
    _citation(ON_ARXIV, CITED, "we follow [3]"),
    _citation(ON_ARXIV, None, "as in [9]"),  # names no paper: counted as unidentified
    _citation(OFF_ARXIV, CITED, "see [1]"),
    _citation(OFF_ARXIV, ON_ARXIV, "and [2]"),
    _citation(CITED, ON_ARXIV, "later [4]"),
]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in rows)))
    return path


def _release(root: Path) -> tuple[Path, Path]:
    papers = [
        _paper(ON_ARXIV, "2403.01234", "10.1234/on"),
        _paper(OFF_ARXIV, None, "10.1234/off"),
        _paper(CITED, None, "10.1234/cited"),
    ]
    day = RELEASE.isoformat()
    return (
        _write(root / "s2" / day / "papers" / "part-000.jsonl.gz", papers),
        _write(root / "s2" / day / "citations" / "part-000.jsonl.gz", CITATIONS),
    )


def _connect(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    warehouse.migrate(con)
    return con


def _held(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int | None]]:
    rows = con.execute(
        "SELECT citing_corpus_id, cited_corpus_id FROM bulk_citations ORDER BY 1, 2 NULLS LAST"
    ).fetchall()
    return [(int(a), None if b is None else int(b)) for a, b in rows]


def _file_rows(con: duckdb.DuckDBPyConnection, kind: str) -> tuple[int, int]:
    row = con.execute("SELECT rows, filtered_out FROM bulk_files WHERE kind = ?", [kind]).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_only_the_citations_of_papers_on_arxiv_are_kept_and_the_rest_counted(
    tmp_path: Path,
) -> None:
    papers, citations = _release(tmp_path)
    con = _connect(tmp_path)
    # the citations named first: the ingest reads them after the papers all the same
    done = bulk.ingest(con, [str(citations), str(papers)], works=FILTER)
    assert [r.kind for r in done] == [bulk.Kind.S2_PAPERS, bulk.Kind.S2_CITATIONS]
    assert done[1].rows == 2 and done[1].filtered == 3
    assert _file_rows(con, "s2-citations") == (2, 3)
    assert _held(con) == [(ON_ARXIV, CITED), (ON_ARXIV, None)]
    source = BulkSource(con)
    held = source.references("arXiv:2403.01234")
    assert held is not None and held.unidentified == 1
    [reference] = held.references
    assert reference.ids.corpus_id == str(CITED) and reference.title == f"Paper {CITED}"
    assert reference.contexts == ("we follow [3]",)
    # a paper off arXiv, held but its citations filtered out: its list is the API's to give
    assert source.references("10.1234/off") is None
    assert source.references(f"CorpusId:{CITED}") is None


def test_keep_all_keeps_every_citation_and_reads_a_filtered_file_again(tmp_path: Path) -> None:
    papers, citations = _release(tmp_path)
    con = _connect(tmp_path)
    bulk.ingest(con, [str(tmp_path)], works=FILTER)
    done = bulk.ingest(con, [str(tmp_path)])  # --keep-all: bulk.KEEP_ALL
    assert [(r.kind, r.skipped) for r in done] == [
        (bulk.Kind.S2_PAPERS, True), (bulk.Kind.S2_CITATIONS, False)
    ]  # fmt: skip
    assert _file_rows(con, "s2-citations") == (5, 0)
    assert len(_held(con)) == len(CITATIONS)
    held = BulkSource(con).references("10.1234/off")
    assert held is not None
    assert [r.ids.corpus_id for r in held.references] == [str(ON_ARXIV), str(CITED)]


def test_papers_that_arrive_later_read_the_filtered_citations_again(tmp_path: Path) -> None:
    """Citations ingested before any paper keep none and serve no list; the papers' ingest,
    in a later run that does not name the citations, reads them again after the papers."""
    papers, citations = _release(tmp_path)
    con = _connect(tmp_path)
    bulk.ingest(con, [str(citations)], works=FILTER)
    assert _file_rows(con, "s2-citations") == (0, 5)
    done = bulk.ingest(con, [str(papers)], works=FILTER)
    assert [(r.path, r.kind) for r in done] == [
        (papers, bulk.Kind.S2_PAPERS), (citations, bulk.Kind.S2_CITATIONS)
    ]  # fmt: skip
    assert _file_rows(con, "s2-citations") == (2, 3)
    assert BulkSource(con).references("arXiv:2403.01234") is not None


def test_a_paper_written_after_its_citations_were_filtered_is_asked_of_the_api(
    tmp_path: Path,
) -> None:
    """The filtered citations file is gone when the papers arrive: it cannot be read again, so
    the papers written since are not trusted to have their citations, even on arXiv."""
    papers, citations = _release(tmp_path)
    con = _connect(tmp_path)
    bulk.ingest(con, [str(citations)], works=FILTER)
    citations.unlink()
    bulk.ingest(con, [str(papers)], works=FILTER)
    assert bulk_table.citations(con, ON_ARXIV) is None
    assert BulkSource(con).references("arXiv:2403.01234") is None


def test_a_changed_papers_file_reads_the_citations_again_on_a_rerun(tmp_path: Path) -> None:
    """A rerun that finds the papers file changed (a paper now on arXiv) ingests it, then the
    citations file it had filtered, though that one is unchanged."""
    papers, citations = _release(tmp_path)
    con = _connect(tmp_path)
    bulk.ingest(con, [str(tmp_path)], works=FILTER)
    again = [_paper(n, f"2403.0{n}00", f"10.1234/{n}") for n in (ON_ARXIV, OFF_ARXIV, CITED)]
    _write(papers, again)
    os.utime(papers, ns=(1, 1))
    done = bulk.ingest(con, [str(tmp_path)], works=FILTER)
    assert [r.skipped for r in done] == [False, False]
    assert _file_rows(con, "s2-citations") == (5, 0)
    assert BulkSource(con).references(f"arXiv:2403.0{OFF_ARXIV}00") is not None


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_s2_papers_on_arxiv_are_marked_whatever_the_jobs(tmp_path: Path, jobs: int) -> None:
    papers, _ = _release(tmp_path)
    con = _connect(tmp_path)
    bulk.ingest(con, [str(papers)], works=FILTER, jobs=jobs)
    rows = con.execute(
        "SELECT record_id, on_arxiv FROM bulk_records WHERE source = 's2' ORDER BY 1"
    ).fetchall()
    assert rows == [(str(ON_ARXIV), True), (str(OFF_ARXIV), False), (str(CITED), False)]
