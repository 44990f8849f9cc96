"""A server in a child process that lives no longer than this one: started in a session of its
own (Ctrl-C in the terminal reaches this process, not the server), stopped when this process
exits, and sent SIGTERM by the kernel should this process die without exiting (Linux)."""

from __future__ import annotations

import atexit
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from inspire_build.errors import InspireError


def start_server(
    command: Sequence[str],
    env: Mapping[str, str],
    answers: Callable[[], bool],
    startup_s: float,
    failed: str,
) -> subprocess.Popen[bytes]:
    """Start ``command`` and wait until ``answers()``; :class:`InspireError` (``failed``) if it
    exits first or takes longer than ``startup_s``. It is stopped at exit, by a handler
    registered now: after those registered later (Prefect's, which send its last logs)."""
    server = subprocess.Popen(
        list(command),
        env=dict(env),
        start_new_session=True,
        preexec_fn=ends_with_parent if sys.platform == "linux" else None,
    )
    atexit.register(stop, server)
    deadline = time.monotonic() + startup_s
    while not answers():
        if server.poll() is not None or time.monotonic() > deadline:
            raise InspireError(failed)
        time.sleep(0.5)
    return server


def ends_with_parent() -> None:
    """In a child process: SIGTERM when its parent dies, even by SIGKILL (Linux)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop(server: subprocess.Popen[bytes]) -> None:
    """Terminate ``server``; kill it if it has not ended 10 s later."""
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
