"""Prefect in our processes (the CLI's in-process flows, the served deployments): its server,
its SIGTERM handler and its console, wired to :mod:`inspire_build.cancellation` and
:mod:`inspire_build.flow_server`. The one module that relies on Prefect's private API, so it
holds for the Prefect that pyproject.toml pins only: with another, it fails at import. The one
module of the package that imports Prefect, and only as a function here runs (after
``use_project_prefect``): the rest of the package runs without it, and flows/ holds only the
flows, their tasks and their runners."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from inspire_build import cancellation, flow_server
from inspire_build.errors import Cancelled, InspireError

PINNED = "3.9"  # pyproject.toml: prefect>=3.9,<3.10
if not (found := importlib.metadata.version("prefect")).startswith(f"{PINNED}."):
    raise InspireError(
        f"inspire_build/prefect_runtime.py relies on the private API of Prefect {PINNED}, not "
        f"{found}'s: install the Prefect that pyproject.toml pins, or check this module against "
        "the new one"
    )


@contextlib.contextmanager
def in_process() -> Iterator[None]:
    """Flow runs in this process report to the project's Prefect (else a temporary server), and
    Ctrl-C or SIGTERM cancels them, SIGTERM also while a flow runs; our errors in one line."""
    flow_server.use_project_prefect(Path.cwd(), os.environ)
    with cancellation.cancel_on_signals():
        flow_server.temporary_server(os.environ, server_command)
        from prefect.utilities import engine  # private: the handler a running flow installs

        engine._prefect_sigterm_handler = cancellation.cancel  # type: ignore[assignment]
        one_line_errors_in_prefect_console()
        yield


def server_command(port: int) -> tuple[list[str], dict[str, str]]:
    """Prefect's temporary server on ``port``, started as Prefect starts its own (its private
    ``SubprocessASGIServer``): the command line, and the variables it adds (no UI)."""
    spec = importlib.util.find_spec("prefect")
    package = Path(spec.origin if spec and spec.origin else ".").parent
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(package.parent), "--factory",
               "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "error", "--lifespan", "on"]  # fmt: skip
    return command, {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"}


def _console_handlers() -> list[Any]:
    import prefect.main  # noqa: F401  (which sets up Prefect's logging, console handlers and all)
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = (logging.getLogger(), logging.getLogger("prefect"))
    return [h for g in loggers for h in g.handlers if isinstance(h, PrefectConsoleHandler)]


def one_line_errors_in_prefect_console() -> None:
    """Prefect's console repeats no traceback of the errors we tell in one line (the CLI's
    main(), or a served flow run's final state). Prefect's API handler sees a record first, so
    the Prefect UI still holds it."""
    for handler in _console_handlers():
        handler.addFilter(cancellation.untraced)


@contextlib.contextmanager
def printed_through(file: IO[str]) -> Iterator[None]:
    """Prefect's console handlers print through ``file`` while the block runs (the file of their
    rich console, which is not public), then through their own again."""
    handlers = _console_handlers()
    own = [handler.console.file for handler in handlers]
    for handler in handlers:
        handler.console.file = file
    try:
        yield
    finally:
        for handler, kept in zip(handlers, own, strict=True):
            handler.console.file = kept


def as_cancelled(error: BaseException) -> BaseException:
    """:func:`cancellation.as_cancelled`, and Prefect's TerminationSignal (a SIGTERM while a
    flow runs) as :class:`Cancelled` too."""
    from prefect.exceptions import TerminationSignal

    if isinstance(error, TerminationSignal):
        return Cancelled(f"cancelled by {signal.Signals(error.signal).name}")
    return cancellation.as_cancelled(error)


def outcome(state: Any) -> Any:
    """A flow run's result: Cancelled for a cancelled run, the flow's error for a failed one."""
    if state.is_cancelled():
        raise Cancelled(state.message or "cancelled")
    return state.result()
