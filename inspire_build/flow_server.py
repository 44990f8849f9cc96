"""The Prefect server that this process's flow runs report to: the one ``make serve`` runs, when
it answers, else a temporary one this process starts. Set through the environment, before
Prefect is imported (this package never imports it: flows/ does)."""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping
from pathlib import Path

from inspire_build import http, processes
from inspire_build.local_server import free_port

STARTUP_S = 180  # a temporary server takes about 19 s to start on a 2-core machine

# A temporary server's command line and the variables it adds to the environment, on a port.
ServerCommand = Callable[[int], tuple[list[str], dict[str, str]]]


def answers(api_url: str) -> bool:
    """Whether a Prefect server answers its health check at ``api_url``."""
    return http.health_ok(f"{api_url.rstrip('/')}/health")


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


def temporary_server(environ: MutableMapping[str, str], command: ServerCommand) -> str | None:
    """Start Prefect's temporary server (``command``) for this process's flow runs, when no
    server is set: in a session of its own, so that Ctrl-C in the terminal stops the build, not
    the server it must report the cancellation to. It stops when the process exits, after
    Prefect has sent its last logs (:func:`processes.start_server`). Returns the API URL (None:
    one was set already).

    Its runs get no UI URL (``PREFECT_UI_URL`` empty), so Prefect's flow engine prints no
    "View at http://127.0.0.1:PORT/runs/..." link to a server gone when the command ends; a
    server that was set (``make serve``, a deployment's) keeps its links."""
    if environ.get("PREFECT_API_URL"):
        return None
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    argv, added = command(port)
    processes.start_server(
        argv,
        {**os.environ, **environ, **added},
        lambda: answers(url),
        STARTUP_S,
        f"Prefect's temporary server did not start on port {port}",
    )
    environ["PREFECT_API_URL"] = url
    environ["PREFECT_UI_URL"] = ""  # read by prefect.utilities.urls.url_for: no link when empty
    return url
