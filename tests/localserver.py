"""A real HTTP server on 127.0.0.1 for tests: scripted answers, and a log of what arrived."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit


@dataclasses.dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    query: list[tuple[str, str]]
    raw_target: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclasses.dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False  # close the connection without answering


Handler = Callable[[Seen], Reply]


class LocalServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                seen = Seen(
                    self.command,
                    parts.path,
                    parse_qsl(parts.query, keep_blank_values=True),
                    self.path,
                    dict(self.headers),
                    body,
                    time.monotonic(),
                )
                with outer._lock:
                    outer.seen.append(seen)
                reply = outer.handler(seen)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[LocalServer]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
