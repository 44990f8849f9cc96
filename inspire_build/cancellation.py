"""Ctrl-C and SIGTERM cancel a build or an audit: they raise :class:`Cancelled` where it is, so
that its open transaction rolls back and it records itself cancelled, within seconds; and the
errors that are told in one line, with no traceback (:func:`told_in_one_line`).

Prefect knows nothing of this module: prefect_runtime.py wires it to Prefect (it makes the SIGTERM
handler of a running flow :func:`cancel`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

import duckdb

from inspire_build import warehouse
from inspire_build.errors import Cancelled, InspireError

_signalled: list[str] = []  # why this process was cancelled, once a signal came


@contextlib.contextmanager
def cancel_on_signals() -> Iterator[None]:
    """Ctrl-C (SIGINT) and SIGTERM raise :class:`Cancelled` (:func:`cancel`) while the block
    runs.

    Never inside logging, which would swallow it (its handlers catch every exception): there
    the signal is noted and sent again a moment later.
    """
    previous = {number: signal.signal(number, cancel) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def cancel(signum: int, frame: FrameType | None) -> None:
    """The signal handler: note the signal, and raise :class:`Cancelled` (outside logging)."""
    why = f"cancelled by {signal.Signals(signum).name}"
    if not _signalled:
        _signalled.append(why)
    if _inside_logging(frame):
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    raise Cancelled(_signalled[0])


def _inside_logging(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == logging.__file__:
            return True
        frame = frame.f_back
    return False


def checkpoint() -> None:
    """Raise :class:`Cancelled` if a signal came that something swallowed on its way (DuckDB
    may clear an exception raised while a query runs): the build stops at its next step."""
    if _signalled:
        raise Cancelled(_signalled[0])


def signalled() -> bool:
    """Whether a cancelling signal came (a loop that calls into C code polls this: DuckDB may
    swallow an exception raised while it runs)."""
    return bool(_signalled)


def as_cancelled(error: BaseException) -> BaseException:
    """The error a build stopped with, as :class:`Cancelled` when a signal stopped it: ours, or
    DuckDB's ``Query interrupted`` (a signal that landed mid-query). (A SIGTERM that Prefect's
    own handler turned into its TerminationSignal: prefect_runtime.py.)"""
    if isinstance(error, Cancelled):
        return error
    if _signalled or "Query interrupted" in str(error):
        return Cancelled(_signalled[-1] if _signalled else "cancelled by a signal")
    return error


def told_in_one_line(error: BaseException | None) -> bool:
    """An error we tell in one line: our own, or a state of the warehouse (locked, corrupt, a
    full disk) that :func:`warehouse.translate` names, or one that ours caused (a signal's
    Cancelled that DuckDB, mid-query, turned into ``Query interrupted``)."""
    while error is not None:
        if isinstance(error, InspireError):
            return True
        if isinstance(error, duckdb.Error) and warehouse.translate(error) is not None:
            return True
        if _signalled and "Query interrupted" in str(error):  # the cause may be cleared
            return True
        error = error.__cause__
    return False


def untraced(record: logging.LogRecord) -> bool:
    """A logging filter: a record of an error :func:`told_in_one_line` loses its traceback, and
    so does one logged with ``exc_info`` and no exception (Prefect's line for a task that
    returned a Failed state, which would print ``NoneType: None``)."""
    if record.exc_info and (record.exc_info[1] is None or told_in_one_line(record.exc_info[1])):
        record.exc_info, record.exc_text = None, None
    return True
