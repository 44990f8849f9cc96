"""Prefect's console tells our errors in one line: also a DuckDB error that a signal's Cancelled
caused (a Ctrl-C that lands mid-query surfaces as ``RuntimeError: Query interrupted``, with the
Cancelled as its cause; CI once printed its traceback)."""

from __future__ import annotations

import pytest

from flows import console
from inspire_build.errors import Cancelled


def raised_from(cause: BaseException | None) -> BaseException:
    try:
        try:
            if cause is not None:
                raise cause
            raise RuntimeError("Query interrupted")
        except BaseException as inner:
            if cause is None:
                raise
            raise RuntimeError("Query interrupted") from inner
    except BaseException as outer:
        return outer


def test_an_error_our_cancellation_caused_is_ours() -> None:
    assert console._ours(raised_from(Cancelled("cancelled by SIGINT")))


@pytest.mark.parametrize("error", [raised_from(None), raised_from(ValueError("x")), None])
def test_other_errors_keep_their_traceback(error: BaseException | None) -> None:
    assert not console._ours(error)


def test_an_interrupted_query_after_a_signal_is_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "_signalled", ["cancelled by SIGTERM"])
    assert console._ours(raised_from(None))
