"""inspire_build/prefect_runtime.py, the one module that relies on Prefect's private API: it
holds for the pinned Prefect only, and says so in one line with another; a SIGTERM while a flow
runs cancels it as Ctrl-C does; Prefect's console prints through another file for a while (the
progress bars)."""

from __future__ import annotations

import io
import logging
import os
import re
import runpy
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from inspire_build import cancellation, prefect_runtime
from inspire_build.errors import Cancelled, InspireError

ROOT = Path(__file__).resolve().parents[2]


def test_the_guard_names_the_pin_of_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [d for d in project["dependencies"] if re.match(r"prefect\b", d)]
    pinned = prefect_runtime.PINNED
    assert pin == f"prefect>={pinned},<3.{int(pinned.split('.')[1]) + 1}"


def test_another_prefect_is_refused_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.metadata.version", lambda name: "3.10.0")
    with pytest.raises(InspireError, match=r"private API of Prefect 3\.9, not 3\.10\.0's"):
        runpy.run_path(str(ROOT / "inspire_build" / "prefect_runtime.py"))


def test_a_sigterm_while_a_flow_runs_cancels_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.exceptions import TerminationSignal
    from prefect.utilities import engine

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # no temporary server
    monkeypatch.setattr(engine, "_prefect_sigterm_handler", engine._prefect_sigterm_handler)
    with prefect_runtime.in_process():
        assert engine._prefect_sigterm_handler is cancellation.cancel
    stopped = prefect_runtime.as_cancelled(TerminationSignal(signal=signal.SIGTERM))
    assert isinstance(stopped, Cancelled) and str(stopped) == "cancelled by SIGTERM"


def test_the_temporary_server_is_prefects_own() -> None:
    command, added = prefect_runtime.server_command(4321)
    assert "prefect.server.api.server:create_app" in command and "4321" in command
    assert added == {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"}


def test_prefects_console_prints_through_a_file_for_a_while() -> None:
    from prefect.logging.handlers import PrefectConsoleHandler

    handler = PrefectConsoleHandler(stream=io.StringIO())
    logging.getLogger("prefect").addHandler(handler)
    try:
        own, elsewhere = handler.console.file, io.StringIO()
        with prefect_runtime.printed_through(elsewhere):
            assert handler.console.file is elsewhere
        assert handler.console.file is own
    finally:
        logging.getLogger("prefect").removeHandler(handler)


IN_A_FRESH_PROCESS = """
import logging
from inspire_build import prefect_runtime
from inspire_build import cancellation
with prefect_runtime.in_process():
    pass
handlers = logging.getLogger().handlers + logging.getLogger("prefect").handlers
consoles = [h for h in handlers if type(h).__name__ == "PrefectConsoleHandler"]
print(len(consoles), all(cancellation.untraced in h.filters for h in consoles))
"""


def test_our_errors_are_one_line_in_the_console_of_a_fresh_process() -> None:
    """Prefect sets up its console handlers lazily: in_process must find them all the same."""
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = subprocess.run(
        [sys.executable, "-c", IN_A_FRESH_PROCESS],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["1", "True"], done.stderr[-2000:]
