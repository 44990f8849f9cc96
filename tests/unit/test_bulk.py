"""Which distribution a file is and which release it holds, from its path alone; and the
files a set of paths names, in release order."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pytest

from inspire_build import bulk, warehouse
from inspire_build.bulk import Kind, expand, kind_of, release_of
from inspire_build.errors import DataFileError, InputError
from inspire_build.models import Paper
from inspire_build.tables import bulk as bulk_table


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("snap/data/works/updated_date=2024-01-31/part_000.gz", Kind.OPENALEX_WORKS),
        ("x/updated_date=2024-01-31/part_000.gz", Kind.OPENALEX_WORKS),
        ("s2/2023-12-19/papers/papers-sample.jsonl", Kind.S2_PAPERS),
        ("s2/2023-12-19/paper-ids/part-0.jsonl.gz", Kind.S2_PAPER_IDS),
        ("downloads/abstracts-0.jsonl.gz", Kind.S2_ABSTRACTS),
        ("downloads/paper-ids-3.gz", Kind.S2_PAPER_IDS),  # not "papers": the longer name first
    ],
)
def test_the_kind_comes_from_the_nearest_folder_or_the_file_name(path: str, kind: Kind) -> None:
    assert kind_of(Path(path)) is kind


def test_a_file_nothing_names_is_refused_with_the_names_that_would_do() -> None:
    with pytest.raises(InputError, match="updated_date=YYYY-MM-DD"):
        kind_of(Path("downloads/part_000.gz"))


def test_the_release_is_the_nearest_dated_folder() -> None:
    assert release_of(Path("w/updated_date=2024-01-31/part_0.gz")) == dt.date(2024, 1, 31)
    assert release_of(Path("2023-12-19/papers/p.jsonl")) == dt.date(2023, 12, 19)
    assert release_of(Path("papers/p-2023-12-19.jsonl")) is None  # a file name is no release


def test_expand_orders_by_release_then_path(tmp_path: Path) -> None:
    for name in ("updated_date=2024-02-01/part_000.gz", "updated_date=2024-01-01/part_001.gz",
                 "updated_date=2024-01-01/part_000.gz", "updated_date=2024-01-01/.tmp.gz",
                 "updated_date=2024-01-01/manifest"):  # fmt: skip
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    found = [str(p.relative_to(tmp_path)) for p in expand([str(tmp_path)])]
    assert found == [
        "updated_date=2024-01-01/part_000.gz",
        "updated_date=2024-01-01/part_001.gz",
        "updated_date=2024-02-01/part_000.gz",
    ]
    assert len(expand([str(tmp_path / "*" / "part_000.gz")])) == 2
    with pytest.raises(InputError, match="no file matches"):
        expand([str(tmp_path / "*.parquet")])
    with pytest.raises(InputError, match="no such file"):
        expand([str(tmp_path / "missing")])
    with pytest.raises(InputError, match="/dev/zero: neither a file nor a folder"):
        expand(["/dev/zero"])


def test_work_facets_read_the_filter_fields_as_openalex_does() -> None:
    row = {
        "id": '"https://openalex.org/W1"',
        "publication_date": '"2025-03-04"',
        "primary_topic": '{"field": {"id": "https://openalex.org/fields/17"}}',
        "locations": '[{"source": null}, {"source": {"id": "https://openalex.org/S4306400194"}}]',
        "referenced_works_count": "12",
    }
    paper = bulk.openalex_paper(row)
    assert bulk.work_facets(row, paper) == {
        "primary_field": 17,
        "on_arxiv": True,
        "published": "2025-03-04",
        "listed_references": 12,
    }
    bare = {"id": '"https://openalex.org/W2"', "locations": '"not a list"'}
    assert bulk.work_facets(bare, bulk.openalex_paper(bare)) == {
        "primary_field": None,
        "on_arxiv": False,
        "published": None,
        "listed_references": None,
    }


def _gz(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode()))
    return path


@pytest.mark.parametrize("kind", ["works", "papers", "citations"])
def test_a_malformed_line_or_a_cut_gzip_refuses_its_file_whole(tmp_path: Path, kind: str) -> None:
    """Each file is decompressed once, into the ingest's temporary folder, and loaded from
    there (the S2 papers staged there in SQL): a line DuckDB cannot read, or a gzip file cut
    short, still refuses the file by its own name, with nothing of it written and the files
    before it kept."""
    if kind == "works":
        folder = tmp_path / "works" / "updated_date=2024-01-31"
        good = [json.dumps({"id": f"https://openalex.org/W{n}"}) for n in range(1, 4)]
    elif kind == "papers":
        folder = tmp_path / "2024-01-31" / "papers"
        good = [json.dumps(_s2_line(n)) for n in range(1, 4)]
    else:
        folder = tmp_path / "2024-01-31" / "citations"
        good = [json.dumps({"citingcorpusid": n, "citedcorpusid": n + 1}) for n in range(1, 4)]
    con = warehouse.connect(":memory:")
    warehouse.migrate(con)
    _gz(folder / "part_000.gz", good)
    bad = _gz(folder / "part_001.gz", [*good[:2], good[2][:-3], *good])
    with pytest.raises(DataFileError, match="part_001.gz: cannot (ingest|read) it") as refused:
        bulk.ingest(con, [str(tmp_path)])
    assert "inspire-bulk-" not in str(refused.value)  # named as the user knows it, not the copy
    assert [Path(p).name for p, *_ in bulk_table.files(con)] == ["part_000.gz"]
    whole = gzip.compress("".join(line + "\n" for line in good).encode())
    bad.write_bytes(whole[:-5])  # every line there, the gzip trailer not
    with pytest.raises(DataFileError, match="part_001.gz: the gzip file is truncated"):
        bulk.ingest(con, [str(tmp_path)])
    bad.write_bytes(whole)
    done = bulk.ingest(con, [str(tmp_path)])
    assert [(r.path.name, r.rows, r.skipped) for r in done] == [
        ("part_000.gz", 3, True), ("part_001.gz", 3, False)
    ]  # fmt: skip


def _s2_line(corpus: int, **changes: object) -> dict[str, object]:
    line: dict[str, object] = {
        "corpusid": corpus, "externalids": {"DOI": f"10.1000/p{corpus}", "CorpusId": str(corpus)},
        "url": f"https://www.semanticscholar.org/paper/{corpus:040x}", "title": f"Paper {corpus}",
        "authors": [{"authorId": "1", "name": "A. Author"}], "venue": "V", "year": 2020,
        "referencecount": 3, "s2fieldsofstudy": None, "publicationdate": "2020-05-01",
    }  # fmt: skip
    return {**line, **changes}


@pytest.mark.parametrize("jobs", [1, 2])
def test_s2_papers_are_staged_ahead_and_those_sql_does_not_read_are_parsed_and_counted(
    tmp_path: Path, jobs: int
) -> None:
    """The S2 papers are staged in SQL beside the file being written (a thread, or a worker
    process): every paper is held as ``s2_paper`` gives it, and those SQL does not read (here
    a corpus ID written as a string) are parsed by it and counted in the file's result."""
    lines = [_s2_line(1), _s2_line(2, corpusid="2"), _s2_line(3, authors=["Plain Name"])]
    _gz(tmp_path / "2024-01-31" / "papers" / "part-000.jsonl.gz", [json.dumps(x) for x in lines])
    con = warehouse.connect(":memory:")
    warehouse.migrate(con)
    [done] = bulk.ingest(con, [str(tmp_path)], jobs=jobs)
    assert (done.rows, done.in_python) == (3, 1)
    held = con.execute(
        "SELECT paper FROM bulk_records WHERE source = 's2' ORDER BY record_id"
    ).fetchall()
    expected = [bulk.s2_paper({k: json.dumps(v) for k, v in x.items()}) for x in lines]
    assert [Paper.model_validate_json(p) for (p,) in held] == expected
