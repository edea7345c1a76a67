"""A connection taken over after an HTTP upgrade: bytes in with a bounded buffer, bytes out
with the transport's flow control.

Both front ends hand their connection over as a Duplex once a request asks for an upgrade:
the API server's (apiserver/upgrade.py, on uvicorn) and the kubelet's (kubelet/server.py, on
aiohttp). What reads it (the WebSocket framing, the splice to a kubelet or to an aggregated
API's backend) sees the same thing.

Reading is bounded: past `limit` unread bytes the transport stops reading until the reader
catches up, so a client that sends faster than a command reads its stdin holds 2 x limit at
most. Writing waits (drain) while the transport's buffer is above its high-water mark, so a
client that never reads stops the command's output instead of filling memory.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

LIMIT = 1 << 16              # unread bytes held before the transport stops reading


class Duplex:
    def __init__(self, transport: asyncio.BaseTransport, *, limit: int = LIMIT,
                 drain: Callable[[], Awaitable[None]] | None = None) -> None:
        """drain: the front end's own wait for its paused writer (aiohttp's); None: this
        Duplex is the transport's protocol (see UpgradeProtocol) and keeps its own."""
        self.transport: Any = transport
        self.limit = limit
        self._buf = bytearray()
        self._eof = False
        self._reader: asyncio.Future[None] | None = None
        self._paused = False
        self._drain = drain
        self._writable = asyncio.Event()
        self._writable.set()
        self.closed = asyncio.Event()
        self.activity = 0            # bumped by every read from and write to the wire (idle timeouts)

    # --- fed by the front end ------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self.activity += 1
        self._buf += data
        self._wake()
        if len(self._buf) > self.limit and not self._paused and not self.transport.is_closing():
            self._paused = True
            self.transport.pause_reading()

    def feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def lost(self) -> None:
        """The connection is gone: readers see EOF, writers stop waiting."""
        self.feed_eof()
        self._writable.set()
        self.closed.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def _wake(self) -> None:
        w = self._reader
        if w is not None and not w.done():
            w.set_result(None)

    # --- used by the session -------------------------------------------------------------------

    async def read(self, n: int = LIMIT) -> bytes:
        """Up to n bytes; b"" at the end."""
        while not self._buf and not self._eof:
            await self._wait()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        self._maybe_resume()
        return data

    async def readexactly(self, n: int) -> bytes:
        """Exactly n bytes, or asyncio.IncompleteReadError at the end."""
        while len(self._buf) < n:
            if self._eof:
                raise asyncio.IncompleteReadError(bytes(self._buf), n)
            if self._paused:           # the caller wants more than the limit: read on
                self._paused = False
                self.transport.resume_reading()
            await self._wait()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        self._maybe_resume()
        return data

    async def readuntil(self, separator: bytes) -> bytes:
        """The bytes up to and including separator (an HTTP answer's head); LimitOverrunError
        when `limit` bytes hold none, IncompleteReadError at the end."""
        start = 0
        while (end := self._buf.find(separator, start)) < 0:
            if len(self._buf) > self.limit:
                raise asyncio.LimitOverrunError(f"no {separator!r} in {self.limit} bytes", len(self._buf))
            if self._eof:
                raise asyncio.IncompleteReadError(bytes(self._buf), None)
            start = max(0, len(self._buf) - len(separator) + 1)
            await self._wait()
        end += len(separator)
        data = bytes(self._buf[:end])
        del self._buf[:end]
        self._maybe_resume()
        return data

    def unread(self, data: bytes) -> None:
        """Put bytes back in front (what a parser read past its end)."""
        self._buf[:0] = data

    async def _wait(self) -> None:
        self._reader = asyncio.get_running_loop().create_future()
        try:
            await self._reader
        finally:
            self._reader = None

    def _maybe_resume(self) -> None:
        if self._paused and len(self._buf) <= self.limit // 2 and not self.transport.is_closing():
            self._paused = False
            self.transport.resume_reading()

    def write(self, data: bytes) -> None:
        self.activity += 1
        if not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self) -> None:
        if self.transport.is_closing():
            raise ConnectionResetError("connection closed")
        if self._drain is not None:
            await self._drain()
        else:
            await self._writable.wait()

    def close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

    @property
    def at_eof(self) -> bool:
        return self._eof and not self._buf


class UpgradeProtocol(asyncio.Protocol):
    """The transport's protocol once a front end hands the connection over: everything goes to
    the Duplex. Upstream: the hijacked net.Conn of an http.Hijacker."""

    def __init__(self, duplex: Duplex) -> None:
        self.duplex = duplex

    def data_received(self, data: bytes) -> None:
        self.duplex.feed(data)

    def eof_received(self) -> bool | None:
        self.duplex.feed_eof()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.duplex.lost()

    def pause_writing(self) -> None:
        self.duplex.pause_writing()

    def resume_writing(self) -> None:
        self.duplex.resume_writing()


def take_over(transport: asyncio.Transport, tail: bytes = b"") -> Duplex:
    """Make a Duplex the transport's protocol; tail: bytes read past the request's headers."""
    duplex = Duplex(transport)
    transport.set_protocol(UpgradeProtocol(duplex))
    if tail:
        duplex.feed(tail)
    if transport.is_closing():
        duplex.lost()
    return duplex


async def open_connection(host: str = "", port: int = 0, *, ssl: Any = None, server_hostname: str | None = None,
                          timeout: float = 5.0, sock: Any = None) -> Duplex:
    """A client connection as a Duplex (the API server dialling a kubelet or an aggregated
    API's backend; tests: either end of a socketpair, given as sock)."""
    loop = asyncio.get_running_loop()
    holder: list[Duplex] = []
    def factory() -> asyncio.Protocol:
        return _ClientProtocol(holder)
    if sock is not None:
        await asyncio.wait_for(loop.create_connection(factory, sock=sock, ssl=ssl), timeout)
    else:
        await asyncio.wait_for(loop.create_connection(factory, host, port, ssl=ssl,
                                                      server_hostname=server_hostname if ssl else None), timeout)
    return holder[0]


SPLICE_READ = 1 << 16


async def splice(a: Duplex, b: Duplex) -> None:
    """Copy both ways until either side ends; each copy waits while its reader does not read.
    Upstream: UpgradeAwareHandler.tryUpgrade's two io.Copy, ended when one half ends."""
    async def copy(src: Duplex, dst: Duplex) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await src.read(SPLICE_READ):
                dst.write(data)
                await dst.drain()
    tasks = [asyncio.ensure_future(copy(a, b)), asyncio.ensure_future(copy(b, a))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _ClientProtocol(UpgradeProtocol):
    def __init__(self, holder: list[Duplex]) -> None:
        self.holder = holder

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.duplex = Duplex(transport)
        self.holder.append(self.duplex)
