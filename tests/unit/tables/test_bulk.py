"""tables/bulk.py: DuckDB's threads set for a block and given back, also when the block fails."""

from __future__ import annotations

import duckdb
import pytest

from inspire_build.tables import bulk


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT current_setting('threads')").fetchone()
    assert row is not None
    return int(row[0])


def test_threads_are_set_for_the_block_and_given_back() -> None:
    con = duckdb.connect()
    con.execute("SET threads = 3")
    with bulk.threads(con, 1):
        assert _threads(con) == 1
    assert _threads(con) == 3
    with pytest.raises(RuntimeError), bulk.threads(con, 2):
        assert _threads(con) == 2
        raise RuntimeError("the ingest failed")
    assert _threads(con) == 3
