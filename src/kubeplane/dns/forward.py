"""Names outside the cluster zone go to the host's resolvers, as CoreDNS's `forward .
/etc/resolv.conf` in kubeadm's Corefile.

The query's bytes are relayed with a fresh ID over the client's transport (UDP or TCP), to each
upstream in turn until one answers within the timeout; the answer goes back with the client's
ID. When none answers the client gets SERVFAIL; more than `max_concurrent` forwards at once get
REFUSED (upstream's ErrLimitExceeded). Upstreams that are this server's own addresses are left
out, so a host whose resolv.conf names the cluster DNS does not loop.

Upstream: coredns plugin/forward (forward.go ServeDNS, connect.go), plugin/pkg/parse
(HostPortOrFile).
"""
from __future__ import annotations

import asyncio
import logging
import secrets
import struct

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 2.0          # per upstream try
DEFAULT_DEADLINE = 5.0         # Upstream: defaultTimeout (forward.go), the whole query
DEFAULT_MAX_CONCURRENT = 200          # each holds a socket: the control plane's file descriptors are shared


class ForwardError(Exception):
    """No upstream answered: SERVFAIL."""


class LimitExceeded(Exception):
    """Too many forwards at once: REFUSED. Upstream: ErrLimitExceeded (forward.go)"""


def upstreams_from_resolv_conf(path: str = "/etc/resolv.conf",
                               exclude: frozenset[tuple[str, int]] = frozenset()) -> list[tuple[str, int]]:
    """The nameservers of a resolv.conf, port 53, without `exclude` (our own listeners)."""
    from ..utils.resolvconf import parse_resolv_conf
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            servers, _, _, _ = parse_resolv_conf(f.read(1 << 20))
    except OSError as err:
        log.warning("cluster DNS: cannot read %s: %s; names outside the cluster get SERVFAIL", path, err)
        return []
    out = []
    for s in servers:
        host = s.split("%", 1)[0]          # a zone index (fe80::1%eth0) is not for us
        if (host, 53) not in exclude:
            out.append((host, 53))
    return out


class Forwarder:
    def __init__(self, upstreams: list[tuple[str, int]], *, timeout: float = DEFAULT_TIMEOUT,
                 deadline: float = DEFAULT_DEADLINE, max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> None:
        self.upstreams = upstreams
        self.timeout = timeout
        self.deadline = deadline
        self.max_concurrent = max_concurrent
        self.inflight = 0

    async def forward(self, wire: bytes, tcp: bool) -> bytes:
        """The upstream's answer to the query `wire`, with wire's ID."""
        if not self.upstreams:
            raise ForwardError("no upstream resolvers")
        if self.inflight >= self.max_concurrent:
            raise LimitExceeded()
        self.inflight += 1
        try:
            return await asyncio.wait_for(self._try_all(wire, tcp), self.deadline)
        except asyncio.TimeoutError:
            raise ForwardError("timed out") from None
        finally:
            self.inflight -= 1

    async def _try_all(self, wire: bytes, tcp: bool) -> bytes:
        last: Exception | None = None
        for host, port in self.upstreams:
            qid = secrets.randbits(16)
            query = struct.pack("!H", qid) + wire[2:]
            try:
                reply = await asyncio.wait_for(
                    (_tcp_exchange if tcp else _udp_exchange)(host, port, query, qid), self.timeout)
            except (OSError, asyncio.TimeoutError, ValueError, EOFError) as err:
                last = err
                continue
            return wire[:2] + reply[2:]
        raise ForwardError(str(last or "no answer"))


def _matches(reply: bytes, qid: int) -> bool:
    """A reply to our query: our random ID, QR set. The UDP socket is connected, so the kernel
    drops datagrams from any other address; a stray one with the wrong ID is ignored."""
    return len(reply) >= 12 and struct.unpack("!H", reply[:2])[0] == qid and bool(reply[2] & 0x80)


async def _udp_exchange(host: str, port: int, query: bytes, qid: int) -> bytes:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes] = loop.create_future()

    class _Proto(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: object) -> None:
            if not done.done() and _matches(data, qid):
                done.set_result(data)

        def error_received(self, exc: Exception) -> None:
            if not done.done():
                done.set_exception(exc)

    transport, _ = await loop.create_datagram_endpoint(_Proto, remote_addr=(host, port))
    try:
        transport.sendto(query)
        return await done
    finally:
        transport.close()


async def _tcp_exchange(host: str, port: int, query: bytes, qid: int) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(struct.pack("!H", len(query)) + query)
        await writer.drain()
        n = struct.unpack("!H", await reader.readexactly(2))[0]
        reply = await reader.readexactly(n)
        if not _matches(reply, qid):
            raise ValueError("reply does not match the query")
        return reply
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass

