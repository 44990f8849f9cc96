"""An ASGI app served on 127.0.0.1 in a background thread (the sandbox and the tool server),
and the listening socket a foreground server is handed (:func:`bind`), and a free port for a
child process (:func:`free_port`); and what the review pages and the tool server share: the Host
check (:func:`refuse_foreign_hosts`) and the request body limit (:class:`BodyLimit`)."""

from __future__ import annotations

import errno
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inspire_build.errors import InspireError

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")  # the Host headers a local server answers
MAX_BODY_BYTES = 1_000_000  # 1 MB: the request body a local server reads, unless told
# How long an idle connection stays open. uvicorn's 5 s closed connections that a client's pool
# was reusing at that moment: a burst of requests every ~5 s (a build's search checks) met
# ConnectionErrors and retried.
KEEP_ALIVE_S = 75


def refuse_foreign_hosts(app: Starlette, allowed_hosts: Sequence[str] = LOOPBACK) -> None:
    """Answer 400 to a request whose Host header is not one of ``allowed_hosts`` (its port
    aside), before anything else reads it: a web page that rebinds its own name to 127.0.0.1
    (DNS rebinding) then reaches nothing. Add it last, so that it runs first."""
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 before it is parsed,
    by its Content-Length and by the bytes that actually arrive (chunked bodies have none).

    The rest of a refused body is read and dropped, up to ``DRAIN_BYTES``, so that the client
    gets its answer rather than a reset connection; past that the connection is closed.
    """

    DRAIN_BYTES = 16 * MAX_BODY_BYTES

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await _drain(receive, 0, self.DRAIN_BYTES)
            await _too_large(send, self.limit)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                if message.get("more_body", False):
                    await _drain(receive, size, self.DRAIN_BYTES)
                await _too_large(send, self.limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _drain(receive: Receive, size: int, cap: int) -> None:
    """Read and drop the rest of a request body, until it ends or ``cap`` bytes have come."""
    while size <= cap:
        message = await receive()
        if message["type"] != "http.request":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _too_large(send: Send, limit: int) -> None:
    payload = f'{{"error": "the request body is over {limit:,} bytes"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def free_port() -> int:
    """A port free on 127.0.0.1 now (for a child process to bind; the usual small race)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def in_thread(app: ASGIApp, port: int = 0, what: str = "the server") -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (port 0 picks a free port)."""
    sock = bind(port)  # with TCP_NODELAY, as every server here
    server = uvicorn.Server(_config(app, "127.0.0.1", port, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
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
        sock.close()


def bind(port: int, host: str = "127.0.0.1") -> socket.socket:
    """A socket bound to ``host``:``port`` (0 picks a free one) for :func:`serve_on`.

    Binding first, before anything is printed or loaded, makes a busy port one clear error
    (an :class:`InspireError`, exit 1) instead of uvicorn's startup failure, and leaves no
    moment in which another process can take the port between a check and the server's start.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restarts
    # Accepted connections inherit it: uvicorn writes a response's head and body apart, and
    # with Nagle's algorithm the body waits for the head's ACK, which the client delays 40 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as error:
        sock.close()
        if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
            reason = "is in use"
        else:
            reason = f"cannot be used ({getattr(error, 'strerror', None) or error})"
        raise InspireError(f"port {port} on {host} {reason}; choose another with --port") from error
    return sock


def serve_on(app: ASGIApp, sock: socket.socket) -> None:
    """Serve ``app`` in the foreground on a socket from :func:`bind` until interrupted.

    uvicorn shuts down on SIGTERM, then raises the signal again for its old handler: Python's
    default one would end the process at once, with no ``finally`` run (an env server's key
    file stayed behind). Here it exits as SIGTERM's exit status says, cleaning up on the way."""
    host, port = sock.getsockname()[:2]
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        uvicorn.Server(_config(app, host, port)).run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, _: object) -> None:
    raise SystemExit(128 + signum)


def _config(app: ASGIApp, host: str, port: int, **more: Any) -> uvicorn.Config:
    """Every local server's settings: quiet, and idle connections kept :data:`KEEP_ALIVE_S`."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=KEEP_ALIVE_S,
        **more,
    )
