"""The kubelet's side of a shim's attach socket (shim.py Attach): attach to a running container
started with `stdin` or `tty`.

    conn = await AttachConnection.open(path, stdin=True, stdout=True, stderr=False)
    await conn.write(b"input")        # to the container's stdin
    await conn.resize(80, 24)         # its terminal's size
    await conn.close_stdin()          # the client's stdin ended
    stream, data = await conn.read()  # ("stdout", b"..."); None once the attach is over
    conn.close()

Upstream: containerd's CRI attach (criService.attachContainer) over its ContainerIO.
"""
from __future__ import annotations

import asyncio
import json
import os
import struct

FRAME = struct.Struct(">cI")       # as shim.FRAME (the shim imports nothing of ours)
MAX_READ = 1 << 20
STREAMS = {b"1": "stdout", b"2": "stderr"}


class AttachConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, path: str, *, stdin: bool, stdout: bool, stderr: bool) -> AttachConnection:
        """Connect (OSError when the socket is gone: the container has exited) and say which
        streams this attach wants."""
        directory, name = os.path.split(path)
        dirfd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
        try:                           # via the directory's fd: a socket's path has at most 107 bytes
            reader, writer = await asyncio.open_unix_connection(f"/proc/self/fd/{dirfd}/{name}", limit=MAX_READ)
        finally:
            os.close(dirfd)
        conn = cls(reader, writer)
        await conn._send(b"o", json.dumps({"stdin": stdin, "stdout": stdout, "stderr": stderr}).encode())
        return conn

    async def _send(self, kind: bytes, payload: bytes) -> None:
        self.writer.write(FRAME.pack(kind, len(payload)) + payload)
        await self.writer.drain()

    async def write(self, data: bytes) -> None:
        if data:
            await self._send(b"i", data)

    async def close_stdin(self) -> None:
        await self._send(b"e", b"")

    async def resize(self, width: int, height: int) -> None:
        await self._send(b"r", json.dumps([width, height]).encode())

    async def read(self) -> tuple[str, bytes] | None:
        """The next output of the container: (stream, bytes); None when the shim is done with
        this attach (the container's output ended, or the attach was detached)."""
        while True:
            try:
                head = await self.reader.readexactly(FRAME.size)
                kind, n = FRAME.unpack(head)
                data = await self.reader.readexactly(n)
            except (asyncio.IncompleteReadError, ConnectionError):
                return None
            stream = STREAMS.get(kind)
            if stream is not None:
                return stream, data

    def close(self) -> None:
        self.writer.close()
