"""WebSocket (RFC 6455) framing over a Duplex, and the Kubernetes channel protocols on it.

Why our own framing and not a library: the API server needs none (it splices the bytes of an
upgraded connection to the kubelet, as upstream's UpgradeAwareHandler does), so only the
kubelet speaks WebSocket, on connections both of its front ends hand over as a Duplex
(utils/duplex.py). uvicorn's WebSocket support needs `websockets` or `wsproto` and owns the whole
connection (no authentication or routing of ours before it); aiohttp's WebSocketResponse
works only inside aiohttp, not for in-process kubelets reached through the API server's
uvicorn. The subset kubectl and the client libraries use is small: binary and text messages,
fragments, ping/pong, close; no extensions (permessage-deflate is not offered by client-go,
the Python client turns it off). Limits: a message over MAX_MESSAGE bytes closes the
connection with 1009 before any of it is buffered.

The channel protocols (upstream: k8s.io/apimachinery wsstream conn.go, now k8s.io/streaming):
each binary message starts with its channel's number; base64 variants ("base64.channel.k8s.io",
"v4.base64.channel.k8s.io") send the channel as an ASCII digit and the data in base64, as
text messages. v5.channel.k8s.io adds the CLOSE signal: [255, channel] half-closes a channel.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import struct
from collections.abc import Iterable, Mapping

from ...utils.duplex import Duplex

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_MESSAGE = 8 << 20         # bytes; a bigger message closes the connection (1009)

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

CHANNEL = "channel.k8s.io"
BASE64_CHANNEL = "base64.channel.k8s.io"
V4_CHANNEL = "v4.channel.k8s.io"
V5_CHANNEL = "v5.channel.k8s.io"
STREAM_CLOSE = 255            # upstream: remotecommand.StreamClose


class ProtocolError(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2)."""
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def is_websocket_request(headers: Mapping[str, str]) -> bool:
    """Upstream: wsstream.IsWebSocketRequest — Connection: upgrade and Upgrade: websocket."""
    connection = [t.strip().lower() for t in headers.get("connection", "").split(",")]
    return "upgrade" in connection and headers.get("upgrade", "").lower() == "websocket"


def offered_protocols(headers: Mapping[str, str]) -> list[str]:
    return [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",") if p.strip()]


def negotiate(offered: list[str], supported: Iterable[str]) -> str | None:
    """The first protocol the client offers that the server supports ("" when the client
    offers none and "" is supported); None: no match. Upstream: wsstream handshake."""
    supported = list(supported)
    if not offered:
        return "" if "" in supported else None
    return next((p for p in offered if p in supported), None)


def handshake_response(headers: Mapping[str, str], protocol: str) -> bytes:
    """The 101 answer to a WebSocket upgrade request (checked by check_handshake)."""
    lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Accept: {accept_key(headers['sec-websocket-key'])}"]
    if protocol:
        lines.append(f"Sec-WebSocket-Protocol: {protocol}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def check_handshake(headers: Mapping[str, str]) -> str | None:
    """Why the request is no valid WebSocket opening handshake, or None."""
    if headers.get("sec-websocket-version", "") != "13":
        return "Bad Request: unsupported WebSocket version"
    key = headers.get("sec-websocket-key", "")
    try:
        if len(base64.b64decode(key, validate=True)) != 16:
            raise ValueError
    except ValueError:
        return "Bad Request: invalid Sec-WebSocket-Key"
    return None


def mask(data: bytes, key: bytes) -> bytes:
    """XOR data with the 4-byte key (masking and unmasking are the same): one big-integer XOR,
    ~1 GB/s in CPython, instead of a loop per byte."""
    n = len(data)
    if not n:
        return data
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def frame(opcode: int, payload: bytes, *, mask_key: bytes | None = None, fin: bool = True) -> bytes:
    """One frame; a client masks (mask_key: 4 random bytes), a server does not."""
    n = len(payload)
    head = bytearray([(0x80 if fin else 0) | opcode])
    m = 0x80 if mask_key is not None else 0
    if n < 126:
        head.append(m | n)
    elif n < 1 << 16:
        head += struct.pack("!BH", m | 126, n)
    else:
        head += struct.pack("!BQ", m | 127, n)
    if mask_key is not None:
        return bytes(head) + mask_key + mask(payload, mask_key)
    return bytes(head) + payload


class WebSocket:
    """Messages over a Duplex whose handshake is done.

    receive() answers pings and a close itself; it returns (opcode, payload) of each data
    message, None once the connection is closed (by either side, or broken).
    """

    def __init__(self, conn: Duplex, *, client: bool = False, max_message: int = MAX_MESSAGE) -> None:
        self.conn = conn
        self.client = client              # a client masks its frames, a server requires masked ones
        self.max_message = max_message
        self.close_sent = False
        self.closed = False
        self._write_lock = asyncio.Lock()

    async def receive(self) -> tuple[int, bytes] | None:
        try:
            return await self._receive()
        except ProtocolError as e:
            await self.close(e.code, str(e))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        self.closed = True
        return None

    async def _receive(self) -> tuple[int, bytes] | None:
        parts: list[bytes] = []
        size = 0
        opcode = None
        while True:
            op, fin, payload = await self._frame()
            if op >= CLOSE:                       # control frames may come between fragments
                if op == PING:
                    await self._send(PONG, payload)
                elif op == CLOSE:
                    code = payload[:2] if len(payload) >= 2 else b""
                    await self.close(struct.unpack("!H", code)[0] if code else 1000)
                    self.closed = True
                    return None
                continue
            if op == CONT:
                if opcode is None:
                    raise ProtocolError(1002, "continuation without a message")
            elif opcode is not None:
                raise ProtocolError(1002, "a new message inside a fragmented one")
            else:
                opcode = op
            size += len(payload)
            if size > self.max_message:
                raise ProtocolError(1009, "message too big")
            parts.append(payload)
            if fin:
                return opcode, payload if len(parts) == 1 else b"".join(parts)

    async def _frame(self) -> tuple[int, bool, bytes]:
        b0, b1 = await self.conn.readexactly(2)
        fin, op, masked, n = bool(b0 & 0x80), b0 & 0x0F, bool(b1 & 0x80), b1 & 0x7F
        if b0 & 0x70:
            raise ProtocolError(1002, "reserved bits set")
        if op not in (CONT, TEXT, BINARY, CLOSE, PING, PONG):
            raise ProtocolError(1002, f"unknown opcode {op}")
        if op >= CLOSE and (n > 125 or not fin):
            raise ProtocolError(1002, "bad control frame")
        if masked == self.client:
            raise ProtocolError(1002, "frame masking")
        if n == 126:
            n = struct.unpack("!H", await self.conn.readexactly(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", await self.conn.readexactly(8))[0]
        if n > self.max_message:
            raise ProtocolError(1009, "message too big")
        key = await self.conn.readexactly(4) if masked else b""
        payload = await self.conn.readexactly(n) if n else b""
        return op, fin, mask(payload, key) if masked else payload

    async def send(self, payload: bytes, opcode: int = BINARY) -> None:
        """Send one message; waits while the peer does not read (raises ConnectionError once
        the connection is gone)."""
        await self._send(opcode, payload)

    async def _send(self, opcode: int, payload: bytes) -> None:
        if self.close_sent:
            raise ConnectionResetError("close sent")
        data = frame(opcode, payload, mask_key=_random_key() if self.client else None)
        async with self._write_lock:
            self.conn.write(data)
            await self.conn.drain()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (once) and end the connection."""
        if not self.close_sent:
            try:
                await self._send(CLOSE, struct.pack("!H", code) + reason.encode()[:120])
            except ConnectionError:
                pass
            self.close_sent = True
        self.conn.close()


def _random_key() -> bytes:
    import os
    return os.urandom(4)


class Channels:
    """The channel protocol on a WebSocket: send(channel, data), receive() -> (channel, data).

    base64: the text variant (channel as an ASCII digit, data base64). Upstream: wsstream.Conn
    """

    def __init__(self, ws: WebSocket, protocol: str) -> None:
        self.ws = ws
        self.protocol = protocol
        self.base64 = "base64" in protocol

    async def close(self) -> None:
        await self.ws.close(1000)

    async def send(self, channel: int, data: bytes) -> None:
        if self.base64:
            await self.ws.send(str(channel).encode() + base64.b64encode(data), TEXT)
        else:
            await self.ws.send(bytes([channel]) + data)

    async def receive(self) -> tuple[int, bytes] | None:
        """The next message's channel and data; None when the connection is closed. An empty
        message is skipped, as upstream's."""
        while True:
            msg = await self.ws.receive()
            if msg is None:
                return None
            _, data = msg
            if not data:
                continue
            if self.base64:
                try:
                    return data[0] - ord("0"), base64.b64decode(data[1:])
                except ValueError:
                    continue
            return data[0], data[1:]


class WebSocketBytes:
    """A byte stream tunnelled in a WebSocket's binary messages (the Duplex methods SPDY uses):
    each drain() sends what was written since as one message; reads take messages in turn.
    Upstream: TunnelingConnection (client-go/tools/portforward/tunneling_connection.go) and the
    API server's tunneling handler, which unwrap SPDY from "SPDY/3.1+portforward.k8s.io"."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self._in = bytearray()
        self._out: list[bytes] = []
        self._flusher: asyncio.Future[None] | None = None

    async def readexactly(self, n: int) -> bytes:
        while len(self._in) < n:
            msg = await self.ws.receive()
            if msg is None:
                raise asyncio.IncompleteReadError(bytes(self._in), n)
            self._in += msg[1]
        data = bytes(self._in[:n])
        del self._in[:n]
        return data

    def write(self, data: bytes) -> None:
        """Queue data; it goes out at the next drain(), or on the loop's next turn (a frame
        written without a drain, such as a SYN_REPLY, must not wait for one)."""
        self._out.append(data)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        with contextlib.suppress(ConnectionError):
            await self.drain()

    async def drain(self) -> None:
        while self._out:                   # the write lock in ws.send keeps the messages in order
            data, self._out = b"".join(self._out), []
            await self.ws.send(data)

    def close(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
