"""What DuckDB's catalog says of the warehouse's own tables and views: their comments and their
columns' (migration 0025 wrote them), for docs/reference.md and the test that every column has
one. Only the current database's ``main`` schema, and none of DuckDB's internal views."""

from __future__ import annotations

import dataclasses

import duckdb

_RELATIONS = (
    "SELECT table_name, 'table', comment FROM duckdb_tables() "
    "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
    "UNION ALL "
    "SELECT view_name, 'view', comment FROM duckdb_views() "
    "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
    "ORDER BY 1"
)
_COLUMNS = (
    "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
    "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
    "ORDER BY table_name, column_index"
)


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None


@dataclasses.dataclass(frozen=True)
class Relation:
    """A table or view, its comment and its columns in declaration order."""

    name: str
    kind: str  # table | view
    comment: str | None
    columns: tuple[Column, ...]


def relations(con: duckdb.DuckDBPyConnection) -> list[Relation]:
    """Every table and view of the warehouse, sorted by name, with its comments."""
    columns: dict[str, list[Column]] = {}
    for relation, name, type_, comment in con.execute(_COLUMNS).fetchall():
        columns.setdefault(str(relation), []).append(
            Column(str(name), str(type_), None if comment is None else str(comment))
        )
    return [
        Relation(
            str(name),
            str(kind),
            None if comment is None else str(comment),
            tuple(columns.get(str(name), ())),
        )
        for name, kind, comment in con.execute(_RELATIONS).fetchall()
    ]


def view_columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    """The columns a query of ``view`` returns now (the catalog's list is the one the view was
    created with: a ``SELECT *`` view misses columns its tables gained since)."""
    # The name comes from the catalog itself (relations()), not from input.
    query = 'SELECT * FROM "' + view.replace('"', '""') + '" LIMIT 0'  # noqa: S608
    return [str(d[0]) for d in con.execute(query).description or ()]
