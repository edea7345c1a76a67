"""SPDY/3.1 (the server's side), as client-go's SPDY round tripper and spdystream speak it:
streams opened by the client with SYN_STREAM, answered with SYN_REPLY, data frames, FIN
half-closes, RST_STREAM, PING echoed, GOAWAY.

    session = Session(conn, on_stream)      # conn: a byte stream (a Duplex, or WebSocketBytes)
    await session.serve()                   # until the client goes away; on_stream(stream) per stream

Header blocks are one zlib stream per direction with SPDY/3's dictionary (the spec's
section 2.6.10.1); a block over MAX_HEADER_BLOCK bytes, a frame over MAX_FRAME bytes, or more
than MAX_STREAMS open streams end the session (GOAWAY) before anything is buffered. Flow
control: spdystream neither enforces nor needs windows; we send WINDOW_UPDATE for what we
consume so a client that does keep windows never stalls.

Upstream: k8s.io/apimachinery/pkg/util/httpstream/spdy (connection.go, upgrade.go) over
github.com/moby/spdystream; the framing of golang.org/x/net/spdy (types.go, read.go, write.go).
"""
from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Awaitable, Callable

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
RST_PROTOCOL_ERROR, RST_INVALID_STREAM, RST_REFUSED_STREAM, RST_CANCEL = 1, 2, 3, 5
MAX_DATA = 1 << 20                # bytes of one data frame we accept (spdystream sends 32 KiB or less)
MAX_HEADER_BLOCK = 1 << 16        # decompressed bytes of one header block
MAX_STREAMS = 1000
WINDOW_UPDATE_AFTER = 32 << 10    # bytes consumed on a stream before we grant them again
READ_SIZE = 32 << 10


def _words(*words: str) -> bytes:
    return b"".join(struct.pack("!I", len(w)) + w.encode() for w in words)


# SPDY/3's header compression dictionary (draft-mbelshe-httpbis-spdy-00 section 2.6.10.1): the
# length-prefixed words, then the raw text. The peer's zlib stream names its Adler-32, so a
# single wrong byte fails every header block.
DICTIONARY = _words(
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location", "content-md5",
    "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host", "if-match",
    "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer", "retry-after",
    "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
    "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public",
    "set-cookie", "keep-alive", "origin",
) + (b"100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
     b"203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
     b"403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
     b"Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
     b"chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
     b"text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")


class SessionError(Exception):
    pass


def encode_headers(headers: dict[str, str]) -> bytes:
    """An uncompressed header block: count, then (length, name, length, value) pairs."""
    out = [struct.pack("!I", len(headers))]
    for k, v in headers.items():
        name, value = k.lower().encode(), v.encode()
        out += [struct.pack("!I", len(name)), name, struct.pack("!I", len(value)), value]
    return b"".join(out)


def decode_headers(block: bytes) -> dict[str, str]:
    """The inverse of encode_headers; repeated values (NUL-separated) keep the first.
    SessionError for a malformed block."""
    try:
        (n,), i, out = struct.unpack_from("!I", block), 4, {}
        for _ in range(n):
            (kl,) = struct.unpack_from("!I", block, i)
            name = block[i + 4:i + 4 + kl]
            i += 4 + kl
            (vl,) = struct.unpack_from("!I", block, i)
            value = block[i + 4:i + 4 + vl]
            i += 4 + vl
            if i > len(block):
                raise SessionError("truncated header block")
            out[name.decode("latin-1").lower()] = value.split(b"\0")[0].decode("latin-1")
        return out
    except struct.error:
        raise SessionError("truncated header block") from None


def control(type_: int, flags: int, data: bytes) -> bytes:
    return struct.pack("!HHI", 0x8000 | VERSION, type_, (flags << 24) | len(data)) + data


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return struct.pack("!II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


class Stream:
    """One client-opened stream: headers, incoming data (bounded queue), outgoing writes."""

    def __init__(self, session: Session, stream_id: int, headers: dict[str, str]) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self._data: asyncio.Queue[bytes] = asyncio.Queue()
        self._buffered = 0
        self.remote_closed = False        # the client's FIN or RST
        self.local_closed = False
        self._consumed = 0
        self.space = asyncio.Event()       # set while the stream holds less than the session's limit
        self.space.set()
        self.done = False                  # its handler has returned: data for it is dropped

    def _feed(self, data: bytes) -> None:
        if self.done and data:
            return
        self._buffered += len(data)
        self._data.put_nowait(data)
        if self._buffered > self.session.max_buffered:
            self.space.clear()

    async def read(self) -> bytes:
        """The next data the client sent; b"" after its FIN (or a reset, or the session's end)."""
        data = await self._data.get()
        self._buffered -= len(data)
        if self._buffered <= self.session.max_buffered:
            self.space.set()
        self._consumed += len(data)
        if self._consumed >= WINDOW_UPDATE_AFTER:
            grant, self._consumed = self._consumed, 0
            self.session.send(control(WINDOW_UPDATE, 0, struct.pack("!II", self.id, grant)))
        if not data:
            self._data.put_nowait(b"")    # stays at its end
        return data

    async def write(self, data: bytes) -> None:
        if self.local_closed or self.session.closed:
            raise ConnectionResetError("stream closed")
        for i in range(0, len(data), READ_SIZE):
            self.session.send(data_frame(self.id, data[i:i + READ_SIZE]))
            await self.session.drain()

    def close(self) -> None:
        """Half-close: an empty data frame with FIN."""
        if not self.local_closed and not self.session.closed:
            self.local_closed = True
            self.session.send(data_frame(self.id, b"", fin=True))
        self.session.forget(self)

    def reset(self, status: int = RST_CANCEL) -> None:
        if not self.session.closed:
            self.session.send(control(RST_STREAM, 0, struct.pack("!II", self.id, status)))
        self.local_closed = self.remote_closed = True
        self._feed(b"")
        self.session.forget(self)


class Session:
    def __init__(self, conn: object, on_stream: Callable[[Stream], Awaitable[None]]) -> None:
        self.conn = conn
        self.on_stream = on_stream
        self.streams: dict[int, Stream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.inflate = zlib.decompressobj(zdict=DICTIONARY)
        self.deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY,
                                        DICTIONARY)
        self.closed = False
        self.max_buffered = 1 << 20       # bytes held per stream before the session stops reading

    def forget(self, s: Stream) -> None:
        """Drop a stream closed both ways (data for it then gets RST_STREAM)."""
        if s.local_closed and s.remote_closed:
            self.streams.pop(s.id, None)

    def send(self, frame: bytes) -> None:
        if not self.closed:
            self.conn.write(frame)  # type: ignore[attr-defined]

    async def drain(self) -> None:
        await self.conn.drain()  # type: ignore[attr-defined]

    def header_block(self, headers: dict[str, str]) -> bytes:
        return self.deflate.compress(encode_headers(headers)) + self.deflate.flush(zlib.Z_SYNC_FLUSH)

    def _headers(self, compressed: bytes) -> dict[str, str]:
        try:
            block = self.inflate.decompress(compressed, MAX_HEADER_BLOCK + 1)
        except zlib.error as e:
            raise SessionError(f"header block: {e}") from None
        if len(block) > MAX_HEADER_BLOCK or self.inflate.unconsumed_tail:
            raise SessionError("header block too large")
        return decode_headers(block)

    async def serve(self) -> None:
        """Read frames until the client goes away or breaks the protocol; then every stream ends."""
        read = self.conn.readexactly  # type: ignore[attr-defined]
        try:
            while True:
                head = await read(8)
                word, flags_len = struct.unpack("!II", head)
                flags, length = flags_len >> 24, flags_len & 0xFFFFFF
                if word & 0x80000000:
                    if length > MAX_HEADER_BLOCK + 12:
                        raise SessionError("control frame too large")
                    await self._control((word >> 16) & 0x7FFF, word & 0xFFFF, flags, await read(length))
                else:
                    if length > MAX_DATA:
                        raise SessionError("data frame too large")
                    await self._data(word & 0x7FFFFFFF, flags, await read(length) if length else b"")
        except SessionError:
            self.send(control(GOAWAY, 0, struct.pack("!II", max(self.streams, default=0), RST_PROTOCOL_ERROR)))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed = True
            for s in self.streams.values():
                s.remote_closed = True
                s._feed(b"")
            for t in list(self.tasks):
                t.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _control(self, version: int, type_: int, flags: int, data: bytes) -> None:
        if version != VERSION:
            raise SessionError(f"unsupported version {version}")
        if type_ == SYN_STREAM:
            if len(data) < 10:
                raise SessionError("short SYN_STREAM")
            stream_id = struct.unpack_from("!I", data)[0] & 0x7FFFFFFF
            headers = self._headers(data[10:])
            if stream_id in self.streams or len(self.streams) >= MAX_STREAMS:
                self.send(control(RST_STREAM, 0, struct.pack("!II", stream_id, RST_REFUSED_STREAM)))
                return
            s = self.streams[stream_id] = Stream(self, stream_id, headers)
            self.send(control(SYN_REPLY, 0, struct.pack("!I", stream_id) + self.header_block({})))
            if flags & FLAG_FIN:
                s.remote_closed = True
                s._feed(b"")
            task = asyncio.ensure_future(self._run(s))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif type_ == RST_STREAM and len(data) >= 8:
            s = self.streams.get(struct.unpack_from("!I", data)[0] & 0x7FFFFFFF)
            if s is not None:
                s.remote_closed = s.local_closed = True
                s._feed(b"")
        elif type_ == PING and len(data) == 4:
            self.send(control(PING, 0, data))
        elif type_ == GOAWAY:
            raise asyncio.IncompleteReadError(b"", None)
        elif type_ == HEADERS and len(data) >= 4:
            self._headers(data[4:])           # keeps the zlib stream in step; nothing to do with them
        # SETTINGS, WINDOW_UPDATE, NOOP: nothing to do (see the module docstring)

    async def _data(self, stream_id: int, flags: int, data: bytes) -> None:
        s = self.streams.get(stream_id)
        if s is None or s.remote_closed:
            self.send(control(RST_STREAM, 0, struct.pack("!II", stream_id, RST_INVALID_STREAM)))
            return
        if data:
            s._feed(data)
        if flags & FLAG_FIN:
            s.remote_closed = True
            s._feed(b"")
            self.forget(s)
        await s.space.wait()               # its consumer is behind: read no more of the session until it catches up

    async def _run(self, s: Stream) -> None:
        try:
            await self.on_stream(s)
        except ConnectionError:
            pass
        finally:
            s.done = True
            s.space.set()
