"""pods/portforward over WebSocket (the kubelet's side): the channel protocol, two channels
per requested port.

    ?port=8080&port=9090  ->  channel 0 data / 1 error of 8080, 2 data / 3 error of 9090

Each channel's first message from the server is its port number (2 bytes, little-endian);
then what the client sends on a data channel goes to a TCP connection to the pod's port and
what comes back goes out on the same channel. A failure is the error channel's text:
"error forwarding port 8080 to pod <id>, uid <uid>: ...".

Upstream: pkg/kubelet/cri/streaming/portforward (websocket.go handleWebSocketStreams,
httpstream.go newOptions); the message of a port nobody listens on is containerd's
(portForward in sandbox_portforward_linux.go).
"""
from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Mapping
from typing import Any

from .wsstream import Channels

PROTOCOLS = ("v4.channel.k8s.io", "v4.base64.channel.k8s.io", "")
SPDY_PROTOCOL = "portforward.k8s.io"                      # X-Stream-Protocol-Version
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"           # SPDY in a WebSocket (kubectl 1.37)
READ_SIZE = 32 << 10


def ports(query: Mapping[str, list[str]]) -> list[int]:
    """The ports asked for; ValueError with upstream's words. Upstream: portforward newOptions"""
    values = query.get("port") or []
    if not values:
        raise ValueError('query parameter "port" is required')
    out = []
    for s in values:
        for part in s.split(","):
            try:
                p = int(part)
                if not 0 <= p < 1 << 16:
                    raise ValueError
            except ValueError:
                raise ValueError(f'unable to parse "{part}" as a port: strconv.ParseUint: parsing "{part}": '
                                 "invalid syntax") from None
            if p == 0:
                raise ValueError(f'port "{part}" must be > 0')
            out.append(p)
    return out


def dial_error(port: int, sandbox: str, errs: tuple[str, str]) -> str:
    """containerd's message for a port nobody listens on in the pod."""
    return (f"failed to execute portforward in network namespace \"{sandbox}\": failed to connect to "
            f"localhost:{port} inside namespace \"{sandbox}\", IPv4: {errs[0]} IPv6 {errs[1]} ")


async def dial(host: str | None, port: int, sandbox: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the pod's port: its address, then ::1, as containerd tries both. host None:
    a pod with no processes (the sim runtime), where nothing listens; a path (/run/netns/...):
    the pod's network namespace, where localhost is dialled, as containerd does."""
    refused = "connect: connection refused"
    if host is None:
        raise ConnectionError(dial_error(port, sandbox, (f"dial tcp4 127.0.0.1:{port}: {refused}",
                                                         f"dial tcp6 [::1]:{port}: {refused}")))
    if host.startswith("/"):
        return await _dial_in_netns(host, port, sandbox)
    try:
        return await asyncio.open_connection(host, port, limit=READ_SIZE)
    except OSError as e4:
        first = f"dial tcp4 {host}:{port}: connect: {_reason(e4)}"
    try:
        return await asyncio.open_connection("::1", port, limit=READ_SIZE)
    except OSError as e6:
        raise ConnectionError(dial_error(port, sandbox, (first, f"dial tcp6 [::1]:{port}: connect: "
                                                                f"{_reason(e6)}"))) from None


async def _dial_in_netns(path: str, port: int, sandbox: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    import socket

    from ..network.netns import socket_in
    errs = []
    for family, addr, name in ((socket.AF_INET, "127.0.0.1", "tcp4 127.0.0.1"), (socket.AF_INET6, "::1", "tcp6 [::1]")):
        sock = None
        try:
            sock = await socket_in(path, family)
            await asyncio.get_running_loop().sock_connect(sock, (addr, port))
            return await asyncio.open_connection(sock=sock, limit=READ_SIZE)
        except OSError as e:
            if sock is not None:
                sock.close()
            errs.append(f"dial {name}:{port}: connect: {_reason(e)}")
    raise ConnectionError(dial_error(port, sandbox, (errs[0], errs[1])))


def _reason(e: OSError) -> str:
    import os
    return os.strerror(e.errno).lower() if e.errno else str(e)


class Forwarder:
    """One port-forward WebSocket: one connection to each requested port, dialled at once; the
    WebSocket closes when every one of them has ended (upstream: handleWebSocketStreams waits
    for each pair's PortForward)."""

    def __init__(self, ch: Channels, ports: list[int], host: str | None, pod_id: str, uid: str,
                 sandbox: str) -> None:
        self.ch = ch
        self.ports = ports
        self.host = host
        self.pod_id, self.uid, self.sandbox = pod_id, uid, sandbox
        self.inputs: list[asyncio.Queue[bytes]] = [asyncio.Queue(maxsize=16) for _ in ports]

    async def run(self) -> None:
        tasks: list[asyncio.Future[None]] = []
        try:
            for i, p in enumerate(self.ports):
                port = struct.pack("<H", p)
                await self.ch.send(2 * i, port)
                await self.ch.send(2 * i + 1, port)
            tasks = [asyncio.ensure_future(self.forward(i)) for i in range(len(self.ports))]

            async def all_forwarded() -> None:
                await asyncio.gather(*tasks)
            reader = asyncio.ensure_future(self.read_client())
            forwarded = asyncio.ensure_future(all_forwarded())
            await asyncio.wait([reader, forwarded], return_when=asyncio.FIRST_COMPLETED)
            reader.cancel()
            forwarded.cancel()
        except ConnectionError:
            pass
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.ch.ws.close(1000)

    async def read_client(self) -> None:
        """The client's data channels into each port's queue (bounded: a pod that does not
        read holds the client); error channels are the server's, unknown ones ignored."""
        while (msg := await self.ch.receive()) is not None:
            channel, data = msg
            i, kind = divmod(channel, 2)
            if not kind and i < len(self.ports):
                await self.inputs[i].put(data)

    async def forward(self, i: int) -> None:
        port = self.ports[i]
        try:
            r, w = await dial(self.host, port, self.sandbox)
        except ConnectionError as e:
            with contextlib.suppress(ConnectionError):
                await self.ch.send(2 * i + 1, (f"error forwarding port {port} to pod {self.pod_id}, "
                                               f"uid {self.uid}: {e}").encode())
            return

        async def to_pod() -> None:
            while True:
                w.write(await self.inputs[i].get())
                await w.drain()
        up = asyncio.ensure_future(to_pod())
        try:
            with contextlib.suppress(ConnectionError):
                while data := await r.read(READ_SIZE):
                    await self.ch.send(2 * i, data)
        finally:
            up.cancel()
            await asyncio.gather(up, return_exceptions=True)
            w.close()


class SpdyForwarder:
    """Port-forward over SPDY (direct, or tunnelled in a WebSocket): the client opens an error
    and a data stream per connection (headers streamtype, port, requestid); once both are
    there, the data stream is spliced to the pod's port and the error stream carries a failure's
    text, then both are closed. Upstream: portforward/httpstream.go (httpStreamHandler)."""

    def __init__(self, host: str | None, pod_id: str, uid: str, sandbox: str) -> None:
        self.host = host
        self.pod_id, self.uid, self.sandbox = pod_id, uid, sandbox
        self.pairs: dict[str, dict[str, Any]] = {}
        self.finished: dict[str, asyncio.Future[None]] = {}

    async def on_stream(self, stream: Any) -> None:
        kind = stream.headers.get("streamtype", "")
        rid = stream.headers.get("requestid") or stream.headers.get("port", "")
        if kind not in ("data", "error"):
            stream.reset()
            return
        pair = self.pairs.setdefault(rid, {})
        finished = self.finished.setdefault(rid, asyncio.get_running_loop().create_future())
        pair[kind] = stream
        if len(pair) < 2:
            await finished                # both streams' tasks last as long as the forwarding
            return
        del self.pairs[rid], self.finished[rid]
        try:
            await self.forward(pair["data"], pair["error"])
        finally:
            finished.set_result(None)

    async def forward(self, data: Any, error: Any) -> None:
        port_s = data.headers.get("port", "")
        try:
            port = int(port_s)
            if not 0 < port < 1 << 16:
                raise ValueError
            r, w = await dial(self.host, port, self.sandbox)
        except (ValueError, ConnectionError) as e:
            msg = (f'unable to parse "{port_s}" as a port' if isinstance(e, ValueError) else
                   f"error forwarding port {port_s} to pod {self.pod_id}, uid {self.uid}: {e}")
            with contextlib.suppress(ConnectionError):
                await error.write(msg.encode())
            error.close()
            data.close()
            return
        async def to_pod() -> None:
            while chunk := await data.read():
                w.write(chunk)
                await w.drain()
            if w.can_write_eof():
                w.write_eof()                # the client is done sending: half-close, as containerd's CloseWrite
        up = asyncio.ensure_future(to_pod())
        try:
            with contextlib.suppress(ConnectionError):
                while chunk := await r.read(READ_SIZE):
                    await data.write(chunk)
        finally:
            up.cancel()
            await asyncio.gather(up, return_exceptions=True)
            w.close()
            data.close()
            error.close()
