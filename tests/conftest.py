"""Shared fixtures. Unit tests run on in-memory DuckDB and never touch the network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from inspire_build import warehouse

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = PROJECT_ROOT.parent / "shared" / "fixtures"


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """A migrated in-memory warehouse."""
    connection = warehouse.connect(":memory:")
    warehouse.migrate(connection)
    yield connection
    connection.close()


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never see the developer's INSPIRE_* variables or keys, nor settings another test
    read: the process-wide settings are read afresh in each test that asks for them."""
    import os

    from inspire_build.config import get_settings

    for name in list(os.environ):
        if name.startswith("INSPIRE_"):
            monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()
