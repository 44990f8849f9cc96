"""The errors told in one line: also a DuckDB error that a signal's Cancelled caused (a Ctrl-C
that lands mid-query surfaces as ``RuntimeError: Query interrupted``, with the Cancelled as its
cause; CI once printed its traceback). A signal raises Cancelled, but never inside logging."""

from __future__ import annotations

import logging
import os
import signal
import sys

import pytest

from inspire_build import cancellation
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
    assert cancellation.told_in_one_line(raised_from(Cancelled("cancelled by SIGINT")))


@pytest.mark.parametrize("error", [raised_from(None), raised_from(ValueError("x")), None])
def test_other_errors_keep_their_traceback(error: BaseException | None) -> None:
    assert not cancellation.told_in_one_line(error)


def test_an_interrupted_query_after_a_signal_is_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cancellation, "_signalled", ["cancelled by SIGTERM"])
    assert cancellation.told_in_one_line(raised_from(None))
    assert str(cancellation.as_cancelled(RuntimeError("x"))) == "cancelled by SIGTERM"


def test_a_record_of_our_error_loses_its_traceback() -> None:
    def record(error: BaseException) -> logging.LogRecord:
        info = (type(error), error, error.__traceback__)
        return logging.LogRecord("prefect", logging.ERROR, __file__, 1, "failed", (), info)

    ours, theirs = record(raised_from(Cancelled("x"))), record(raised_from(ValueError("x")))
    assert cancellation.untraced(ours) and ours.exc_info is None
    assert cancellation.untraced(theirs) and theirs.exc_info is not None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_signal_cancels_the_block_and_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cancellation, "_signalled", [])
    before = signal.getsignal(signal.SIGTERM)
    assert not cancellation.signalled()
    cancellation.checkpoint()  # no signal yet: nothing raised
    with pytest.raises(Cancelled, match="cancelled by SIGTERM"), cancellation.cancel_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()  # the handler raises before this returns
    assert signal.getsignal(signal.SIGTERM) is before and cancellation.signalled()
    with pytest.raises(Cancelled, match="cancelled by SIGTERM"):
        cancellation.checkpoint()
    assert cancellation.as_cancelled(ValueError("x")).__class__ is Cancelled


def test_a_record_with_exc_info_and_no_exception_prints_no_nonetype_line() -> None:
    record = logging.LogRecord("prefect.task_runs", logging.ERROR, "f", 1, "failed", None, None)
    record.exc_info = (None, None, None)  # logger.error(..., exc_info=True) with none raised
    assert cancellation.untraced(record) and record.exc_info is None
    assert "NoneType" not in logging.Formatter().format(record)
