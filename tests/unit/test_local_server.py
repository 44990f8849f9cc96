"""The servers here (the sandbox, the tool and review servers) answer without Nagle's delay and
keep an idle connection open past uvicorn's 5 s, and the tool and review servers refuse a body
over their limit (:class:`BodyLimit`)."""

from __future__ import annotations

import http.client
import socket
import time

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from inspire_build.local_server import MAX_BODY_BYTES, BodyLimit, bind, in_thread


def test_a_bound_servers_connections_send_without_nagles_delay() -> None:
    """uvicorn writes a response's head and its body apart; under Nagle's algorithm the body
    waits for the head's ACK, which the client delays 40 ms (every sandbox answer took 40 ms
    more before). The listening socket's TCP_NODELAY is inherited by what it accepts."""
    listening = bind(0)
    listening.listen()
    with socket.create_connection(listening.getsockname()[:2]):
        accepted, _ = listening.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    listening.close()


def test_an_idle_connection_is_still_open_after_six_seconds() -> None:
    """A client's pool reuses a connection that sat idle; with uvicorn's 5 s keep-alive the
    server closed it, at times just as a request went out (a ConnectionError and a retry, a
    dozen times in a demo). Six seconds on, the same connection still answers."""

    async def ok(_: Request) -> Response:
        return Response(b"ok")

    with in_thread(Starlette(routes=[Route("/", ok)])) as base:
        host, port = base.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        for wait in (0, 6):
            time.sleep(wait)
            connection.request("GET", "/")
            assert connection.getresponse().read() == b"ok"
        connection.close()


def _echo_behind(limit: int) -> TestClient:
    async def echo(request: Request) -> Response:
        return Response(await request.body())

    app = Starlette(routes=[Route("/", echo, methods=["POST"])])
    app.add_middleware(BodyLimit, limit=limit)
    return TestClient(app)


def test_a_body_within_the_limit_passes_whole() -> None:
    client = _echo_behind(10)
    assert client.post("/", content=b"0123456789").content == b"0123456789"
    assert client.post("/", content=iter([b"01234", b"56789"])).content == b"0123456789"


def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    client = _echo_behind(10)
    declared = client.post("/", content=b"01234567890")  # by its Content-Length
    streamed = client.post("/", content=iter([b"012345", b"67890"]))  # chunked: by its bytes
    for answer in (declared, streamed):
        assert answer.status_code == 413
        assert answer.json() == {"error": "the request body is over 10 bytes"}
    assert BodyLimit.DRAIN_BYTES == 16 * MAX_BODY_BYTES
