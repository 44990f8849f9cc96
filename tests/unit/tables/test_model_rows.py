"""The domain models are the contract of the tables written from them: every column of
``targets``, ``briefs``, ``grades``, ``split_versions`` and ``instances`` (as a freshly migrated
warehouse's information_schema lists it) is a field of its model and every stored field a
column, and what is written from a model reads back as the same model."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest
from pydantic import ValidationError

from inspire_build import boundary_store, splits, warehouse
from inspire_build.models import (
    Brief,
    BriefStatus,
    Grade,
    Role,
    Target,
    TargetOutcome,
    TargetStatus,
    Tier,
)
from inspire_build.tables import gold as gold_table
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import model_rows, versions
from tests.unit.test_splits import accept, settings

NOW = dt.datetime(2026, 1, 1, 12, 30, 15, 123456, tzinfo=dt.UTC)


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [str(name) for (name,) in rows]


def gaps(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[list[str], list[str]]]:
    """table -> (its columns no field holds, its model's stored fields no column holds), for
    each table that has either."""
    found = {}
    for table, model in model_rows.TABLE_MODELS.items():
        have, fields = columns(con, table), model_rows.stored_fields(model)
        unheld = [c for c in have if c not in fields]
        unstored = [f for f in fields if f not in have]
        if unheld or unstored:
            found[table] = (unheld, unstored)
    return found


def migrated(*extra: warehouse.Migration) -> duckdb.DuckDBPyConnection:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con, [*warehouse.load_migrations(), *extra])
    return con


def test_every_column_of_the_model_tables_is_a_field_of_its_model() -> None:
    con = migrated()
    try:
        assert all(columns(con, table) for table in model_rows.TABLE_MODELS)
        assert gaps(con) == {}
    finally:
        con.close()


@pytest.mark.parametrize("table", sorted(model_rows.TABLE_MODELS))
def test_a_column_a_migration_adds_without_its_field_is_caught(table: str) -> None:
    scratch = warehouse.Migration(
        "9999_scratch", f"ALTER TABLE {table} ADD COLUMN scratch_column VARCHAR"
    )
    con = migrated(scratch)
    try:
        assert gaps(con) == {table: (["scratch_column"], [])}
    finally:
        con.close()


def test_a_reader_refuses_a_column_its_model_lacks() -> None:
    """The readers select every column, so a column without its field fails, never drops."""
    con = migrated(
        warehouse.Migration(
            "9999_scratch", "ALTER TABLE split_versions ADD COLUMN scratch_column VARCHAR"
        )
    )
    try:
        accept(con, "openalex:W1", "A brief about one problem.")
        made = splits.write_version(con, settings(), "eval")
        with pytest.raises(ValidationError, match="scratch_column"):
            versions.split_version(con, made.version_id)
    finally:
        con.close()


def test_a_version_written_and_read_back_equals_its_model(
    con: duckdb.DuckDBPyConnection,
) -> None:
    for n in (1, 2):
        accept(con, f"openalex:W{n}", f"A brief about problem {n}.")
    made = splits.write_version(con, settings(), "eval", label="round-trip")
    assert made.notes == () and made.counts["instances"] == 2
    assert versions.split_version(con, made.version_id) == made
    key = boundary_store.instance_key(con, settings())
    written = [
        splits.instance_rows(
            key,
            made.version_id,
            f"openalex:W{n}",
            (f"b-openalex:W{n}-A brief about problem {n}.", f"A brief about problem {n}."),
            dt.date(2025, 3, 1),
            [(f"openalex:W{n}-ref", 2, "component")],
        )[0]
        for n in (1, 2)
    ]
    found = versions.instances(con, made.version_id)
    assert found == sorted(written, key=lambda i: i.instance_id)
    again = splits.write_version(con, settings(), "eval", label="renamed")
    stored = versions.split_version(con, made.version_id)
    assert stored is not None and stored.written_at == again.written_at
    assert again == stored.model_copy(update={"notes": again.notes}) and again.label == "round-trip"
    assert stored.model_copy(update={"written_at": made.written_at}) == made
    assert versions.instances(con, made.version_id) == found
    assert versions.split_version(con, "eval-000000000000") is None


def test_targets_briefs_and_grades_written_and_read_back_equal_their_models(
    con: duckdb.DuckDBPyConnection,
) -> None:
    target = Target(
        split="eval",
        paper_id="openalex:W1",
        title="A title",
        abstract="An abstract.",
        first_public_date=dt.date(2025, 6, 1),
        cutoff_date=dt.date(2025, 3, 1),
        status=TargetStatus.ACCEPTED,
        reason="accepted",
        outcome=TargetOutcome.ACCEPTED,
        source_problems="s2: no references",
        updated_at=NOW,
    )
    lineage_table.write_targets(con, [target])
    assert lineage_table.targets(con, "eval") == [target]
    briefs = [
        Brief(
            brief_id=f"b{attempt}",
            target_id="openalex:W1",
            attempt=attempt,
            text=text,
            prompt_name="brief",
            prompt_hash="h",
            backend="rules",
            model="rules-v1",
            status=status,
            reason="why",
            created_at=NOW,
        )
        for attempt, text, status in ((1, "", BriefStatus.REJECTED), (2, "A brief.", None))
    ]
    gold_table.replace_briefs(con, "openalex:W1", briefs)
    assert gold_table.target_briefs(con, "openalex:W1") == briefs
    assert con.execute("SELECT word_count FROM briefs ORDER BY attempt").fetchall() == [(0,), (2,)]
    # a rerun that rewrote attempt 2: its findings go with it, attempt 1's (kept) stay
    for brief in briefs:
        con.execute(
            "INSERT INTO audit_findings VALUES (?, 'lexical', true, 'none', 'clean')",
            [brief.brief_id],
        )
    redrafted = [briefs[0], briefs[1].model_copy(update={"brief_id": "b2x", "text": "Another."})]
    gold_table.replace_briefs(con, "openalex:W1", redrafted)
    findings = con.execute("SELECT brief_id FROM audit_findings").fetchall()
    assert findings == [(briefs[0].brief_id,)]
    grades = [
        Grade(
            target_id="openalex:W1",
            paper_id=f"openalex:W{10 + tier}",
            tier=tier,
            role=None if tier is Tier.T0 else Role.COMPONENT,
            rationale="why",
            backend="rules",
            model="rules-v1",
            prompt_hash="h",
        )
        for tier in Tier
    ]
    gold_table.replace_grades(con, "openalex:W1", grades)
    assert gold_table.target_grades(con, "openalex:W1") == grades
    gold_table.replace_grades(con, "openalex:W1", grades[:1])  # a rerun replaces its own rows
    assert gold_table.target_grades(con, "openalex:W1") == grades[:1]
