"""The conformance tests replay real recordings that stay outside the repository: REAL, where
INSPIRE_SHARED_FIXTURES points, else the folder CI lays beside the clone (tests/conftest.py).
Without them every test here skips with one line naming what is missing; under CI (``CI=true``)
they fail instead, so that a CI machine without the recordings cannot pass by skipping them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REAL

__all__ = ["REAL"]


@pytest.fixture(scope="session", autouse=True)
def _real_recordings(real_recordings: Path) -> Path:
    """Session-scoped, so that it runs before any session fixture that reads REAL."""
    return real_recordings
