"""tables/catalog.py and migration 0025: the warehouse says what it holds. Every table and view
has a comment, and so does every column of every table and view in ``duckdb_columns()`` (DuckDB
takes comments on view columns too); a view's catalog columns are the ones a query of it
returns, so none escapes the check. ``instance_targets`` gives each instance its split and
target under one name."""

from __future__ import annotations

import datetime as dt

import duckdb

from inspire_build import warehouse
from inspire_build.tables import catalog

# The tables and views that hold targets' identities, gold, or the boundary's secrets: their
# comments start "Private". A new one is added here on purpose, never by accident.
PRIVATE = {
    "audit_findings",
    "briefs",
    "eval_latest",
    "gold_completeness",
    "grades",
    "instance_key",
    "instance_targets",
    "instances",
    "llm_call_uses",
    "llm_calls",
    "llm_ledger",
    "published_cutoffs",
    "qrels",
    "raw_http",
    "references",
    "review_samples",
    "reviews",
    "targets",
    "train_latest",
    "version_findings",
    "version_grades",
}


def uncommented(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every table, view and column without a comment, and every view column a query returns
    that the catalog does not list (a ``SELECT *`` view created before its table grew)."""
    missing = []
    for relation in catalog.relations(con):
        if not (relation.comment or "").strip():
            missing.append(relation.name)
        missing += [
            f"{relation.name}.{column.name}"
            for column in relation.columns
            if not (column.comment or "").strip()
        ]
        if relation.kind == "view":
            listed = {column.name for column in relation.columns}
            missing += [
                f"{relation.name}.{name} (not in the catalog)"
                for name in catalog.view_columns(con, relation.name)
                if name not in listed
            ]
    return missing


def test_every_table_view_and_column_has_a_comment(con: duckdb.DuckDBPyConnection) -> None:
    missing = uncommented(con)
    assert not missing, (
        f"no comment on {missing}: add COMMENT ON TABLE/VIEW/COLUMN in a new migration (a "
        "rebuilt table or a replaced view loses its comments), then run `make docs`"
    )
    relations = catalog.relations(con)
    assert {r.kind for r in relations} == {"table", "view"}
    assert sum(len(r.columns) for r in relations) > 300  # every column was looked at


def test_a_relation_or_column_without_a_comment_is_caught(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE planted (a INTEGER, b VARCHAR)")
    con.execute("COMMENT ON TABLE planted IS 'A planted table.'")
    con.execute("COMMENT ON COLUMN planted.a IS 'Commented.'")
    con.execute("CREATE VIEW planted_view AS SELECT * FROM planted")
    con.execute("COMMENT ON VIEW planted_view IS 'A planted view.'")
    con.execute("COMMENT ON COLUMN planted_view.a IS 'Commented.'")
    con.execute("COMMENT ON COLUMN planted_view.b IS 'Commented.'")
    con.execute("ALTER TABLE planted ADD COLUMN c INTEGER")  # the view's catalog keeps a, b
    con.execute("COMMENT ON COLUMN planted.c IS 'Commented.'")
    con.execute("CREATE VIEW bare AS SELECT 1 AS x")
    assert sorted(uncommented(con)) == [
        "bare",
        "bare.x",
        "planted.b",
        "planted_view.c (not in the catalog)",
    ]


def test_the_private_tables_and_views_say_so(con: duckdb.DuckDBPyConnection) -> None:
    private = {r.name for r in catalog.relations(con) if (r.comment or "").startswith("Private")}
    assert private == PRIVATE


def _version(con: duckdb.DuckDBPyConnection, version: str, split: str, written: int) -> None:
    at = dt.datetime(2025, 6, written, tzinfo=dt.UTC)
    con.execute(
        "INSERT INTO split_versions (version_id, split, label, config_hash, code_version, "
        "prompt_hashes, models, counts, created_at, written_at, reviews) "
        "VALUES (?, ?, 'first', 'c', '0', '{}', '{}', '{}', ?, ?, '{\"base_version\": \"x\"}')",
        [version, split, at, at],
    )


def _instance(con: duckdb.DuckDBPyConnection, version: str, instance: str, target: str) -> None:
    con.execute(
        "INSERT INTO instances VALUES (?, ?, ?, 'brief-1', 'A brief.', DATE '2024-10-01', 3)",
        [version, instance, target],
    )


def test_instance_targets_gives_each_instance_its_split_and_target(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _version(con, "eval-aaa", "eval", 1)
    _version(con, "train-bbb", "train", 2)
    _instance(con, "eval-aaa", "i1", "openalex:W1")
    _instance(con, "eval-aaa", "i2", "openalex:W2")  # its target has no targets row
    _instance(con, "train-bbb", "i3", "openalex:W1")  # the same paper, in the other split
    con.execute(
        "INSERT INTO targets (split, paper_id, title, first_public_date, cutoff_date, status, "
        "outcome, updated_at) VALUES "
        "('eval', 'openalex:W1', 'Eval title', DATE '2025-01-20', DATE '2024-10-01', "
        "'accepted', 'accepted', now()), "
        "('train', 'openalex:W1', 'Train title', DATE '2024-01-20', DATE '2023-10-01', "
        "'excluded', 'llm_failed', now())"
    )
    rows = con.execute(
        "SELECT version_id, split, version_label, instance_id, target_id, title, "
        "first_public_date, cutoff_date, target_status, target_outcome FROM instance_targets "
        "ORDER BY instance_id"
    ).fetchall()
    assert rows == [
        (
            "eval-aaa", "eval", "first", "i1", "openalex:W1", "Eval title",
            dt.date(2025, 1, 20), dt.date(2024, 10, 1), "accepted", "accepted",
        ),
        (
            "eval-aaa", "eval", "first", "i2", "openalex:W2", None,
            None, dt.date(2024, 10, 1), None, None,
        ),
        (
            "train-bbb", "train", "first", "i3", "openalex:W1", "Train title",
            dt.date(2024, 1, 20), dt.date(2024, 10, 1), "excluded", "llm_failed",
        ),
    ]  # fmt: skip


def test_a_warehouse_written_before_0025_keeps_its_rows_and_gains_the_comments() -> None:
    con = warehouse.connect(":memory:")
    try:
        earlier = [m for m in warehouse.load_migrations() if m.name < "0025"]
        warehouse.migrate(con, earlier)
        _version(con, "eval-aaa", "eval", 1)
        assert warehouse.migrate(con)[0] == "0025_comments"
        row = con.execute("SELECT version_id, reviews FROM latest_split_versions").fetchall()
        assert row == [("eval-aaa", '{"base_version": "x"}')]
        assert not uncommented(con)
    finally:
        con.close()
