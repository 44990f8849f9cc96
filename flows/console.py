"""Prefect's console in our processes (the CLI's in-process flows, the served deployments)."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from types import FrameType
from typing import Any

import duckdb
import httpx

from inspire_build import warehouse
from inspire_build.errors import Cancelled, InspireError
from inspire_build.local_server import free_port

STARTUP_S = 180  # a temporary server takes about 19 s to start on a 2-core machine


def answers(api_url: str) -> bool:
    """Whether a Prefect server answers its health check at ``api_url``."""
    try:
        return httpx.get(f"{api_url.rstrip('/')}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _ours(error: BaseException | None) -> bool:
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


def use_project_prefect(
    root: Path, environ: MutableMapping[str, str], healthy: Callable[[str], bool] = answers
) -> str | None:
    """Point this process's flow runs at the project's Prefect, before Prefect is imported.

    The server ``make serve`` runs (``run/prefect.env``), when it answers: the runs then show in
    its UI and no temporary server starts. Else the project's ``PREFECT_HOME`` (``.prefect``)
    for Prefect's temporary server, not ``~/.prefect``. Variables already set win. Returns the
    API URL used, if any.
    """
    if environ.get("PREFECT_API_URL"):
        return environ["PREFECT_API_URL"]
    served = root / "run" / "prefect.env"
    if served.is_file():
        lines = served.read_text(encoding="utf-8").splitlines()
        values = dict(line.removeprefix("export ").split("=", 1) for line in lines if "=" in line)
        url = values.get("PREFECT_API_URL", "")
        if url and healthy(url):
            environ["PREFECT_API_URL"] = url
            environ.setdefault("PREFECT_HOME", values.get("PREFECT_HOME") or str(root / ".prefect"))
            return url
    environ.setdefault("PREFECT_HOME", str(root / ".prefect"))
    return None


def one_line_errors_in_prefect_console() -> None:
    """Our errors are told in one line (by the CLI's main(), or by the flow run's final state in
    a served process); Prefect's console repeats no traceback of them.

    Prefect's API handler (on the flow- and task-run loggers) sees a record before the console
    handler (on "prefect" and the root) does, so the Prefect UI still holds the traceback.
    """
    from prefect.logging.handlers import PrefectConsoleHandler

    def untraced(record: logging.LogRecord) -> bool:
        if record.exc_info and _ours(record.exc_info[1]):
            record.exc_info, record.exc_text = None, None
        return True

    for logger in (logging.getLogger(), logging.getLogger("prefect")):
        for handler in logger.handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.addFilter(untraced)


def temporary_server(environ: MutableMapping[str, str]) -> str | None:
    """Start Prefect's temporary server for this process's flow runs, when no server is set:
    in a session of its own, so that Ctrl-C in the terminal stops the build, not the server it
    must report the cancellation to. It stops when the process exits, after Prefect has sent
    its last logs. Returns the API URL (None: one was set already).

    Its runs get no UI URL (``PREFECT_UI_URL`` empty), so Prefect's flow engine prints no
    "View at http://127.0.0.1:PORT/runs/..." link to a server gone when the command ends; a
    server that was set (``make serve``, a deployment's) keeps its links."""
    if environ.get("PREFECT_API_URL"):
        return None
    port = free_port()
    spec = importlib.util.find_spec("prefect")
    package = Path(spec.origin if spec and spec.origin else ".").parent
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(package.parent), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "error", "--lifespan", "on"],
        env={**os.environ, **environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"},
        start_new_session=True,
        preexec_fn=_ends_with_parent if sys.platform == "linux" else None,
    )  # fmt: skip
    atexit.register(_stop, server)  # registered before Prefect's own: it runs after them
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + STARTUP_S
    while not answers(url):
        if server.poll() is not None or time.monotonic() > deadline:
            raise InspireError(f"Prefect's temporary server did not start on port {port}")
        time.sleep(0.5)
    environ["PREFECT_API_URL"] = url
    environ["PREFECT_UI_URL"] = ""  # read by prefect.utilities.urls.url_for: no link when empty
    return url


def _ends_with_parent() -> None:
    """In the server's process: SIGTERM when its parent dies, even by SIGKILL (Linux)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


@contextlib.contextmanager
def cancel_on_signals() -> Iterator[None]:
    """Ctrl-C (SIGINT) and SIGTERM raise :class:`Cancelled` where the build is, so that its
    open transaction rolls back and it records itself cancelled, within seconds.

    Never inside logging, which would swallow it (its handlers catch every exception): there
    the signal is noted and sent again a moment later. Prefect's flow engine installs its own
    SIGTERM handler while a flow runs (it would end the run Crashed); :func:`_take_sigterm`
    makes it this one.
    """
    previous = {
        number: signal.signal(number, _cancel) for number in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _cancel(signum: int, frame: FrameType | None) -> None:
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


def take_sigterm() -> None:
    """While a flow runs, Prefect's engine puts its own SIGTERM handler in place; make that
    handler ours, so a SIGTERM cancels the build as Ctrl-C does."""
    from prefect.utilities import engine

    engine._prefect_sigterm_handler = _cancel  # type: ignore[assignment]


_signalled: list[str] = []  # why this process was cancelled, once a signal came


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
    """The error a build stopped with, as :class:`Cancelled` when a signal stopped it: ours,
    Prefect's TerminationSignal (SIGTERM while a flow runs), or DuckDB's ``Query interrupted``
    (a signal that landed mid-query)."""
    from prefect.exceptions import TerminationSignal  # not at import: Prefect reads its
    # settings when first imported, after use_project_prefect has set them

    if isinstance(error, Cancelled):
        return error
    if isinstance(error, TerminationSignal):
        return Cancelled(f"cancelled by {signal.Signals(error.signal).name}")
    if _signalled or "Query interrupted" in str(error):
        return Cancelled(_signalled[-1] if _signalled else "cancelled by a signal")
    return error


def outcome(state: Any) -> Any:
    """A flow run's result: Cancelled for a cancelled run, the flow's error for a failed one."""
    if state.is_cancelled():
        raise Cancelled(state.message or "cancelled")
    return state.result()
