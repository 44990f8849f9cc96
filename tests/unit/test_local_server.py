"""The servers here (the sandbox, the tool and review servers) answer without Nagle's delay."""

from __future__ import annotations

import socket

from inspire_build.local_server import bind


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
