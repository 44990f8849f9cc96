"""An ASGI app served on 127.0.0.1 in a background thread (the sandbox and the tool server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


@contextmanager
def in_thread(app: ASGIApp, port: int = 0, what: str = "the server") -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (port 0 picks a free port)."""
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"{what} failed to start")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
