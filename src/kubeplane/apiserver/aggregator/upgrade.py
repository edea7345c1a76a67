"""Upgrade requests (WebSocket, SPDY) to an aggregated API: the connection is tunnelled to the
backend once it agrees to switch protocols.

The request goes to the backend as sent (Connection: Upgrade, Upgrade: ...), with the front-proxy
identity headers set on it ahead of time and the client's own credentials and identity headers
dropped, over a TLS connection verified as for any proxied request. If the backend answers 101
Switching Protocols, its answer is written to the client and from then on bytes are copied both
ways until either side closes, with back-pressure (a side that cannot keep up pauses the other's
reading). Any other answer is the response, as the backend sent it (bounded to MAX_BODY).
Over the in-process transport there is no connection to take: the request is proxied as a plain
one.

Upstream: UpgradeAwareHandler.tryUpgrade (apimachinery pkg/util/proxy/upgradeaware.go), with the
auth proxy headers set on the request first (handler_proxy.go: "If we are upgrading, then the
upgrade path tries to use this request with the TLS config we provide, but it does NOT use the
proxyRoundTripper").
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from urllib.parse import urlencode

from ..codec import MAX_BODY
from ..request import Request, Response
from .proxy import CONNECT_TIMEOUT, Backend, describe, forwarded_headers, plain
from .resolver import host_port

log = logging.getLogger(__name__)

HEAD_TIMEOUT = 30.0               # seconds for the backend's answer to the upgrade
CHUNK = 64 * 1024
HIGH_WATER = 1 << 20              # bytes buffered towards the backend before the client is paused
Hijack = Callable[[asyncio.Protocol], asyncio.Transport]


def wants_upgrade(req: Request) -> bool:
    return "upgrade" in req.headers.get("connection", "").lower() and bool(req.headers.get("upgrade"))


def request_head(req: Request, address: tuple[str, int]) -> bytes:
    target = req.path + ("?" + urlencode(sorted(req.query.items())) if req.query else "")
    lines = [f"{req.method} {target} HTTP/1.1", f"Host: {host_port(*address)}",
             "Connection: Upgrade", f"Upgrade: {req.headers['upgrade']}"]
    lines += [f"{k}: {v}" for k, v in forwarded_headers(req) if "\r" not in v and "\n" not in v]
    if req.body:
        lines.append(f"Content-Length: {len(req.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + req.body


class ClientSide(asyncio.Protocol):
    """The hijacked client connection: its bytes go to the backend; its write pressure pauses
    the copy from the backend."""

    def __init__(self, backend: asyncio.StreamWriter) -> None:
        self.backend = backend
        self.transport: asyncio.Transport | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.closed = asyncio.Event()
        self.draining: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.backend.write(data)
        if self.transport is not None and self.backend.transport.get_write_buffer_size() > HIGH_WATER:
            self.transport.pause_reading()
            if self.draining is None or self.draining.done():
                self.draining = asyncio.ensure_future(self._resume_when_drained())

    async def _resume_when_drained(self) -> None:
        try:
            await self.backend.drain()
        except (ConnectionError, OSError):
            return
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def eof_received(self) -> bool | None:
        if self.backend.can_write_eof():
            self.backend.write_eof()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self.writable.set()
        self.backend.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: ClientSide) -> None:
    """Copy the backend's bytes to the client until either side ends, then close both."""
    transport = client.transport
    assert transport is not None
    try:
        while not client.closed.is_set():
            chunk = await reader.read(CHUNK)
            if not chunk:
                break
            await client.writable.wait()
            if client.closed.is_set():
                break
            transport.write(chunk)
    except (ConnectionError, OSError, ssl.SSLError) as e:
        log.info("Error proxying data from backend to client: %s", e)
    finally:
        transport.close()
        writer.close()


async def proxy_upgrade(backend: Backend, address: tuple[str, int], req: Request, hijack: Hijack,
                        tunnels: set[asyncio.Future[None]]) -> Response:
    """Dial the backend, send the upgrade request, and tunnel on 101 (the returned 101 response
    tells the front end that the connection is answered); otherwise its answer."""
    host, port = address
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(
            host, port, ssl=backend.ssl or True, server_hostname=backend.server_hostname, limit=CHUNK),
            CONNECT_TIMEOUT)
    except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
        return plain(503, f"error trying to reach service: {describe(e)}")
    try:
        writer.write(request_head(req, address))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            ssl.SSLError, ValueError, IndexError) as e:
        writer.close()
        return plain(503, f"error trying to reach service: {describe(e) if isinstance(e, OSError) else e}")
    if status != 101:
        return await _plain_answer(status, header_lines, reader, writer)
    client = ClientSide(writer)
    transport = hijack(client)
    client.transport = transport
    transport.write(head)              # what the backend sent after it is still in reader: the pump copies it
    task = asyncio.ensure_future(_pump(reader, writer, client))
    tunnels.add(task)
    task.add_done_callback(tunnels.discard)
    return Response(101)


async def _plain_answer(status: int, header_lines: list[str], reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> Response:
    """The backend refused to switch: its answer as a response (the body bounded)."""
    headers = [tuple(h.split(":", 1)) for h in header_lines if ":" in h]
    fields = {k.strip().lower(): v.strip() for k, v in headers}
    try:
        if (length := fields.get("content-length")) is not None:
            body = await asyncio.wait_for(reader.readexactly(min(int(length), MAX_BODY)), HEAD_TIMEOUT)
        else:
            body = await asyncio.wait_for(reader.read(MAX_BODY), HEAD_TIMEOUT)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
        body = b""
    finally:
        writer.close()
    kept = [(k.strip(), v.strip()) for k, v in headers
            if k.strip().lower() not in ("content-length", "content-type", "connection", "transfer-encoding",
                                         "upgrade", "keep-alive")]
    return Response(status, body, fields.get("content-type", ""), kept)
