"""One published cutoff per target (SPEC §9): the pure rule, its use by split versions and the
lineage's offsets, and migration 0019's backfill of the cutoffs older versions published."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from inspire_build import boundary, boundary_store, splits, warehouse
from inspire_build.cutoff import PublishedCutoff, kept_offsets, version_cutoffs
from inspire_build.errors import WarehouseError
from tests.unit.test_splits import KEY, accept, settings

D = dt.date
JUNE = D(2025, 6, 1)  # first public; its exact cutoff is 1 March 2025


def test_a_published_offset_is_kept_whatever_the_draw() -> None:
    offsets = kept_offsets({"a": PublishedCutoff(9, 30, D(2025, 2, 20), "v1")}, lambda t: 0)
    assert offsets("a") == 9 and offsets("b") == 0


def test_a_version_keeps_earlier_cutoffs_and_states_the_widest_jitter() -> None:
    published = {"a": PublishedCutoff(9, 30, D(2025, 2, 20), "v1")}
    held = {"a": (JUNE, D(2025, 2, 20)), "b": (D(2025, 5, 31), D(2025, 2, 28))}
    found = version_cutoffs("v2", held, published, jitter_setting=0)
    # b's cutoff is exact (31 May -> 28 Feb): offset 0 under the setting 0
    assert found.first == {"b": PublishedCutoff(0, 0, D(2025, 2, 28), "v2")}
    assert (found.jitter_days, found.kept, found.overridden, found.moved) == (30, 1, 1, 0)


def test_the_version_that_published_a_cutoff_first_does_not_keep_it_from_itself() -> None:
    published = {"a": PublishedCutoff(9, 30, D(2025, 2, 20), "v1")}
    found = version_cutoffs("v1", {"a": (JUNE, D(2025, 2, 20))}, published, jitter_setting=30)
    assert found.kept == 0 and found.overridden == 0 and found.jitter_days == 30
    assert found.first == published


def test_a_kept_cutoff_under_the_same_jitter_is_not_an_override_but_a_moved_one_is_said() -> None:
    published = {"a": PublishedCutoff(9, 30, D(2025, 2, 20), "v1")}
    # the target's first public date moved 2 days earlier: the same offset, 2 days earlier
    found = version_cutoffs("v2", {"a": (D(2025, 5, 30), D(2025, 2, 18))}, published, 30)
    assert (found.kept, found.overridden, found.moved, found.first) == (1, 0, 1, {})


def test_an_offset_wider_than_the_setting_widens_the_stated_jitter() -> None:
    # a lineage drawn under jitter 30 written by a build set to 7: the bound must hold it
    found = version_cutoffs("v1", {"a": (JUNE, D(2025, 2, 1))}, {}, jitter_setting=7)
    assert found.first["a"].offset_days == 28 and found.jitter_days == 28


def test_a_cutoff_after_the_exact_one_is_refused() -> None:
    with pytest.raises(WarehouseError, match="after its exact cutoff 2025-03-01"):
        version_cutoffs("v1", {"a": (JUNE, D(2025, 3, 2))}, {}, jitter_setting=30)


def _cutoff(con: duckdb.DuckDBPyConnection, target: str, day: dt.date) -> None:
    """Set a target's lineage cutoff (first public 1 June 2025) as a lineage would have."""
    warehouse.update_where(con, "targets", {"cutoff_date": day}, {"paper_id": target})


def test_a_rebuild_at_jitter_0_keeps_the_cutoff_and_says_why(
    con: duckdb.DuckDBPyConnection,
) -> None:
    accept(con, "openalex:W1", "A brief about one problem.")
    _cutoff(con, "openalex:W1", D(2025, 2, 20))  # 9 days before the exact cutoff
    first = splits.write_version(con, settings(), "eval")
    assert first.notes == () and first.cutoffs_kept == 0
    offsets = boundary_store.cutoff_offsets(con, settings(cutoff_jitter_days=0))
    assert offsets("openalex:W1") == 9 and offsets("openalex:W2") == 0
    accept(con, "openalex:W2", "A brief about another problem.")  # exact: jitter 0 drew 0
    second = splits.write_version(con, settings(cutoff_jitter_days=0), "eval")
    row = con.execute(
        "SELECT cutoff_jitter_days, cutoff_jitter_setting, cutoffs_kept FROM split_versions "
        "WHERE version_id = ?",
        [second.version_id],
    ).fetchone()
    assert row == (30, 0, 1)
    stored = con.execute(
        "SELECT target_id, offset_days, jitter_days, cutoff_date, version_id "
        "FROM published_cutoffs ORDER BY 1"
    ).fetchall()
    assert stored == [
        ("openalex:W1", 9, 30, D(2025, 2, 20), first.version_id),
        ("openalex:W2", 0, 0, D(2025, 3, 1), second.version_id),
    ]
    assert len(second.notes) == 1
    assert "1 of 2 cutoffs were first published by an earlier version" in second.notes[0]
    assert "INSPIRE_CUTOFF_JITTER_DAYS=0 did not apply" in second.notes[0]
    again = splits.write_version(con, settings(cutoff_jitter_days=0), "eval")
    assert again.version_id == second.version_id and again.notes == second.notes


def test_the_lineage_draws_a_target_no_version_published(con: duckdb.DuckDBPyConnection) -> None:
    offsets = boundary_store.cutoff_offsets(con, settings())
    expected = boundary.cutoff_offset(bytes.fromhex(KEY), "openalex:W7", 30)
    assert offsets("openalex:W7") == expected


def _version(con: duckdb.DuckDBPyConnection, version: str, day: int, jitter: int | None) -> None:
    con.execute(
        "INSERT INTO split_versions (version_id, split, config_hash, code_version, "
        "prompt_hashes, models, counts, created_at, cutoff_jitter_days) "
        "VALUES (?, 'eval', 'h', '0.1.0', '{}', '{}', '{}', ?, ?)",
        [version, dt.datetime(2026, 1, day, tzinfo=dt.UTC), jitter],
    )


def test_the_migration_stores_the_cutoff_the_earliest_version_published() -> None:
    con = warehouse.connect(":memory:")
    migrations = warehouse.load_migrations()
    before = [m for m in migrations if m.name < "0019"]
    warehouse.migrate(con, before)
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for target, day in (("T", JUNE), ("U", D(2025, 5, 31))):
        con.execute(
            "INSERT INTO targets (split, paper_id, first_public_date, status, updated_at) "
            "VALUES ('eval', ?, ?, 'accepted', ?)",
            [target, day, now],
        )
    _version(con, "eval-old", 1, None)  # before the jitter: exact cutoffs
    _version(con, "eval-30", 2, 30)
    _version(con, "eval-0", 3, 0)
    for version, target, cutoff in (
        ("eval-old", "U", D(2025, 2, 28)),
        ("eval-30", "T", D(2025, 2, 20)),
        ("eval-30", "U", D(2025, 2, 10)),
        ("eval-0", "T", D(2025, 3, 1)),
    ):
        con.execute(
            "INSERT INTO instances VALUES (?, ?, ?, 'b', 'brief', ?, 1)",
            [version, f"{version}-{target}", target, cutoff],
        )
    warehouse.migrate(con)
    stored = con.execute(
        "SELECT target_id, offset_days, jitter_days, cutoff_date, version_id "
        "FROM published_cutoffs ORDER BY 1"
    ).fetchall()
    con.close()
    assert stored == [
        ("T", 9, 30, D(2025, 2, 20), "eval-30"),
        ("U", 0, 0, D(2025, 2, 28), "eval-old"),
    ]
