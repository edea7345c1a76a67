"""A kubelet host for kubelet/streaming without a kubelet, and a client for its protocols over
a socketpair (no ports)."""
from __future__ import annotations

import asyncio
import base64
import os
import socket
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, AsyncIterator

import orjson

from kubeplane.api.types import core_v1, from_dict
from kubeplane.kubelet import streaming
from kubeplane.kubelet.runtime import RUNNING
from kubeplane.kubelet.streaming.wsstream import WebSocket
from kubeplane.utils.duplex import Duplex, open_connection


def pod(name: str = "web", containers: tuple[str, ...] = ("app",), env: dict[str, str] | None = None) -> Any:
    return from_dict({
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": c, "image": "x", "env": [{"name": k, "value": v}
                                                                  for k, v in (env or {}).items()]}
                                for c in containers]}}, core_v1.Pod)


@dataclass
class Runtime:
    """pod_status as the sim runtime gives it: the containers named in `running` run."""
    running: set[str] = field(default_factory=lambda: {"app"})

    def pod_status(self, uid: str) -> Any:
        def latest(name: str) -> Any:
            return SimpleNamespace(state=RUNNING) if name in self.running else None
        return SimpleNamespace(latest=latest, sandbox=SimpleNamespace(id="sandbox-1"))


@dataclass
class Host:
    pods: dict[str, Any]
    runtime: Any = field(default_factory=Runtime)
    output: list[bytes] = field(default_factory=list)

    def container_logs(self, ns: str, name: str, uid: str, opts: Any) -> AsyncIterator[bytes]:
        async def gen() -> AsyncIterator[bytes]:
            for chunk in self.output:
                yield chunk
        return gen()


def ws_request(path: str, protocols: str = "v5.channel.k8s.io", extra: str = "") -> tuple[bytes, dict[str, str]]:
    key = base64.b64encode(os.urandom(16)).decode()
    headers = {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
               "sec-websocket-key": key}
    if protocols:
        headers["sec-websocket-protocol"] = protocols
    raw = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + extra + "\r\n"
    return raw.encode(), headers


class Served:
    """streaming.serve on one end of a socketpair; the test holds the other (client)."""

    def __init__(self, host: Host, kind: str, query: dict[str, list[str]], headers: dict[str, str],
                 container: str = "app", name: str = "web") -> None:
        self.args = (host, kind, "default", name, container, query, headers)
        self.task: asyncio.Task[None] | None = None
        self.client: Duplex | None = None

    async def start(self) -> Served:
        a, b = socket.socketpair()
        server = await open_connection(sock=a)
        self.client = await open_connection(sock=b)
        self.task = asyncio.ensure_future(streaming.serve(*self.args, server))
        return self

    async def head(self) -> tuple[int, dict[str, str], bytes]:
        """The HTTP answer's status, headers, and (for an error) its body."""
        assert self.client is not None
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = await asyncio.wait_for(self.client.read(), 10)
            assert chunk, f"connection closed after {buf!r}"
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        if rest:
            self.client.unread(rest)
        status = int(lines[0].split()[1])
        body = b""
        if status != 101:
            while chunk := await asyncio.wait_for(self.client.read(), 10):
                body += chunk
        return status, headers, body

    def ws(self) -> WebSocket:
        assert self.client is not None
        return WebSocket(self.client, client=True)

    async def done(self) -> None:
        assert self.task is not None
        await asyncio.wait_for(self.task, 10)


async def messages(ws: WebSocket) -> list[tuple[int, bytes]]:
    """Every (channel, data) until the server closes."""
    out = []
    while (msg := await asyncio.wait_for(ws.receive(), 10)) is not None:
        out.append((msg[1][0], msg[1][1:]))
    return out


def by_channel(msgs: list[tuple[int, bytes]]) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for ch, data in msgs:
        out[ch] = out.get(ch, b"") + data
    return out


def status(msgs: list[tuple[int, bytes]]) -> dict[str, Any]:
    return orjson.loads(by_channel(msgs)[3])
