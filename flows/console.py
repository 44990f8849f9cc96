"""Prefect's console in our processes (the CLI's in-process flows, the served deployments)."""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from pathlib import Path

import httpx

from inspire_build.errors import InspireError


def answers(api_url: str) -> bool:
    """Whether a Prefect server answers its health check at ``api_url``."""
    try:
        return httpx.get(f"{api_url.rstrip('/')}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
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
        if record.exc_info and isinstance(record.exc_info[1], InspireError):
            record.exc_info, record.exc_text = None, None
        return True

    for logger in (logging.getLogger(), logging.getLogger("prefect")):
        for handler in logger.handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.addFilter(untraced)
