"""warehouse.py: migrations, idempotent writes, and the lock error, on real DuckDB."""

from __future__ import annotations

import datetime as dt
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from inspire_build import warehouse
from inspire_build.errors import MigrationError, WarehouseError, WarehouseLockedError

EXPECTED_TABLES = {
    "_migrations",
    "raw_http",
    "llm_calls",
    "llm_call_uses",
    "papers",
    "paper_ids",
    "references",
    "targets",
    "briefs",
    "audit_findings",
    "grades",
    "split_versions",
    "instances",
    "qrels",
    "eval_runs",
    "eval_scores",
    "gold_completeness",
    "llm_batches",
    "corpus",
    "corpus_ids",
    "env_sessions",
    "env_steps",
    "build_runs",
    "instance_key",
    "boundary_audits",
    "version_grades",
    "version_findings",
    "bulk_files",
    "bulk_records",
    "bulk_ids",
    "bulk_abstracts",
    "bulk_citations",
    "bulk_paper_ids",
    "reviews",
    "review_samples",
    "published_cutoffs",
    "audit_verdicts",
}
EXPECTED_VIEWS = {
    "latest_split_versions",
    "train_latest",
    "eval_latest",
    "llm_ledger",
    "instance_targets",
}


def test_migrate_creates_every_table_of_the_pipeline(con: duckdb.DuckDBPyConnection) -> None:
    relations = {r.name: r for r in warehouse.relations(con)}
    tables = {name for name, r in relations.items() if r.kind == "table"}
    assert tables == EXPECTED_TABLES
    assert {name for name, r in relations.items() if r.kind == "view"} == EXPECTED_VIEWS
    assert relations["_migrations"].rows == len(warehouse.load_migrations())


def test_migrate_twice_changes_nothing(con: duckdb.DuckDBPyConnection) -> None:
    before = warehouse.schema_sql(con)
    assert warehouse.migrate(con) == []
    assert warehouse.schema_sql(con) == before
    count = con.execute("SELECT count(*) FROM _migrations").fetchone()
    assert count == (len(warehouse.load_migrations()),)


def test_edited_migration_is_refused(con: duckdb.DuckDBPyConnection) -> None:
    first = warehouse.load_migrations()[0]
    edited = warehouse.Migration(first.name, first.sql + "\n-- edited")
    with pytest.raises(MigrationError, match="edited after it was applied"):
        warehouse.migrate(con, [edited])


def test_failed_migration_rolls_back_and_is_not_recorded(con: duckdb.DuckDBPyConnection) -> None:
    broken = warehouse.Migration(
        "0002_broken", "CREATE TABLE half_done (x INTEGER); SELECT * FROM no_such_table;"
    )
    with pytest.raises(MigrationError, match="0002_broken failed"):
        warehouse.migrate(con, [*warehouse.load_migrations(), broken])
    names = {r.name for r in warehouse.relations(con)}
    assert "half_done" not in names
    assert "0002_broken" not in warehouse.applied_migrations(con)


def test_duplicate_migration_numbers_are_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("SELECT 1;")
    (tmp_path / "0001_second.sql").write_text("SELECT 2;")
    with pytest.raises(MigrationError, match="registered twice"):
        warehouse.load_migrations(tmp_path)


def test_badly_named_migration_is_refused(tmp_path: Path) -> None:
    (tmp_path / "add-things.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="NNNN_name.sql"):
        warehouse.load_migrations(tmp_path)


def _id_rows(*triples: tuple[str, str, str]) -> list[dict[str, object]]:
    return [
        {"scheme": scheme, "value": value, "paper_id": paper, "source": "openalex"}
        for scheme, value, paper in triples
    ]


def test_upsert_is_idempotent(con: duckdb.DuckDBPyConnection) -> None:
    rows = _id_rows(("openalex", "W1", "p1"), ("doi", "10.1/a", "p1"))
    key = ["scheme", "value"]
    assert warehouse.upsert(con, "paper_ids", rows, key) == 2
    assert warehouse.upsert(con, "paper_ids", rows, key) == 2
    assert con.execute("SELECT count(*) FROM paper_ids").fetchone() == (2,)


def test_upsert_replaces_on_key_and_keeps_the_last_duplicate_of_a_batch(
    con: duckdb.DuckDBPyConnection,
) -> None:
    key = ["scheme", "value"]
    warehouse.upsert(con, "paper_ids", _id_rows(("openalex", "W1", "old")), key)
    batch = _id_rows(("openalex", "W1", "first"), ("openalex", "W1", "last"))
    assert warehouse.upsert(con, "paper_ids", batch, key) == 1
    assert con.execute("SELECT paper_id FROM paper_ids").fetchall() == [("last",)]


def test_upsert_encodes_json_columns_and_binds_lists(con: duckdb.DuckDBPyConnection) -> None:
    row = {
        "target_id": "t1",
        "ref_key": "r1",
        "ids": {"doi": "10.1/a", "openalex": "W2"},
        "sources": ["openalex", "s2"],
        "title": "Robert'); DROP TABLE papers;--",
    }
    warehouse.upsert(con, "references", [row], ["target_id", "ref_key"])
    ids, sources, title = con.execute(
        "SELECT ids->>'doi', sources, title FROM \"references\""
    ).fetchone() or (None, None, None)
    assert (ids, sources, title) == ("10.1/a", ["openalex", "s2"], row["title"])


def test_upsert_refuses_unknown_tables_and_columns(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(WarehouseError, match="no table"):
        warehouse.upsert(con, "nope", [{"a": 1}], ["a"])
    with pytest.raises(WarehouseError, match="no column"):
        warehouse.upsert(con, "paper_ids", [{"scheme": "x", "value": "y", "evil": 1}], ["scheme"])


def test_upsert_rolls_back_the_whole_batch_on_error(con: duckdb.DuckDBPyConnection) -> None:
    rows = [
        {
            "target_id": "t",
            "paper_id": "a",
            "tier": 3,
            "role": "problem",
            "rationale": "r",
            "backend": "rules",
            "model": "m",
            "prompt_hash": "h",
        },
        {
            "target_id": "t",
            "paper_id": "b",
            "tier": 9,
            "role": "problem",
            "rationale": "r",
            "backend": "rules",
            "model": "m",
            "prompt_hash": "h",
        },
    ]
    with pytest.raises(duckdb.ConstraintException):
        warehouse.upsert(con, "grades", rows, ["target_id", "paper_id"])
    assert con.execute("SELECT count(*) FROM grades").fetchone() == (0,)


def test_migration_0010_keeps_the_rows_of_a_warehouse_at_0009() -> None:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con, [m for m in warehouse.load_migrations() if m.name < "0010"])
    con.execute(
        "INSERT INTO grades VALUES ('t', 'a', 3, 'method-foundation', 'core', 'rules', 'm', 'h'), "
        "('t', 'b', 1, 'background', 'context', 'openai', 'g', 'h2')"
    )
    con.execute(
        "INSERT INTO gold_completeness VALUES ('t', 5, 4, 4, 2, 1, 0, 0, 1, 0, ['openalex'], "
        "TIMESTAMPTZ '2025-01-02 03:04:05+00')"
    )
    before = con.execute("SELECT * FROM grades ORDER BY paper_id").fetchall()
    completeness = con.execute("SELECT * FROM gold_completeness").fetchall()
    to_0010 = [m for m in warehouse.load_migrations() if m.name < "0011"]
    assert warehouse.migrate(con, to_0010) == ["0010_grades_tier_zero"]
    assert con.execute("SELECT * FROM grades ORDER BY paper_id").fetchall() == before
    assert con.execute("SELECT * EXCLUDE (not_antecedents) FROM gold_completeness").fetchall() == (
        completeness
    )
    assert con.execute("SELECT not_antecedents FROM gold_completeness").fetchall() == [(None,)]
    # Tier 0 now fits, with no role and a rationale; a role at tier 0, or none above it, does not.
    con.execute("INSERT INTO grades VALUES ('t', 'c', 0, NULL, 'passing', 'rules', 'm', 'h')")
    for bad in (
        "('t', 'd', 0, 'background', 'r', 'rules', 'm', 'h')",
        "('t', 'd', 2, NULL, 'r', 'rules', 'm', 'h')",
        "('t', 'd', 0, NULL, '', 'rules', 'm', 'h')",
    ):
        with pytest.raises(duckdb.ConstraintException):
            con.execute(f"INSERT INTO grades VALUES {bad}")  # noqa: S608 (test literals)
    with pytest.raises(duckdb.ConstraintException):  # qrels stay tiers 1-3
        con.execute("INSERT INTO qrels VALUES ('v', 'i', 'c', 0, 'background')")
    con.close()


def test_migration_0011_dates_every_written_version_and_keeps_latest() -> None:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con, [m for m in warehouse.load_migrations() if m.name < "0011"])
    for version, month in (("eval-a", 1), ("eval-b", 2)):
        con.execute(
            "INSERT INTO split_versions (version_id, split, config_hash, code_version, "
            "prompt_hashes, models, counts, created_at, status) "
            "VALUES (?, 'eval', 'h', '0', '{}', '{}', '{}', ?, 'complete')",
            [version, dt.datetime(2025, month, 1, tzinfo=dt.UTC)],
        )
    assert "0011_version_written_at" in warehouse.migrate(con)
    rows = con.execute("SELECT count(*) FROM split_versions WHERE written_at = created_at")
    assert rows.fetchone() == (2,)
    assert con.execute("SELECT version_id FROM latest_split_versions").fetchall() == [("eval-b",)]
    con.execute("UPDATE split_versions SET written_at = now() WHERE version_id = 'eval-a'")
    assert con.execute("SELECT version_id FROM latest_split_versions").fetchall() == [("eval-a",)]
    con.close()


def test_migration_0013_gives_old_targets_their_outcome_and_source_problems() -> None:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con, [m for m in warehouse.load_migrations() if m.name < "0013"])
    reasons = {
        "a": ("accepted", "brief accepted on attempt 1; 4 antecedents among 9 graded references"),
        "b": ("excluded", "over the split's limit of 5 targets"),
        "c": ("excluded", "no reference is strictly before the cutoff [source problems: s2 gave "
                          "a year that is not a number]"),
        "d": ("excluded", "first public 2024-12-30 (arxiv), before the split's window"),
        "e": ("excluded", "every brief leaked (3 attempts): lexical: contains: solkar"),
        "f": ("excluded", "something no kind names"),
    }  # fmt: skip
    for paper_id, (status, reason) in reasons.items():
        con.execute(
            "INSERT INTO targets (split, paper_id, status, reason, updated_at) "
            "VALUES ('eval', ?, ?, ?, now())",
            [paper_id, status, reason],
        )
    assert "0013_target_outcomes" in warehouse.migrate(con)
    rows = con.execute("SELECT paper_id, outcome, source_problems FROM targets ORDER BY 1")
    assert rows.fetchall() == [
        ("a", "accepted", None),
        ("b", "over_limit", None),
        ("c", "no_eligible_reference", "s2 gave a year that is not a number"),
        ("d", "outside_window", None),
        ("e", "every_brief_leaked", None),
        ("f", None, None),
    ]
    con.close()


def test_migration_0015_gives_old_rows_the_texts_their_steps_read() -> None:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con, [m for m in warehouse.load_migrations() if m.name < "0015"])
    con.execute(
        "INSERT INTO papers (paper_id, title, abstract, sources, updated_at) VALUES "
        "('t', 'Target', 'What t does.', [], now()), ('r', 'Cited', 'What r does.', [], now())"
    )
    con.execute(
        "INSERT INTO targets (split, paper_id, title, status, updated_at) VALUES "
        "('eval', 't', 'target (as listed)', 'accepted', now()), "
        "('eval', 'u', 'Not in papers', 'excluded', now())"
    )
    con.execute(
        'INSERT INTO "references" (target_id, ref_key, paper_id, title, ids, sources) VALUES '
        "('t', '0000', 'r', 'cited (as listed)', '{}', []), ('t', '0001', NULL, 'Lost', '{}', [])"
    )
    assert "0015_lineage_texts" in warehouse.migrate(con)
    targets = con.execute("SELECT paper_id, title, abstract FROM targets ORDER BY 1").fetchall()
    assert targets == [("t", "Target", "What t does."), ("u", "Not in papers", None)]
    references = con.execute(
        'SELECT ref_key, title, work_title, work_abstract FROM "references" ORDER BY 1'
    ).fetchall()
    assert references == [
        ("0000", "cited (as listed)", "Cited", "What r does."),
        ("0001", "Lost", None, None),
    ]
    con.close()


def test_replace_where_replaces_exactly_its_own_rows(con: duckdb.DuckDBPyConnection) -> None:
    key = ["scheme", "value"]
    warehouse.upsert(
        con, "paper_ids", _id_rows(("openalex", "W1", "p1"), ("openalex", "W2", "p2")), key
    )
    written = warehouse.replace_where(
        con, "paper_ids", {"paper_id": "p1"}, _id_rows(("doi", "10.1/x", "p1")), key
    )
    assert written == 1
    rows = con.execute("SELECT scheme, value, paper_id FROM paper_ids ORDER BY value").fetchall()
    assert rows == [("doi", "10.1/x", "p1"), ("openalex", "W2", "p2")]


def _grade(target: str, paper: str, tier: int) -> dict[str, object]:
    role = "background" if tier else None
    made = {"backend": "rules", "model": "m", "prompt_hash": "h"}
    return {
        "target_id": target,
        "paper_id": paper,
        "tier": tier,
        "role": role,
        "rationale": "r",
    } | made


def test_replace_where_on_a_key_column_inserts_its_rows_plainly_and_reruns_alike(
    con: duckdb.DuckDBPyConnection,
) -> None:
    key, graded = ["target_id", "paper_id"], "SELECT target_id, paper_id, tier FROM grades"
    warehouse.upsert(con, "grades", [_grade("t", "a", 1), _grade("u", "a", 2)], key)
    rows = [_grade("t", "a", 3), _grade("t", "b", 0), _grade("t", "b", 1)]  # last of b wins
    for _ in range(2):  # a rerun replaces the rows it wrote itself
        assert warehouse.replace_where(con, "grades", {"target_id": "t"}, rows, key) == 2
        found = con.execute(graded + " ORDER BY ALL").fetchall()
        assert found == [("t", "a", 3), ("t", "b", 1), ("u", "a", 2)]


def test_replace_where_upserts_a_row_outside_its_filter(con: duckdb.DuckDBPyConnection) -> None:
    # u's row is not deleted, so it can clash: it is replaced, as upsert does, not refused
    key = ["target_id", "paper_id"]
    warehouse.upsert(con, "grades", [_grade("t", "a", 1), _grade("u", "a", 2)], key)
    rows = [_grade("t", "a", 3), _grade("u", "a", 0)]
    assert warehouse.replace_where(con, "grades", {"target_id": "t"}, rows, key) == 2
    found = con.execute("SELECT target_id, paper_id, tier FROM grades ORDER BY ALL").fetchall()
    assert found == [("t", "a", 3), ("u", "a", 0)]


def test_a_fresh_upsert_refuses_a_key_that_exists(con: duckdb.DuckDBPyConnection) -> None:
    key = ["target_id", "paper_id"]
    warehouse.upsert(con, "grades", [_grade("t", "a", 1)], key)
    with pytest.raises(duckdb.ConstraintException):
        warehouse.upsert(con, "grades", [_grade("t", "a", 2)], key, fresh=True)


def test_mostly_new_rows_upsert_as_upsert_does(con: duckdb.DuckDBPyConnection) -> None:
    key, graded = ["target_id", "paper_id"], "SELECT target_id, paper_id, tier FROM grades"
    warehouse.upsert(con, "grades", [_grade("t", "a", 1)], key, mostly_new=True)
    # t's other paper shares only the key's first column: new, inserted beside it
    warehouse.upsert(con, "grades", [_grade("t", "b", 2)], key, mostly_new=True)
    # a stored key among new ones: replaced, the batch's last row of a key winning
    rows = [_grade("t", "a", 0), _grade("u", "a", 3), _grade("t", "a", 3)]
    assert warehouse.upsert(con, "grades", rows, key, mostly_new=True) == 2
    found = con.execute(graded + " ORDER BY ALL").fetchall()
    assert found == [("t", "a", 3), ("t", "b", 2), ("u", "a", 3)]


def test_a_stored_key_is_found_by_its_whole_key(con: duckdb.DuckDBPyConnection) -> None:
    key = ["target_id", "paper_id"]
    warehouse.upsert(con, "grades", [_grade("t", "a", 1)], key)
    types = {"target_id": "VARCHAR", "paper_id": "VARCHAR"}

    def stored(*rows: dict[str, object]) -> bool:
        return warehouse._any_stored(con, "grades", rows, key, types)

    assert stored(_grade("t", "a", 2), _grade("v", "c", 2))
    assert not stored(_grade("t", "b", 2), _grade("u", "a", 2))  # each column matches alone
    assert stored({**_grade("t", "b", 2), "paper_id": 7})  # not text: counted as stored
    assert warehouse._any_stored(
        con, "grades", [_grade("x", "y", 0)], ["tier"], {"tier": "INTEGER"}
    )


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    row = con.execute(f"SELECT current_setting('{name}')").fetchone()
    assert row is not None
    return str(row[0])


def test_threads_are_set_for_the_block_and_given_back(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET threads = 3")
    with warehouse.setting(con, "threads", 1):
        assert _setting(con, "threads") == "1"
        assert con.cursor().execute("SELECT current_setting('threads')").fetchone() == (1,)
    assert _setting(con, "threads") == "3"
    with pytest.raises(RuntimeError), warehouse.setting(con, "threads", 2):
        assert _setting(con, "threads") == "2"
        raise RuntimeError("the ingest failed")
    assert _setting(con, "threads") == "3"


def test_the_checkpoint_threshold_is_set_for_the_block_and_given_back(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute("SET checkpoint_threshold = '32MB'")
    before = _setting(con, "checkpoint_threshold")
    with warehouse.setting(con, "checkpoint_threshold", "1GB"):
        assert _setting(con, "checkpoint_threshold") == "953.6 MiB"
    assert _setting(con, "checkpoint_threshold") == before
    with pytest.raises(RuntimeError), warehouse.setting(con, "checkpoint_threshold", "2GB"):
        raise RuntimeError("the ingest failed")
    assert _setting(con, "checkpoint_threshold") == before


def test_nested_transactions_join_the_outer_one(con: duckdb.DuckDBPyConnection) -> None:
    key = ["scheme", "value"]
    with pytest.raises(RuntimeError), warehouse.transaction(con):
        warehouse.upsert(con, "paper_ids", _id_rows(("openalex", "W1", "p1")), key)
        raise RuntimeError("fail after the inner write")
    assert con.execute("SELECT count(*) FROM paper_ids").fetchone() == (0,)


def test_dedupe_keeps_the_last_row_in_first_seen_order() -> None:
    rows = [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 1, "v": "c"}]
    assert warehouse.dedupe(rows, ["k"]) == [{"k": 1, "v": "c"}, {"k": 2, "v": "b"}]
    assert rows[0] == {"k": 1, "v": "a"}  # the caller's rows are untouched


def test_a_second_writer_gets_a_clear_lock_error(tmp_path: Path) -> None:
    path = tmp_path / "locked.duckdb"
    warehouse.connect(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, duckdb
                con = duckdb.connect({str(path)!r})
                print("locked", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(WarehouseLockedError, match=rf"in use by process {holder.pid} \("):
            warehouse.connect(path)
    finally:
        holder.communicate("")


def test_read_only_open_of_a_missing_file_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="inspire warehouse init"):
        warehouse.connect(tmp_path / "missing.duckdb", read_only=True)
    assert not (tmp_path / "missing.duckdb").exists()


class _Asked:
    """A finder ahead of every other that only records the modules Python looks for."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        self.names.append(name)


def _pandas_asks(monkeypatch: pytest.MonkeyPatch, con: duckdb.DuckDBPyConnection) -> int:
    asked = _Asked()
    monkeypatch.setattr(sys, "meta_path", [asked, *sys.meta_path])
    con.execute("SELECT ?::VARCHAR, ?::INTEGER", ["a", 1]).fetchall()
    monkeypatch.setattr(sys, "meta_path", sys.meta_path[1:])
    return asked.names.count("pandas")


ABSENT_PANDAS = """
import importlib.machinery, sys
import duckdb
from inspire_build import warehouse


class Hidden:  # pandas as a machine without it sees it: no finder finds it
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(name)


class Asked:
    def __init__(self):
        self.names = []

    def find_spec(self, name, path=None, target=None):
        self.names.append(name)


def asks(con):
    asked = Asked()
    sys.meta_path.insert(0, asked)
    con.execute("SELECT ?::VARCHAR, ?::INTEGER", ["a", 1]).fetchall()
    sys.meta_path.remove(asked)
    return asked.names.count("pandas")


sys.modules.pop("pandas", None)
sys.meta_path.insert(0, Hidden())
con = duckdb.connect()
before = asks(con)
warehouse.importlib.util.find_spec = lambda name, *a: None
warehouse.mark_absent_pandas()
print(before, asks(con), sys.modules["pandas"] is None)
"""


def test_an_absent_pandas_is_marked_so_duckdb_stops_looking_for_it() -> None:
    """In a process of its own: pandas may be installed here (the dev extra's datasets needs
    it), and once DuckDB has found it in a process, it never asks again."""
    done = subprocess.run(
        [sys.executable, "-c", ABSENT_PANDAS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    before, after, marked = done.stdout.split()
    assert int(before) > 0  # unmarked, every statement looks for it again
    assert (int(after), marked) == (0, "True")


def test_an_installed_pandas_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    monkeypatch.setattr(warehouse.importlib.util, "find_spec", lambda name, *a: object())
    warehouse.mark_absent_pandas()
    assert "pandas" not in sys.modules


HIDDEN_PANDAS = """
import sys
import duckdb
from inspire_build import warehouse

if sys.argv[1] == "hide":
    warehouse.hide_pandas()
con = duckdb.connect()
con.execute("SELECT ?::VARCHAR, ?::INTEGER", ["a", 1]).fetchall()
print(sorted(name for name in ("pandas", "numpy", "pyarrow") if sys.modules.get(name)))
"""


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="needs pandas installed")
def test_hidden_pandas_keeps_duckdb_from_importing_it_where_it_is_installed() -> None:
    """In processes of their own: the dev extra installs pandas, and DuckDB imports it (numpy
    and pyarrow with it) at the first bound parameter unless it is hidden."""
    seen = {}
    for mode in ("hide", "leave"):
        done = subprocess.run(
            [sys.executable, "-c", HIDDEN_PANDAS, mode], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        seen[mode] = done.stdout.strip()
    assert seen["hide"] == "[]"
    assert "'pandas'" in seen["leave"]  # the planted case: left alone, DuckDB imports it


def test_a_locked_warehouse_is_retried_every_half_second_and_said_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Five refusals, then the lock is free: five waits of at most half a second (a build starts
    soon after the one before it ends), and one line said, not one per retry."""
    refusals = iter(range(5))
    real_connect = warehouse.connect

    def connect(path: Path | str, **kwargs: bool) -> duckdb.DuckDBPyConnection:
        if next(refusals, None) is not None:
            raise WarehouseLockedError("locked")
        return real_connect(path, **kwargs)

    slept: list[float] = []
    said: list[str] = []
    monkeypatch.setattr(warehouse, "connect", connect)
    monkeypatch.setattr(warehouse.time, "sleep", slept.append)
    with warehouse.open_warehouse(tmp_path / "w.duckdb", wait_s=60, say=said.append) as con:
        assert con.execute("SELECT 1").fetchone() == (1,)
    assert len(slept) == 5 and all(0 < s <= 0.5 for s in slept)
    assert said == [f"the warehouse {tmp_path / 'w.duckdb'} is in use by another process; "
                    "waiting for it"]  # fmt: skip


def test_the_holder_of_a_lock_is_named_by_its_pid_and_command_line() -> None:
    import os

    mine = f"IO Error: Conflicting lock is held in /usr/bin/python3 (PID {os.getpid()}). See"
    named = warehouse.holder(mine)
    assert named.startswith(f"process {os.getpid()} (") and "python" in named
    assert warehouse.holder("locked") == "another process"
    assert warehouse.holder("held (PID 999999999)") == "process 999999999"
