"""The HTTP server's connection limits (serving.py), against a real uvicorn server on loopback
with small configured timeouts: slow headers, oversized headers, idle keep-alive connections,
and a TLS client that never starts its handshake."""
from __future__ import annotations

import asyncio
import contextlib
import pathlib
import socket
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from kubeplane.utils.pki import ensure_pki
from kubeplane.apiserver.serving import Server, ServingOptions, send_whole

REQUEST = (b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow-client/1.0\r\n"
           b"Accept: application/json\r\nAuthorization: Bearer 0123456789abcdef0123456789abcdef\r\n\r\n")


async def ok_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


WHOLE: list[bool] = []          # what send_whole answered, per request to whole_app


async def whole_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers with send_whole, as the API server's front end does; the path picks the headers."""
    if scope["type"] != "http":
        return
    headers = {"/close": [(b"connection", b"close")], "/bad": [(b"x-bad", b"a\nb")]}.get(scope["path"], [])
    WHOLE.append(send_whole(send, 200, [(b"content-type", b"text/plain"), *headers], b"ok"))
    if not WHOLE[-1]:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


@contextlib.asynccontextmanager
async def serve(serving: ServingOptions, tls: pathlib.Path | None = None, bound: bool = False,
                app: Any = ok_app) -> AsyncIterator[int]:
    """A real server on a free loopback port; yields the port. `bound`: listen on a socket bound
    here and handed over (as `kubeplane up` does), instead of a host and port."""
    extra: dict[str, Any] = {}
    if tls is not None:
        pki = ensure_pki(tls, ["127.0.0.1"])
        extra = {"ssl_certfile": str(pki.server_cert), "ssl_keyfile": str(pki.server_key)}
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=serving.protocol(), lifespan="off",
                            log_level="warning", access_log=False, loop="none", timeout_graceful_shutdown=1, **extra)
    config.load()
    server = Server(config, serving=serving)
    server.lifespan = config.lifespan_class(config)
    sockets = [socket.create_server(("127.0.0.1", 0))] if bound else None
    await server.startup(sockets)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        await server.shutdown(sockets)


def closed(sock: socket.socket) -> bool:
    """Whether the server has closed the connection (without waiting)."""
    try:
        return sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def dribble(port: int, data: bytes, interval: float) -> int:
    """Send data one byte per interval; return how many bytes went out before the server hung up."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for i in range(len(data)):
            if closed(sock):
                return i
            try:
                sock.sendall(data[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                return i
            time.sleep(interval)
        return len(data)


def read_response(sock: socket.socket) -> bytes:
    """One response of ok_app (headers and its 2-byte body may come in separate reads)."""
    data = b""
    while not data.endswith(b"\r\n\r\nok"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def exchange(port: int, data: bytes) -> bytes:
    """Send data and read until the server closes the connection (or 10 s pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


async def test_a_client_dribbling_its_headers_is_disconnected() -> None:
    async with serve(ServingOptions(read_header_timeout=0.3)) as port:
        sent = await asyncio.to_thread(dribble, port, REQUEST, 0.02)
    assert sent < len(REQUEST)          # cut off before the headers could be completed


async def test_a_kept_alive_connection_dribbling_its_next_request_is_disconnected() -> None:
    """The deadline restarts with each request (the connection's timer was armed for the first)."""
    def second_dribbled(port: int) -> int:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(REQUEST)
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")
            sock.settimeout(None)         # blocking again: closed() peeks without waiting
            time.sleep(0.4)               # past the first request's header deadline: idle is allowed
            for i in range(len(REQUEST)):
                if closed(sock):
                    return i
                try:
                    sock.sendall(REQUEST[i:i + 1])
                except (BrokenPipeError, ConnectionResetError):
                    return i
                time.sleep(0.02)
            return len(REQUEST)

    async with serve(ServingOptions(read_header_timeout=0.3, idle_timeout=30)) as port:
        sent = await asyncio.to_thread(second_dribbled, port)
    assert 0 < sent < len(REQUEST)


async def test_headers_sent_in_time_are_answered_and_the_connection_kept() -> None:
    def two_requests(port: int) -> list[bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            answers = []
            for _ in range(2):
                sock.sendall(REQUEST)
                answers.append(read_response(sock))
                time.sleep(0.6)         # idle longer than the header timeout: only the idle timeout applies
            return answers

    async with serve(ServingOptions(read_header_timeout=0.3, idle_timeout=30)) as port:
        answers = await asyncio.to_thread(two_requests, port)
    assert all(a.startswith(b"HTTP/1.1 200 ") and a.endswith(b"ok") for a in answers)


async def test_an_idle_kept_alive_connection_is_closed() -> None:
    def idle(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(REQUEST)
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")
            return sock.recv(65536)     # blocks until the server closes the idle connection

    async with serve(ServingOptions(idle_timeout=0.3)) as port:
        assert await asyncio.to_thread(idle, port) == b""


async def test_the_idle_deadline_moves_with_each_response() -> None:
    """One idle timer per connection: when it fires after a later response it waits for that
    response's deadline instead of closing a connection that was busy in between."""
    def busy_then_idle(port: int) -> tuple[list[bytes], bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            answers = []
            for _ in range(4):             # 0.6 s of requests, each 0.15 s after the last answer
                sock.sendall(REQUEST)
                answers.append(read_response(sock))
                time.sleep(0.15)
            return answers, sock.recv(65536)     # then idle until the server closes it

    async with serve(ServingOptions(idle_timeout=0.3)) as port:
        answers, last = await asyncio.to_thread(busy_then_idle, port)
    assert all(a.startswith(b"HTTP/1.1 200 ") for a in answers) and last == b""


async def test_a_whole_response_is_one_write_with_its_length_and_keeps_the_connection() -> None:
    def three(port: int) -> list[bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            out = []
            for path in (b"/a", b"/b", b"/close"):
                sock.sendall(REQUEST.replace(b"/version", path))
                out.append(read_response(sock))
            out.append(sock.recv(65536))         # closed after the "connection: close" answer
            return out

    WHOLE.clear()
    async with serve(ServingOptions(), app=whole_app) as port:
        a, b, last, after = await asyncio.to_thread(three, port)
    assert WHOLE == [True, True, True]
    head, _, body = a.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and body == b"ok"
    assert b"\r\ncontent-length: 2" in head and b"transfer-encoding" not in head
    assert b == a                                # the connection was kept for the next request
    assert b"\r\nconnection: close\r\n" in last and after == b""


async def test_a_header_value_uvicorn_would_refuse_is_not_written_by_send_whole() -> None:
    def bad(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(REQUEST.replace(b"/version", b"/bad"))
            return read_response(sock)

    WHOLE.clear()
    async with serve(ServingOptions(), app=whole_app) as port:
        answer = await asyncio.to_thread(bad, port)
    assert WHOLE == [False] and b"x-bad" not in answer and answer.endswith(b"ok")


async def test_oversized_headers_get_431() -> None:
    big = b"GET /version HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n"
    async with serve(ServingOptions(max_header_bytes=1024)) as port:
        answer = await asyncio.to_thread(exchange, port, big)
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert answer.endswith(b"\r\n\r\n431 Request Header Fields Too Large")


async def test_an_endless_header_gets_431_before_it_ends() -> None:
    """httptools holds a header until it ends: the bytes received so far are counted too."""
    endless = b"GET /version HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000     # no end of line yet
    async with serve(ServingOptions(max_header_bytes=1024)) as port:
        answer = await asyncio.to_thread(exchange, port, endless)
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")


async def test_headers_under_the_limit_are_served() -> None:
    request = b"GET /version HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 3000 + b"\r\nConnection: close\r\n\r\n"
    async with serve(ServingOptions(max_header_bytes=4096)) as port:
        answer = await asyncio.to_thread(exchange, port, request)
    assert answer.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("bound", [False, True], ids=["host-port", "bound-socket"])
async def test_a_tls_client_that_never_starts_its_handshake_is_dropped(tmp_path: pathlib.Path, bound: bool) -> None:
    def silent(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            return sock.recv(65536)     # nothing sent: the server's handshake timeout closes it

    async with serve(ServingOptions(tls_handshake_timeout=0.3), tls=tmp_path, bound=bound) as port:
        assert await asyncio.to_thread(silent, port) == b""


async def test_tls_clients_are_still_served(tmp_path: pathlib.Path) -> None:
    def get(port: int) -> bytes:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "pki" / "ca.crt"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            sock.sendall(REQUEST)
            return read_response(sock)

    async with serve(ServingOptions(tls_handshake_timeout=5.0, read_header_timeout=5.0), tls=tmp_path) as port:
        assert (await asyncio.to_thread(get, port)).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("field", ["read_header_timeout", "idle_timeout", "max_header_bytes", "tls_handshake_timeout"])
def test_defaults_are_upstreams(field: str) -> None:
    """secure_serving.go: ReadHeaderTimeout 32 s, IdleTimeout 90 s, MaxHeaderBytes 1 MiB."""
    expected = {"read_header_timeout": 32.0, "idle_timeout": 90.0, "max_header_bytes": 1 << 20,
                "tls_handshake_timeout": 32.0}
    assert getattr(ServingOptions(), field) == expected[field]


class RecordingTransport:
    """The bits of an asyncio transport CoalescingTransport uses, recording each write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


async def test_a_response_head_and_body_go_out_in_one_write() -> None:
    from kubeplane.apiserver.serving import CoalescingTransport
    raw = RecordingTransport()
    t = CoalescingTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"HTTP/1.1 200 OK\r\n\r\n")
    t.write(b"body")
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    t.write(b"HTTP/1.1 200 OK\r\n\r\n")            # a streamed response's head: out on the next turn
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    await asyncio.sleep(0)
    assert raw.writes[1:] == [b"HTTP/1.1 200 OK\r\n\r\n"]
    t.write(b"last")
    t.close()                                      # what is held goes out before the close
    assert raw.writes[2:] == [b"last"] and raw.closed
    await asyncio.sleep(0)
    assert len(raw.writes) == 3                    # the pending flush finds nothing held
    assert t.get_extra_info("peername") == "info:peername"


async def test_a_served_response_arrives_whole_with_coalescing() -> None:
    def three_requests(port: int) -> list[bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            out = []
            for _ in range(3):                     # kept alive: several requests, one after the other
                sock.sendall(REQUEST)
                out.append(read_response(sock))
            return out

    async with serve(ServingOptions()) as port:
        answers = await asyncio.to_thread(three_requests, port)
    assert all(a.startswith(b"HTTP/1.1 200 OK") and a.endswith(b"\r\n\r\nok") for a in answers), answers
