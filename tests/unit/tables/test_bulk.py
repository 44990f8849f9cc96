"""tables/bulk.py: DuckDB's threads and checkpoint threshold set for a block and given back,
also when the block fails."""

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
    with bulk.setting(con, "threads", 1):
        assert _threads(con) == 1
    assert _threads(con) == 3
    with pytest.raises(RuntimeError), bulk.setting(con, "threads", 2):
        assert _threads(con) == 2
        raise RuntimeError("the ingest failed")
    assert _threads(con) == 3


def test_the_checkpoint_threshold_is_set_for_the_block_and_given_back() -> None:
    con = duckdb.connect()
    con.execute("SET checkpoint_threshold = '32MB'")

    def threshold() -> str:
        row = con.execute("SELECT current_setting('checkpoint_threshold')").fetchone()
        assert row is not None
        return str(row[0])

    before = threshold()
    with bulk.setting(con, "checkpoint_threshold", "1GB"):
        assert threshold() == "953.6 MiB"
    assert threshold() == before
    with pytest.raises(RuntimeError), bulk.setting(con, "checkpoint_threshold", "2GB"):
        raise RuntimeError("the ingest failed")
    assert threshold() == before
