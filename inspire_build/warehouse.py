"""The only module that writes to DuckDB: connections, migrations and idempotent writes.

Migrations are SQL files in ``inspire_build/migrations/``, named ``NNNN_name.sql`` and applied in
order, each inside a transaction, and recorded in ``_migrations`` with a checksum. A migration
edited after it was applied is refused: the fix is a new migration.

Writes bind every value as a parameter. Table and column names are checked against the live
catalog before they are quoted into SQL, so no data ever reaches the SQL text.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
import math
import os
import re
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import duckdb

from inspire_build.errors import (
    Cancelled,
    MigrationError,
    WarehouseCorruptError,
    WarehouseError,
    WarehouseLockedError,
)

MIGRATIONS_TABLE = "_migrations"
_MIGRATION_NAME = re.compile(r"(?P<number>\d{4})_(?P<slug>[a-z0-9_]+)\.sql")


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(folder: Traversable | None = None) -> list[Migration]:
    """The registered migrations in order. Refuses duplicate numbers and badly named files."""
    folder = folder or resources.files("inspire_build") / "migrations"
    found: dict[str, Migration] = {}
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        match = _MIGRATION_NAME.fullmatch(entry.name)
        if not match:
            raise MigrationError(f"migration file {entry.name!r} is not named NNNN_name.sql")
        number = match.group("number")
        if number in found:
            raise MigrationError(
                f"migration number {number} is registered twice: "
                f"{found[number].name} and {entry.name.removesuffix('.sql')}"
            )
        found[number] = Migration(entry.name.removesuffix(".sql"), entry.read_text())
    return [found[number] for number in sorted(found)]


def connect(
    path: Path | str, *, read_only: bool = False, create: bool = True
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse at ``path`` (``:memory:`` for tests), with a clear error on a lock or a
    corrupt file. A missing file is created, unless ``read_only`` or not ``create``."""
    target = str(path)
    if target != ":memory:":
        file = Path(target)
        if read_only or not create:
            require(file)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:  # a path through a file, or where nothing can be made
            raise WarehouseError(
                f"cannot make the warehouse's folder {file.parent}: {error.strerror}"
            ) from None
    mark_absent_pandas()
    try:
        return duckdb.connect(target, read_only=read_only)
    except duckdb.Error as error:
        raise translate(error, target) or WarehouseError(
            f"cannot open the warehouse {target}: {error}"
        ) from error


def mark_absent_pandas() -> None:
    """Where pandas is not installed, say so in ``sys.modules`` once, so that ``import pandas``
    fails at once. DuckDB's client asks for pandas about twice per statement with parameters,
    and each failed ask walks the whole import path again under the import lock: a one-row
    lookup took 0.44 ms instead of 0.27 ms, and 0.38 instead of 0.15 across 8 threads, which
    queue on that lock. Where pandas is installed (or already imported), nothing changes."""
    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        hide_pandas()


def hide_pandas() -> None:
    """For a process that never hands DuckDB a DataFrame (the ``inspire`` command): mark pandas
    absent even where it is installed. DuckDB 1.5 imports pandas, and with it numpy and pyarrow,
    at the first statement with parameters in a process: 0.55 to 0.75 CPU-s for every command
    that opens the warehouse, against 0.002 once pandas is known absent. A library caller (a
    notebook that wants ``.df()``) keeps ``connect`` as it is. Once imported, it stays."""
    if "pandas" not in sys.modules:
        sys.modules["pandas"] = None  # type: ignore[assignment]  # "known absent" in CPython


def require(path: Path) -> None:
    """Refuse a path that holds no warehouse, saying how to make one."""
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}; create it with `inspire warehouse init`")


# DuckDB tells these apart only in its messages. Match its phrases, not bare words: "lock" alone
# also matches the "block" of a checksum error.
_LOCKED = re.compile(r"could not set lock on file|conflicting lock is held", re.IGNORECASE)
_FULL = re.compile(
    r"no space left on device|disk full|database has been invalidated", re.IGNORECASE
)
_CORRUPT = re.compile(
    r"corrupt database file|does not match stored checksum|not a valid duckdb database file",
    re.IGNORECASE,
)


def translate(error: duckdb.Error, target: Path | str = "") -> WarehouseError | None:
    """The typed error for a locked or corrupt warehouse, else None (not a state of the file).

    Corruption can surface at open or later, when a damaged block is first read, so the CLI
    translates DuckDB errors that escape a command through here too.
    """
    where = f" {target}" if target else ""
    if _LOCKED.search(str(error)):
        return WarehouseLockedError(
            f"the warehouse{where} is in use by {holder(str(error))}, which holds DuckDB's "
            "write lock (one writer at a time, and no reader beside it); wait for it to finish "
            f"or stop it. ({error})"
        )
    if _FULL.search(str(error)):
        return WarehouseError(
            f"the warehouse{where} could not be written: the disk is full (or DuckDB stopped "
            f"after failing to write); free space and run the build again, which resumes. "
            f"({error})"
        )
    if _CORRUPT.search(str(error)):
        return WarehouseCorruptError(
            f"the warehouse{where} is corrupt, or not a DuckDB database; restore it from a "
            f"copy or build a new one. ({error})"
        )
    return None


def applied_migrations(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Name -> checksum of every migration recorded in this warehouse."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [MIGRATIONS_TABLE]
    ).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = con.execute("SELECT name, checksum FROM _migrations").fetchall()
    return {str(name): str(checksum) for name, checksum in rows}


def migrate(
    con: duckdb.DuckDBPyConnection, migrations: Sequence[Migration] | None = None
) -> list[str]:
    """Apply every pending migration, each in its own transaction. Returns the names applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS _migrations ("
        "name VARCHAR PRIMARY KEY, checksum VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
    )
    done = applied_migrations(con)
    applied: list[str] = []
    for migration in load_migrations() if migrations is None else migrations:
        if migration.name in done:
            if done[migration.name] != migration.checksum:
                raise MigrationError(
                    f"migration {migration.name} was edited after it was applied; "
                    "add a new migration instead"
                )
            continue
        try:
            with transaction(con):
                con.execute(migration.sql)
                con.execute(
                    "INSERT INTO _migrations VALUES (?, ?, ?)",
                    [migration.name, migration.checksum, dt.datetime.now(dt.UTC)],
                )
        except duckdb.Error as error:
            raise MigrationError(f"migration {migration.name} failed: {error}") from error
        applied.append(migration.name)
    if applied:
        _column_cache.pop(con, None)
    return applied


_SAY_EVERY_S = 30.0


@contextmanager
def open_warehouse(
    path: Path | str,
    *,
    wait_s: float = 0.0,
    say: Callable[[str], None] | None = None,
    create: bool = True,
    stopped: Callable[[], bool] = lambda: False,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection with every migration applied, closed on exit. A missing file is
    created, unless not ``create``.

    With ``wait_s``, a warehouse locked by another process (another build) is retried every half
    second for up to that long, saying so every half minute, so that concurrent builds run one
    after another; ``stopped`` ends the wait with :class:`Cancelled`.
    """
    deadline = time.monotonic() + wait_s
    said = -math.inf
    while True:
        try:
            con = connect(path, create=create)
            break
        except WarehouseLockedError as locked:
            if stopped():
                raise Cancelled("cancelled while waiting for the warehouse") from None
            if time.monotonic() >= deadline:
                raise
            if say is not None and time.monotonic() - said >= _SAY_EVERY_S:
                say(f"the warehouse {path} is in use by {holder(str(locked))}; waiting for it")
                said = time.monotonic()
            # A free file is taken within half a second (every 5 s, a build waited 2.5 s on
            # average after the other had finished); the line is said every half minute.
            time.sleep(min(0.5, max(0.05, deadline - time.monotonic())))
    try:
        migrate(con)
        yield con
    finally:
        con.close()


def holder(locked: str) -> str:
    """Who holds a warehouse, from DuckDB's lock message ("... (PID 123)"): the process and its
    command line where this system shows it (a review server that still runs, say), else
    "another process"."""
    found = re.search(r"\(PID (\d+)\)", locked)
    if found is None:
        return "another process"
    try:
        argv = Path(f"/proc/{found[1]}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"process {found[1]}"
    words = [a.decode(errors="replace") for a in argv if a]
    shown = " ".join([Path(words[0]).name, *words[1:]]) if words else "?"
    return f"process {found[1]} ({shown[:120]})"


@dataclass(frozen=True)
class Relation:
    name: str
    kind: str  # "table" or "view"
    rows: int


def relations(con: duckdb.DuckDBPyConnection) -> list[Relation]:
    """Every table and view in the main schema, with its row count, sorted by name."""
    names = con.execute(
        "SELECT table_name, 'table' FROM duckdb_tables() WHERE schema_name = 'main' "
        "UNION ALL "
        "SELECT view_name, 'view' FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
        "ORDER BY 1"
    ).fetchall()
    result = []
    for name, kind in names:
        # The name comes from the catalog itself, not from input.
        query = f"SELECT count(*) FROM {_quote(name)}"  # noqa: S608
        count = con.execute(query).fetchone()
        result.append(Relation(str(name), str(kind), int(count[0]) if count else 0))
    return result


def schema_sql(con: duckdb.DuckDBPyConnection) -> str:
    """The migrated schema as DuckDB states it: the body of ``schemas/warehouse.sql``."""
    statements = con.execute(
        "SELECT sql FROM ("
        "  SELECT table_name AS name, 0 AS ord, sql FROM duckdb_tables() "
        "  WHERE schema_name = 'main' "
        "  UNION ALL "
        "  SELECT view_name, 1, sql FROM duckdb_views() WHERE schema_name = 'main' "
        "  AND NOT internal "
        "  UNION ALL "
        "  SELECT index_name, 2, sql FROM duckdb_indexes() WHERE schema_name = 'main'"
        ") ORDER BY ord, name"
    ).fetchall()
    return "\n\n".join(str(sql).strip() for (sql,) in statements) + "\n"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


# Column names and types per connection and table. Reading DuckDB's catalog costs ~3 ms, more
# than many writes, and only a migration changes the schema; migrate() clears this.
_column_cache: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, dict[str, str]]] = (
    weakref.WeakKeyDictionary()
)


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    known = _column_cache.setdefault(con, {})
    if table not in known:
        rows = con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = 'main' AND table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
        if not rows:
            raise WarehouseError(f"no table {table!r} in the warehouse")
        known[table] = {str(name): str(kind) for name, kind in rows}
    return known[table]


def _checked_columns(
    con: duckdb.DuckDBPyConnection, table: str, names: Sequence[str]
) -> dict[str, str]:
    known = _columns(con, table)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise WarehouseError(f"table {table!r} has no column(s) {unknown}; it has {sorted(known)}")
    return {name: known[name] for name in names}


def _bind(value: object, column_type: str) -> object:
    """Python value -> DuckDB parameter. Mappings and lists bound for JSON columns are encoded."""
    if column_type == "JSON" and value is not None and not isinstance(value, str):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def dedupe(rows: Sequence[Mapping[str, object]], key: Sequence[str]) -> list[Mapping[str, object]]:
    """Keep the last row per key, in first-seen key order.

    DuckDB keeps the *first* of two rows with one key inside a single ``INSERT ... ON CONFLICT``
    statement and drops the other silently, so every batch passes through here first.
    """
    latest: dict[tuple[object, ...], Mapping[str, object]] = {}
    for row in rows:
        latest[tuple(row[name] for name in key)] = row
    return list(latest.values())


def upsert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: Sequence[Mapping[str, object]],
    key: Sequence[str],
    *,
    fresh: bool = False,
    mostly_new: bool = False,
) -> int:
    """Insert ``rows`` into ``table``, replacing rows with the same ``key``. Returns rows written.

    Every row must have the same columns. The batch is deduplicated on ``key`` first (last wins)
    and written in one transaction, so a rerun with the same rows changes nothing. ``fresh``:
    the caller knows that no row with these keys exists (it has just deleted them), so a plain
    insert does, without the conflict check that costs DuckDB more than the insert itself.
    ``mostly_new``: the rows' keys are seldom stored yet (a target's new calls and findings), so
    one lookup (:func:`_any_stored`) decides: none stored, and a plain insert does.
    """
    if not rows:
        return 0
    columns = list(rows[0])
    if any(list(row) != columns for row in rows):
        raise WarehouseError(f"rows for {table!r} do not all have the same columns")
    if not set(key) <= set(columns):
        raise WarehouseError(f"key {list(key)} is not among the columns {columns}")
    types = _checked_columns(con, table, columns)
    unique = dedupe(rows, key)
    quoted = [_quote(name) for name in columns]
    updates = [f"{_quote(name)} = excluded.{_quote(name)}" for name in columns if name not in key]
    conflict = "DO UPDATE SET " + ", ".join(updates) if updates else "DO NOTHING"
    target = f"INSERT INTO {_quote(table)} ({', '.join(quoted)}) "  # noqa: S608 (checked names)
    on_conflict = f" ON CONFLICT ({', '.join(_quote(name) for name in key)}) {conflict}"
    with transaction(con):
        if fresh or (mostly_new and not _any_stored(con, table, unique, key, types)):
            on_conflict = ""
        if "BLOB" in types.values():
            # Bytes cannot travel as JSON: bind them, a few hundred rows per statement.
            for start in range(0, len(unique), _ROWS_PER_STATEMENT):
                chunk = unique[start : start + _ROWS_PER_STATEMENT]
                one = "(" + ", ".join("?" for _ in columns) + ")"
                values = "VALUES " + ", ".join(one for _ in chunk)
                params = [_bind(row[name], types[name]) for row in chunk for name in columns]
                con.execute(target + values + on_conflict, params)
        else:
            # One JSON parameter for the whole batch: DuckDB parses it into typed rows, about
            # 100x faster than executemany. Identifiers are checked; values are data only.
            shape = json.dumps({name: types[name] for name in columns})
            fields = ", ".join("r." + _quote(name) for name in columns)
            select = f"SELECT {fields} FROM (SELECT unnest(from_json(?::JSON, ?)) AS r)"  # noqa: S608
            payload = json.dumps(
                [{n: _jsonable(row[n], types[n]) for n in columns} for row in unique],
                default=_json_default,
            )
            con.execute(target + select + on_conflict, [payload, f"[{shape}]"])
    return len(unique)


_ROWS_PER_STATEMENT = 200


def _any_stored(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: Sequence[Mapping[str, object]],
    key: Sequence[str],
    types: Mapping[str, str],
) -> bool:
    """Whether ``table`` may hold a row with the key of one of ``rows``: one lookup by the
    key's first column (the primary key's, so its index answers: 0.5 ms in a million rows),
    the whole keys compared here. Keys other than text are not compared, and count as stored."""
    if any(types[name] != "VARCHAR" for name in key) or any(
        type(row[name]) is not str for row in rows for name in key
    ):
        return True
    first = list(dict.fromkeys(row[key[0]] for row in rows))
    stored = con.execute(
        f"SELECT {', '.join(_quote(name) for name in key)} FROM {_quote(table)} "  # noqa: S608
        f"WHERE {_quote(key[0])} IN (SELECT unnest(?::VARCHAR[]))",
        [first],
    ).fetchall()
    ours = {tuple(row[name] for name in key) for row in rows}
    return any(tuple(found) in ours for found in stored)


def _jsonable(value: object, column_type: str) -> object:
    """JSON columns receive the value itself; a JSON string is decoded first, not re-encoded."""
    if column_type == "JSON" and isinstance(value, str):
        return json.loads(value)
    return value


def _json_default(value: object) -> object:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


def replace_where(
    con: duckdb.DuckDBPyConnection,
    table: str,
    where: Mapping[str, object],
    rows: Sequence[Mapping[str, object]],
    key: Sequence[str],
) -> int:
    """Replace exactly the rows matching ``where`` with ``rows``, in one transaction.

    This is how a rerun of a pipeline step replaces its own rows and nothing else: rows that the
    step no longer produces disappear, others' rows stay.
    """
    if not where:
        raise WarehouseError("replace_where needs a non-empty filter")
    types = _checked_columns(con, table, list(where))
    condition = " AND ".join(_quote(name) + " = ?" for name in where)
    # A row whose key holds the filter's columns, at the filter's values, can only clash with a
    # row the DELETE has just removed: then a plain insert writes it.
    fresh = set(where) <= set(key) and all(
        type(row.get(name)) is type(value) and row.get(name) == value
        for row in rows
        for name, value in where.items()
    )
    with transaction(con):
        con.execute(
            f"DELETE FROM {_quote(table)} WHERE {condition}",  # noqa: S608 (checked names)
            [_bind(value, types[name]) for name, value in where.items()],
        )
        return upsert(con, table, rows, key, fresh=fresh)


# Connections inside a transaction() block. DuckDB cannot be asked, and a BEGIN inside a
# transaction aborts it, so nesting is tracked here.
_open_transactions: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def update_where(
    con: duckdb.DuckDBPyConnection,
    table: str,
    values: Mapping[str, object],
    where: Mapping[str, object],
) -> int:
    """Set ``values`` on the rows matching ``where``. Returns the rows changed."""
    if not where or not values:
        raise WarehouseError("update_where needs values and a non-empty filter")
    types = _checked_columns(con, table, [*values, *where])
    assignments = ", ".join(_quote(name) + " = ?" for name in values)
    condition = " AND ".join(_quote(name) + " = ?" for name in where)
    query = f"UPDATE {_quote(table)} SET {assignments} WHERE {condition}"  # noqa: S608 (checked)
    params = [_bind(v, types[k]) for k, v in [*values.items(), *where.items()]]
    with transaction(con):
        row = con.execute(query, params).fetchone()
    return int(row[0]) if row else 0


def copy_to_parquet(
    con: duckdb.DuckDBPyConnection, query: str, params: Sequence[object], path: Path
) -> None:
    """Write a table module's query to ``path`` as Parquet (through ``.tmp-``, then renamed)."""
    tmp = path.with_name(".tmp-" + path.name)
    # COPY binds only its file name reliably, so the query's own parameters are bound first.
    con.execute("CREATE OR REPLACE TEMP TABLE export_rows AS " + query, list(params))
    con.execute("COPY export_rows TO ? (FORMAT parquet)", [str(tmp)])
    con.execute("DROP TABLE export_rows")
    os.replace(tmp, path)


def parquet_rows(con: duckdb.DuckDBPyConnection, path: Path) -> list[tuple[Any, ...]]:
    """Every row of a Parquet file, as a reader gets it back."""
    return con.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()


def dicts(
    con: duckdb.DuckDBPyConnection, query: str, params: Sequence[object] = ()
) -> list[dict[str, Any]]:
    """The rows of a table module's query, as dicts by column name."""
    cursor = con.execute(query, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def first_dict(
    con: duckdb.DuckDBPyConnection, query: str, params: Sequence[object] = ()
) -> dict[str, Any] | None:
    """The first row of a table module's query, as a dict by column name (None: no row)."""
    rows = dicts(con, query, params)
    return rows[0] if rows else None


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """A transaction that nests: inside a caller's transaction, this block joins it."""
    if con in _open_transactions:
        yield  # the caller's transaction commits or rolls back
        return
    con.execute("BEGIN TRANSACTION")
    _open_transactions.add(con)
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    else:
        con.execute("COMMIT")
    finally:
        _open_transactions.discard(con)


# The settings a block may change (their names cannot be bound; their values are).
_SETTINGS = {
    name: (f"SELECT current_setting('{name}')", f"SET {name} = ?")
    for name in ("threads", "checkpoint_threshold")
}


@contextmanager
def setting(con: duckdb.DuckDBPyConnection, name: str, value: int | str) -> Iterator[None]:
    """DuckDB's setting ``name`` at ``value`` for the block, then back to what it was, also when
    the block fails. Both are settings of the whole database, so every cursor of ``con`` runs
    under them: ``threads`` (bulk ingest sizes it to its jobs; a build's LLM steps run at one,
    since DuckDB's idle workers spin on each of their small statements) and
    ``checkpoint_threshold`` (the write-ahead log's size that makes a commit write the tables
    out)."""
    read, write = _SETTINGS[name]
    row = con.execute(read).fetchone()
    before = row[0] if row else value
    con.execute(write, [value])
    try:
        yield
    finally:
        con.execute(write, [before])
