"""apiserver/upgrade.py on the real front end: an upgrade request runs through the app like any
other; a handler may take the connection over (and the bytes the client sent after its headers
come with it), or answer as usual, after which the connection is closed."""
from __future__ import annotations

import asyncio
import socket
from typing import Any

from kubeplane.apiserver.serving import ServingOptions
from kubeplane.apiserver.upgrade import HIJACK_SCOPE_KEY

from test_serving import exchange, serve

UPGRADE = (b"GET /x?command=a&command=b HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
           b"\r\n")


ECHOES: set[asyncio.Future[None]] = set()


async def hijacking_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """/x takes the connection: answers 101, then echoes what it reads, upper-cased; anything
    else answers 200 "ok"."""
    if scope["type"] != "http":
        return
    hijack = scope.get(HIJACK_SCOPE_KEY)
    if scope["path"] != "/x" or hijack is None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    assert hijack.raw_query == "command=a&command=b"
    conn = hijack()

    async def echo() -> None:
        conn.write(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
        while data := await conn.read():
            conn.write(data.upper())
            await conn.drain()
        conn.close()
    ECHOES.add(asyncio.ensure_future(echo()))
    await send({"type": "http.response.start", "status": 500, "headers": []})   # dropped: the connection is taken


async def test_a_handler_takes_the_connection_with_the_bytes_after_the_headers() -> None:
    async with serve(ServingOptions(), app=hijacking_app) as port:
        def talk() -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(UPGRADE + b"early ")          # sent before any answer
                got = b""
                while b"EARLY " not in got:
                    got += sock.recv(65536)
                sock.sendall(b"later")
                while b"LATER" not in got:
                    got += sock.recv(65536)
                return got
        got = await asyncio.to_thread(talk)
    assert got == b"HTTP/1.1 101 Switching Protocols\r\n\r\nEARLY LATER"


async def test_an_upgrade_request_answered_as_usual_closes_the_connection() -> None:
    async with serve(ServingOptions(), app=hijacking_app) as port:
        request = UPGRADE.replace(b"/x?", b"/other?") + b"GET /other HTTP/1.1\r\nHost: h\r\n\r\n"
        got = await asyncio.to_thread(exchange, port, request)
    assert got.startswith(b"HTTP/1.1 200 OK") and got.endswith(b"ok") and got.count(b"HTTP/1.1") == 1
    assert b"connection: close" in got.lower()


async def test_a_taken_over_connection_is_closed_when_the_server_stops() -> None:
    sock = None
    async with serve(ServingOptions(), app=hijacking_app) as port:
        def open_session() -> socket.socket:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(UPGRADE + b"ping")
            got = b""
            while b"PING" not in got:
                got += s.recv(65536)
            return s
        sock = await asyncio.to_thread(open_session)
    try:                                  # the server has stopped: the session's connection with it
        rest = await asyncio.to_thread(sock.recv, 65536)
        assert rest == b""
    finally:
        sock.close()


class UvicornWebSocketProtocol:
    """Stands for uvicorn's WebSocket protocol, as were `websockets` or `wsproto` installed."""

    def __init__(self, **kwargs: Any) -> None:
        raise AssertionError("uvicorn's WebSocket protocol took the upgrade")


async def test_an_upgrade_reaches_the_app_even_where_uvicorn_has_a_websocket_library(monkeypatch: Any) -> None:
    import uvicorn.protocols.websockets.auto as auto
    monkeypatch.setattr(auto, "AutoWebSocketsProtocol", UvicornWebSocketProtocol)   # ws="auto" picks it
    async with serve(ServingOptions(), app=hijacking_app) as port:
        def talk() -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(UPGRADE + b"hi")
                got = b""
                while b"HI" not in got and (chunk := sock.recv(65536)):
                    got += chunk
                return got
        got = await asyncio.to_thread(talk)
    assert got == b"HTTP/1.1 101 Switching Protocols\r\n\r\nHI"
