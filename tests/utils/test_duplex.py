"""utils/duplex.py: the taken-over connection both upgrade paths use (pods/exec to a kubelet, an
aggregated API's tunnel), over socketpairs."""
from __future__ import annotations

import asyncio
import socket

import pytest

from kubeplane.utils.duplex import LIMIT, Duplex, open_connection, splice

HEAD = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"


async def pair() -> tuple[socket.socket, Duplex]:
    """(the peer's socket, a Duplex on the other end)."""
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    return theirs, await open_connection(sock=ours)


async def test_readuntil_leaves_what_follows_the_head() -> None:
    peer, conn = await pair()
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_sendall(peer, HEAD[:20])
        await loop.sock_sendall(peer, HEAD[20:] + b"early")      # the backend's first bytes, with its head
        assert await conn.readuntil(b"\r\n\r\n") == HEAD
        assert await conn.read() == b"early"
    finally:
        conn.close()
        peer.close()


async def test_readuntil_gives_up_past_the_limit() -> None:
    peer, conn = await pair()
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_sendall(peer, b"HTTP/1.1 101 x\r\nX: " + b"a" * (LIMIT + 1))
        with pytest.raises(asyncio.LimitOverrunError):
            await asyncio.wait_for(conn.readuntil(b"\r\n\r\n"), 10)
        peer.close()
        _, conn2 = await pair()
        conn2.transport.close()
        with pytest.raises(asyncio.IncompleteReadError):
            await asyncio.wait_for(conn2.readuntil(b"\r\n\r\n"), 10)
    finally:
        conn.close()


async def test_splice_copies_both_ways_with_back_pressure() -> None:
    client, a = await pair()
    backend, b = await pair()
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(splice(a, b))
    try:
        await loop.sock_sendall(backend, b"hello")
        assert await loop.sock_recv(client, 100) == b"hello"
        # The backend does not read: the client's side stops being read, instead of buffering.
        sent = bytearray()
        chunk = b"x" * 65536
        while a.transport.is_reading():
            assert len(sent) < 1 << 26, "the client's side was never paused"
            try:
                sent += chunk[:client.send(chunk)]
            except BlockingIOError:
                await asyncio.sleep(0)           # let the splice run
        got = bytearray()
        while len(got) < len(sent):
            got += await loop.sock_recv(backend, 1 << 20)
        assert got == sent
        client.close()                           # one side ends: the splice ends
        await asyncio.wait_for(task, 10)
    finally:
        task.cancel()
        a.close()
        b.close()
        client.close()
        backend.close()
