"""Which distribution a file is and which release it holds, from its path alone; and the
files a set of paths names, in release order."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from inspire_build import bulk
from inspire_build.bulk import Kind, expand, kind_of, release_of
from inspire_build.errors import InputError


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
