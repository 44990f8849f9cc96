"""docs/reference.md is generated from the code (``make docs``): it is current, and it holds every
setting, every table, view and column, and every command."""

from __future__ import annotations

import difflib
import typing
from pathlib import Path
from typing import Literal

import duckdb
import pytest
import typer.main
from pydantic import SecretStr

from inspire_build import reference
from inspire_build.cli import app
from inspire_build.config import Price, Settings
from inspire_build.tables import catalog


@pytest.fixture(scope="module")
def rendered() -> str:
    return reference.render()


def test_reference_is_current(rendered: str) -> None:
    committed = reference.REFERENCE.read_text(encoding="utf-8")
    if committed != rendered:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(keepends=True),
                    rendered.splitlines(keepends=True),
                    "docs/reference.md (committed)",
                    "docs/reference.md (rendered)",
                    n=1,
                )
            )[:40]
        )
        pytest.fail(f"docs/reference.md is stale: run make docs\n{diff}")


def test_every_setting_is_there(rendered: str) -> None:
    for name in Settings.model_fields:
        assert f"| `INSPIRE_{name.upper()}` |" in rendered, name


def test_every_setting_is_described_and_none_by_a_word_it_shares() -> None:
    """36 settings had no description, and INSPIRE_WAREHOUSE was sent to another setting's
    note for holding the word "warehouse"."""
    rows = [line for line in reference.render().splitlines() if line.startswith("| `")]
    assert [row for row in rows if row.endswith("| — |")] == []
    described = {"audit_retrieval_scope": "every paper of the warehouse", "chunk_size": "a x_y"}
    assert reference._mentioned("warehouse", described) == "—"
    assert reference._mentioned("x_y", described) == "See `INSPIRE_CHUNK_SIZE`."


def test_every_table_view_and_column_is_there_with_its_comment(
    rendered: str, con: duckdb.DuckDBPyConnection
) -> None:
    relations = catalog.relations(con)  # of the migrated warehouse conftest's con is
    sections = rendered.split("\n### ")
    for relation in relations:
        heading = f"`{relation.name}` ({relation.kind})\n"
        found = [s for s in sections if s.startswith(heading)]
        assert len(found) == 1, relation.name
        for column in relation.columns:
            assert f"| `{column.name}` | `{column.type}` | " in found[0], (relation.name, column)


def test_every_command_is_there(rendered: str) -> None:
    paths = []

    def walk(command: object, path: str) -> None:
        paths.append(path)
        for name, child in (getattr(command, "commands", None) or {}).items():
            walk(child, f"{path} {name}")

    walk(typer.main.get_command(app), "inspire")
    assert len(paths) > 30
    for path in [*paths, "inspire audit brief"]:
        assert f"\n### `{path}`\n" in rendered, path
    assert "| `--split <str>` | The split to build (train, eval). [default: eval] |" in rendered


def test_write_replaces_the_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "docs" / "reference.md"
    assert reference.write(target) == target
    assert target.read_text(encoding="utf-8") == reference.render()
    assert [p.name for p in target.parent.iterdir()] == ["reference.md"]


SOURCE = '''
class Other:
    ignored: int = 0  # not this class


class Conf:
    """Docstring."""

    # Storage
    path: str = "x"

    # Keys. Never logged.
    key: str | None = None
    other_key: str | None = None  # the second key
    # How long to wait, in seconds,
    # before giving up.
    timeout_s: float = Field(
        default=1.0,  # the default
        gt=0,
    )
    plain: int = 3  # noqa: E501
    ClassVar_like = 4
'''


def test_field_notes_read_sections_blocks_and_line_comments() -> None:
    notes = reference.field_notes(SOURCE, "Conf")
    assert notes == {
        "path": reference.FieldNote("Storage", "", ""),
        "key": reference.FieldNote("Keys", "Never logged.", ""),
        "other_key": reference.FieldNote(None, "", "the second key"),
        "timeout_s": reference.FieldNote(
            None, "", "How long to wait, in seconds, before giving up. the default"
        ),
        "plain": reference.FieldNote(None, "", ""),
    }


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (int, "integer"),
        (int | None, "integer"),
        (SecretStr | None, "secret"),
        (Literal["a", "b"], "`a` or `b`"),
        (dict[str, tuple[float, float]], "JSON object: text -> [number, number]"),
        (dict[str, tuple[Price, Price]], "JSON object: text -> [number >= 0, number >= 0]"),
        (tuple[str, ...], "JSON list of text"),
        (typing.Optional[Path], "path"),  # noqa: UP045  (the older spelling reads the same)
    ],
)
def test_type_names(annotation: object, expected: str) -> None:
    assert reference.type_name(annotation) == expected
