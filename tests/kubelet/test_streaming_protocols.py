"""kubelet/streaming: WebSocket framing and SPDY/3.1 against hostile input, and port-forward
over the channel protocol, SPDY and SPDY tunnelled in a WebSocket (to a real local listener)."""
from __future__ import annotations

import asyncio
import socket
import struct
import zlib

import pytest

from kubeplane.kubelet.streaming import spdy
from kubeplane.kubelet.streaming.wsstream import (
    BINARY, CLOSE, PING, PONG, TEXT, WebSocket, accept_key, frame, mask, negotiate,
)
from kubeplane.utils.duplex import Duplex, open_connection

from streaming_testutil import Host, Served, pod, ws_request


async def pair() -> tuple[Duplex, Duplex]:
    a, b = socket.socketpair()
    return await open_connection(sock=a), await open_connection(sock=b)


# --- WebSocket -----------------------------------------------------------------------------------

def test_accept_key_and_masking() -> None:
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="      # RFC 6455's example
    data = bytes(range(256)) * 10
    assert mask(mask(data, b"abcd"), b"abcd") == data
    assert mask(b"\x00\x00\x00\x00\x00", b"\x01\x02\x03\x04") == b"\x01\x02\x03\x04\x01"
    assert negotiate(["v5.channel.k8s.io", "v4.channel.k8s.io"], ["v4.channel.k8s.io"]) == "v4.channel.k8s.io"
    assert negotiate([], ["", "v4.channel.k8s.io"]) == "" and negotiate(["x"], ["y"]) is None


async def test_fragments_pings_and_lengths_round_trip() -> None:
    server, client = await pair()
    ws = WebSocket(server)
    key = b"\x11\x22\x33\x44"
    client.write(frame(BINARY, b"hel", mask_key=key, fin=False) + frame(PING, b"p", mask_key=key)
                 + frame(0, b"lo", mask_key=key))
    client.write(frame(TEXT, b"x" * 70000, mask_key=key))          # a 64-bit length
    assert await ws.receive() == (BINARY, b"hello")
    assert await ws.receive() == (TEXT, b"x" * 70000)
    pong = await client.readexactly(3)
    assert pong == bytes([0x80 | PONG, 1]) + b"p"                    # answered, unmasked
    await ws.send(b"y" * 300)
    cws = WebSocket(client, client=True)
    assert await cws.receive() == (BINARY, b"y" * 300)
    await cws.close(1000)
    assert await ws.receive() is None                                 # the close handshake


@pytest.mark.parametrize("raw, code", [
    (bytes([0x82, 0xFF]) + struct.pack("!Q", 1 << 62), 1009),       # a frame claiming 4 EiB: refused at once
    (bytes([0x82, 0x05]) + b"hello", 1002),                            # a client frame must be masked
    (bytes([0x83, 0x80]) + b"mask", 1002),                             # an unknown opcode
    (bytes([0x80, 0x80]) + b"mask", 1002),                             # a continuation of nothing
    (bytes([0xC2, 0x80]) + b"mask", 1002),                             # reserved bits (no extension agreed)
])
async def test_hostile_frames_close_the_connection_with_the_rfcs_code(raw: bytes, code: int) -> None:
    server, client = await pair()
    ws = WebSocket(server, max_message=1 << 20)
    client.write(raw)
    assert await asyncio.wait_for(ws.receive(), 5) is None
    head = await client.readexactly(4)
    assert head[0] == 0x80 | CLOSE and struct.unpack("!H", head[2:4])[0] == code


async def test_a_message_over_the_limit_in_fragments_is_refused() -> None:
    server, client = await pair()
    ws = WebSocket(server, max_message=1000)
    key = b"abcd"
    for _ in range(3):
        client.write(frame(BINARY if _ == 0 else 0, b"z" * 400, mask_key=key, fin=False))
    assert await asyncio.wait_for(ws.receive(), 5) is None
    assert (await client.readexactly(4))[2:4] == struct.pack("!H", 1009)


async def test_a_client_that_never_reads_blocks_the_sender_not_the_memory() -> None:
    server, client = await pair()
    ws = WebSocket(server)
    server.transport.set_write_buffer_limits(high=1 << 16)
    sent = 0

    async def flood() -> None:
        nonlocal sent
        while True:
            await ws.send(b"x" * 4096)
            sent += 4096
    task = asyncio.ensure_future(flood())
    await asyncio.sleep(0.2)
    assert not task.done() and sent < 4 << 20       # stopped at the socket buffers + the high-water mark
    stalled = sent
    await asyncio.sleep(0.1)
    assert sent == stalled
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    client.close()


# --- SPDY ------------------------------------------------------------------------------------------

class SpdyClient:
    def __init__(self, conn: Duplex) -> None:
        self.conn = conn
        self.deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY,
                                        spdy.DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)

    def syn(self, stream_id: int, headers: dict[str, str], fin: bool = False) -> None:
        block = self.deflate.compress(spdy.encode_headers(headers)) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        self.conn.write(spdy.control(spdy.SYN_STREAM, spdy.FLAG_FIN if fin else 0,
                                     struct.pack("!IIH", stream_id, 0, 0) + block))

    async def frame(self) -> tuple[int | None, int, int, bytes]:
        """(control type or None for data, stream id, flags, payload)."""
        word, fl = struct.unpack("!II", await self.conn.readexactly(8))
        data = await self.conn.readexactly(fl & 0xFFFFFF)
        if word & 0x80000000:
            sid = struct.unpack_from("!I", data)[0] & 0x7FFFFFFF if len(data) >= 4 else 0
            return word & 0xFFFF, sid, fl >> 24, data
        return None, word, fl >> 24, data

    async def data_of(self, stream_id: int) -> bytes:
        """Data of one stream until its FIN (other frames skipped)."""
        out = b""
        while True:
            t, sid, flags, data = await asyncio.wait_for(self.frame(), 10)
            if t is None and sid == stream_id:
                out += data
                if flags & spdy.FLAG_FIN:
                    return out


def test_the_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423 and zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2
    h = {"streamtype": "data", "port": "8080", "requestid": "0"}
    assert spdy.decode_headers(spdy.encode_headers(h)) == h


async def echo_server() -> tuple[asyncio.AbstractServer, int]:
    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while data := await r.read(65536):
            w.write(data.upper())
            await w.drain()
        w.close()
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def listening_host() -> Host:
    """A host whose runtime's pods listen on 127.0.0.1 (as the process runtime's do)."""
    h = Host({"uid-web": pod()})
    h.runtime.port_forward_address = lambda uid: ("127.0.0.1", "sandbox-1")   # type: ignore[attr-defined]
    return h


async def test_spdy_port_forward_to_a_listener_and_to_nobody() -> None:
    server, port = await echo_server()
    try:
        headers = {"connection": "Upgrade", "upgrade": "SPDY/3.1", "x-stream-protocol-version": "portforward.k8s.io"}
        s = await Served(listening_host(), "portforward", {}, headers).start()
        code, h, _ = await s.head()
        assert code == 101 and h["x-stream-protocol-version"] == "portforward.k8s.io"
        assert s.client is not None
        c = SpdyClient(s.client)
        c.syn(1, {"streamtype": "error", "port": str(port), "requestid": "0"}, fin=True)
        c.syn(3, {"streamtype": "data", "port": str(port), "requestid": "0"})
        c.conn.write(spdy.data_frame(3, b"hello") + spdy.data_frame(3, b"", fin=True))
        assert await c.data_of(3) == b"HELLO"
        # a port nobody listens on: the error stream carries containerd's words
        c.syn(5, {"streamtype": "error", "port": "1", "requestid": "1"}, fin=True)
        c.syn(7, {"streamtype": "data", "port": "1", "requestid": "1"})
        err = (await c.data_of(5)).decode()
        assert err.startswith("error forwarding port 1 to pod web_default, uid uid-web: failed to execute "
                              'portforward in network namespace "sandbox-1": failed to connect to localhost:1')
        assert "dial tcp4 127.0.0.1:1: connect: connection refused" in err
        s.client.close()
        await s.done()
    finally:
        server.close()


async def test_spdy_garbage_ends_the_session_with_goaway() -> None:
    headers = {"connection": "Upgrade", "upgrade": "SPDY/3.1", "x-stream-protocol-version": "portforward.k8s.io"}
    s = await Served(listening_host(), "portforward", {}, headers).start()
    assert (await s.head())[0] == 101
    assert s.client is not None
    c = SpdyClient(s.client)
    s.client.write(spdy.control(spdy.SYN_STREAM, 0, struct.pack("!IIH", 1, 0, 0) + b"not zlib at all"))
    t, _, _, _ = await asyncio.wait_for(c.frame(), 10)
    assert t == spdy.GOAWAY
    await s.done()
    s = await Served(listening_host(), "portforward", {}, headers).start()
    await s.head()
    s.client.write(struct.pack("!II", 0x80030001, 0xFFFFFF))   # a 16 MiB control frame: refused unread
    assert (await asyncio.wait_for(SpdyClient(s.client).frame(), 10))[0] == spdy.GOAWAY
    await s.done()


async def test_spdy_tunnelled_in_a_websocket() -> None:
    server, port = await echo_server()
    try:
        _, headers = ws_request("/portForward", "SPDY/3.1+portforward.k8s.io")
        s = await Served(listening_host(), "portforward", {}, headers).start()
        code, h, _ = await s.head()
        assert code == 101 and h["sec-websocket-protocol"] == "SPDY/3.1+portforward.k8s.io"
        ws = s.ws()
        c = SpdyClient(s.client)  # type: ignore[arg-type]
        buf = b""

        def syn(stream_id: int, headers: dict[str, str], fin: bool = False) -> bytes:
            block = c.deflate.compress(spdy.encode_headers(headers)) + c.deflate.flush(zlib.Z_SYNC_FLUSH)
            return spdy.control(spdy.SYN_STREAM, spdy.FLAG_FIN if fin else 0, struct.pack("!IIH", stream_id, 0, 0) + block)
        await ws.send(syn(1, {"streamtype": "error", "port": str(port), "requestid": "0"}, fin=True))
        await ws.send(syn(3, {"streamtype": "data", "port": str(port), "requestid": "0"}))
        await ws.send(spdy.data_frame(3, b"tunnel") + spdy.data_frame(3, b"", fin=True))
        got = b""
        while True:
            msg = await asyncio.wait_for(ws.receive(), 10)
            assert msg is not None
            buf += msg[1]
            while len(buf) >= 8:
                word, fl = struct.unpack_from("!II", buf)
                n = fl & 0xFFFFFF
                if len(buf) < 8 + n:
                    break
                data, buf = buf[8:8 + n], buf[8 + n:]
                if not word & 0x80000000 and word == 3:
                    got += data
                    if fl >> 24 & spdy.FLAG_FIN:
                        assert got == b"TUNNEL"
                        await ws.close()
                        await s.done()
                        return
    finally:
        server.close()


async def test_websocket_port_forward_channels() -> None:
    """One connection per port, dialled at once; the WebSocket closes once every one ended."""
    server, port = await echo_server()
    try:
        _, headers = ws_request("/portForward", "v4.channel.k8s.io")
        s = await Served(listening_host(), "portforward", {"port": [str(port), "1"]}, headers).start()
        assert (await s.head())[0] == 101
        ws = s.ws()
        first = [await ws.receive() for _ in range(4)]
        p = struct.pack("<H", port)
        assert [m[1] for m in first if m] == [b"\x00" + p, b"\x01" + p, b"\x02\x01\x00", b"\x03\x01\x00"]
        await ws.send(b"\x00abc")
        got: dict[int, bytes] = {}
        while b"ABC" not in got.get(0, b"") or 3 not in got:
            msg = await asyncio.wait_for(ws.receive(), 10)
            assert msg is not None
            got[msg[1][0]] = got.get(msg[1][0], b"") + msg[1][1:]
        assert b"error forwarding port 1 to pod web_default" in got[3] and b"connection refused" in got[3]
        await ws.close()
        await s.done()
    finally:
        server.close()


async def test_port_forward_to_a_sim_pod_gets_the_refused_error_and_bad_ports_a_400() -> None:
    _, headers = ws_request("/portForward", "v4.channel.k8s.io")
    s = await Served(Host({"uid-web": pod()}), "portforward", {"port": ["8080"]}, headers).start()
    assert (await s.head())[0] == 101
    ws = s.ws()
    for _ in range(2):
        await ws.receive()
    msg = await asyncio.wait_for(ws.receive(), 10)
    assert msg is not None and msg[1].startswith(b"\x01error forwarding port 8080 to pod web_default, uid uid-web")
    assert await asyncio.wait_for(ws.receive(), 10) is None       # its only port is done: closed
    await s.done()
    for query, text in (({}, b'query parameter "port" is required'), ({"port": ["x"]}, b'unable to parse "x"'),
                        ({"port": ["0"]}, b'port "0" must be > 0')):
        s = await Served(Host({"uid-web": pod()}), "portforward", query, headers).start()
        code, _, body = await s.head()
        assert code == 400 and text in body
