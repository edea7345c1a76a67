"""The cluster DNS server: UDP and TCP on asyncio, answering from a ClusterZone, forwarding
the rest.

Messages (dnspython). dnspython and dnslib were compared on answering one A query (parse, build
the reply, pack; BENCHMARKS.md "Cluster DNS"): dnslib is ~3.5x faster per message, but drops
the query's EDNS OPT from its replies, has no truncation (TC) to a size, and accepts labels of
64 bytes, names over 255 and trailing bytes; dnspython keeps EDNS, truncates to the client's
size (`prefer_truncation`), rejects all of those (and pointer loops, as dnslib does) and is the
better kept of the two. The speed is won back where it matters: a header check with `struct` drops or refuses what
is not one query before anything is parsed, and answers of the zone are cached by the query's
bytes (bounded; emptied whenever the zone changes), so a repeated question costs a dict look-up.

What is refused, as CoreDNS's server (miekg/dns DefaultMsgAcceptFunc) does: fewer than 12 bytes
or a response (QR set): dropped; an opcode other than QUERY: NOTIMP; not exactly one question,
or more than 1 answer / 1 authority / 2 additional records: FORMERR; a message dnspython cannot
parse: FORMERR; EDNS version > 0: BADVERS. Answers of the zone carry AA; UDP answers fit 512
bytes or the client's EDNS size, else they are truncated with TC (the client retries on TCP).

TCP (RFC 7766): two-byte length framing, several queries per connection (answers may come out
of order when one is forwarded); a connection that does not complete a message within
`read_timeout` or sends nothing for `idle_timeout` is closed; at most `max_tcp` connections
(more are closed at once) and a bounded number of forwards in flight per connection (reading
pauses until they finish).

A listener may be bound to an address that is not local yet (`freebind`: IP_FREEBIND, as
NodeLocal DNSCache's and systemd's listeners on addresses that come and go): the pod network's
kube-proxy puts the cluster DNS IP on its interface when it starts (and again after a restart),
and packets to it reach the socket from then on, whichever of the two starts first.

Upstream: coredns core/dnsserver (server.go ServeDNS), miekg/dns (server.go, acceptfunc.go,
msg_truncate.go).
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Any, Awaitable, Callable

import dns.edns
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype

from .forward import Forwarder, ForwardError, LimitExceeded
from .records import REVERSE_ZONES, T_A, T_AAAA, T_CNAME, T_PTR, ClusterZone

log = logging.getLogger(__name__)

HEADER = struct.Struct("!HHHHHH")
MIN_UDP_SIZE = 512
MAX_UDP_SIZE = 4096            # what we advertise and honour at most (DNS flag day 2020: 1232 is safer, clients decide)
TCP_SIZE = 65535
CACHE_SIZE = 4096
READ_TIMEOUT = 2.0             # Upstream: miekg/dns server readTimeout
IDLE_TIMEOUT = 8.0             # Upstream: miekg/dns server idleTimeout (RFC 7766 suggests seconds)
MAX_TCP_CONNECTIONS = 100       # each an fd of the process the API server shares; TCP is the rare retry
MAX_TCP_INFLIGHT = 16
IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)     # <linux/in.h>; the socket module has it from 3.12

Reply = bytes | None | Awaitable[bytes | None]


def _error(wire: bytes, rcode: int) -> bytes:
    """A header-only reply: the query's ID and opcode and RD, QR set, `rcode`, no sections."""
    qid, flags = struct.unpack("!HH", wire[:4])
    return HEADER.pack(qid, 0x8000 | (flags & 0x7900) | (rcode & 0xF), 0, 0, 0, 0)


class DNSServer:
    """Answers DNS messages. `handle(wire, tcp)` is the whole contract: bytes to send back,
    None to drop, or an awaitable of either (a forwarded query)."""

    def __init__(self, zone: ClusterZone, forwarder: Forwarder | None = None, *,
                 cache_size: int = CACHE_SIZE) -> None:
        self.zone = zone
        self.forwarder = forwarder or Forwarder([])
        self.cache_size = cache_size
        self._cache: dict[bytes, bytes] = {}
        self._cache_generation = -1

    def handle(self, wire: bytes, tcp: bool) -> Reply:
        if len(wire) < 12:
            return None
        _, flags, qd, an, ns, ar = HEADER.unpack_from(wire)
        if flags & 0x8000:                          # a response: never answer one (reflection)
            return None
        if (flags >> 11) & 0xF != dns.opcode.QUERY:
            return _error(wire, dns.rcode.NOTIMP)
        if qd != 1 or an > 1 or ns > 1 or ar > 2:
            return _error(wire, dns.rcode.FORMERR)
        key = (b"T" if tcp else b"U") + wire[2:]
        if self._cache_generation != self.zone.generation:
            self._cache.clear()
            self._cache_generation = self.zone.generation
        hit = self._cache.get(key)
        if hit is not None:
            return wire[:2] + hit
        try:
            q = dns.message.from_wire(wire)
        except Exception:                           # dnspython raises many kinds: all are FORMERR
            return _error(wire, dns.rcode.FORMERR)
        return self._answer(q, wire, key, tcp)

    def _answer(self, q: dns.message.Message, wire: bytes, key: bytes, tcp: bool) -> Reply:
        question = q.question[0]
        qname, qtype = question.name, question.rdtype
        if q.edns > 0:
            r = self._reply(q)
            r.use_edns(0, 0, MAX_UDP_SIZE)
            r.set_rcode(dns.rcode.BADVERS)
            return self._pack(q, r, tcp)
        if question.rdclass != dns.rdataclass.IN or dns.rdatatype.is_metatype(qtype) and qtype != dns.rdatatype.ANY:
            return self._pack(q, self._refused(q), tcp)
        if qname.is_subdomain(self.zone.zone):
            rcode, answer, extra = self.zone.answer(qname, qtype)
            r = self._reply(q)
            r.flags |= dns.flags.AA
            r.set_rcode(dns.rcode.Rcode(rcode))
            r.answer.extend(answer)
            r.additional.extend(extra)
            if not answer and rcode in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
                r.authority.append(self.zone.soa())
            if qtype in (T_A, T_AAAA) and answer and answer[-1].rdtype == T_CNAME:
                target = answer[-1][0].target
                if not target.is_subdomain(self.zone.zone):
                    return self._chase(q, r, target, qtype, tcp)
            out = self._pack(q, r, tcp)
            if rcode != dns.rcode.SERVFAIL and self.cache_size > 0:
                if len(self._cache) >= self.cache_size:          # the oldest goes: bounded, no LRU book-keeping
                    del self._cache[next(iter(self._cache))]
                self._cache[key] = out[2:]
            return out
        if qtype == T_PTR and any(qname.is_subdomain(z) for z in REVERSE_ZONES):
            ptr = self.zone.reverse(qname)
            if ptr is not None:
                r = self._reply(q)
                r.flags |= dns.flags.AA
                r.answer.extend(ptr)
                return self._pack(q, r, tcp)
        return self._forward(q, wire, tcp)

    async def _forward(self, q: dns.message.Message, wire: bytes, tcp: bool) -> bytes | None:
        try:
            reply = await self.forwarder.forward(wire, tcp)
        except LimitExceeded:
            return self._pack(q, self._refused(q), tcp)
        except ForwardError as err:
            log.debug("cluster DNS: forwarding %s failed: %s", q.question[0].name, err)
            r = self._reply(q)
            r.set_rcode(dns.rcode.SERVFAIL)
            return self._pack(q, r, tcp)
        if not tcp and len(reply) > self._size(q, tcp):
            return self._truncated(q, reply, tcp)
        return reply

    async def _chase(self, q: dns.message.Message, r: dns.message.Message, target: dns.name.Name,
                     qtype: int, tcp: bool) -> bytes:
        """An ExternalName's CNAME leaves the zone: add the target's addresses from the upstream
        resolvers (none when they fail: the CNAME alone). Upstream: plugin.A, the CNAME case
        (backend_lookup.go), through the kubernetes plugin's Upstream.Lookup."""
        sub = dns.message.make_query(target, dns.rdatatype.RdataType(qtype))
        try:
            reply = dns.message.from_wire(await self.forwarder.forward(sub.to_wire(), tcp))
            r.answer.extend(reply.answer)
        except (ForwardError, LimitExceeded, dns.exception.DNSException):
            pass
        return self._pack(q, r, tcp)

    def _reply(self, q: dns.message.Message) -> dns.message.Message:
        r = dns.message.make_response(q, our_payload=MAX_UDP_SIZE)
        return r

    def _refused(self, q: dns.message.Message) -> dns.message.Message:
        r = self._reply(q)
        r.set_rcode(dns.rcode.REFUSED)
        return r

    def _size(self, q: dns.message.Message, tcp: bool) -> int:
        """Upstream: request.Size: TCP 64 KiB; UDP the EDNS size (at least 512), else 512."""
        if tcp:
            return TCP_SIZE
        return min(max(q.payload, MIN_UDP_SIZE), MAX_UDP_SIZE) if q.edns >= 0 else MIN_UDP_SIZE

    def _pack(self, q: dns.message.Message, r: dns.message.Message, tcp: bool) -> bytes:
        """The reply in the client's size. dnspython sets TC only when the answer or authority
        section was cut (RFC 2181); miekg/dns, and so CoreDNS, also when additional records
        were left out (Msg.Truncate: "we set the TC bit if any RR had to be omitted"): so do we."""
        out = r.to_wire(max_size=self._size(q, tcp), prefer_truncation=True)
        if r.additional and not out[2] & 0x02:
            wanted = sum(len(rrset) for rrset in r.additional) + (1 if r.edns >= 0 else 0)
            if (out[10] << 8 | out[11]) < wanted:
                out = out[:2] + bytes((out[2] | 0x02,)) + out[3:]
        return out

    def _truncated(self, q: dns.message.Message, reply: bytes, tcp: bool) -> bytes:
        try:
            r = dns.message.from_wire(reply)
        except Exception:
            r = self._reply(q)
            r.set_rcode(dns.rcode.SERVFAIL)
        return r.to_wire(max_size=self._size(q, tcp), prefer_truncation=True)


# --- transports ------------------------------------------------------------------------------

class _UDP(asyncio.DatagramProtocol):
    def __init__(self, server: DNSServer, spawn: Callable[[Any], None]) -> None:
        self.server = server
        self.spawn = spawn
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: Any) -> None:
        try:
            out = self.server.handle(data, False)
        except Exception:                     # a bug must not stop the endpoint
            log.exception("cluster DNS: answering a UDP query failed")
            return
        if isinstance(out, bytes):
            assert self.transport is not None
            self.transport.sendto(out, addr)
        elif out is not None:
            self.spawn(self._send_later(out, addr))

    async def _send_later(self, out: Awaitable[bytes | None], addr: Any) -> None:
        reply = await out
        if reply is not None and self.transport is not None and not self.transport.is_closing():
            self.transport.sendto(reply, addr)

    def error_received(self, exc: Exception) -> None:      # an ICMP error for an earlier reply
        pass


class _TCP(asyncio.Protocol):
    def __init__(self, listener: "DNSListener") -> None:
        self.listener = listener
        self.server = listener.server
        self.buf = bytearray()
        self.inflight = 0
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.paused = False
        self.reading = False                     # a partial message is buffered, its deadline armed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if len(self.listener.connections) >= self.listener.max_tcp:
            transport.abort()  # type: ignore[attr-defined]
            return
        self.listener.connections.add(self)
        self._arm(IDLE_TIMEOUT)

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.connections.discard(self)
        if self.timer is not None:
            self.timer.cancel()

    def _arm(self, seconds: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(seconds, self._timeout)

    def _timeout(self) -> None:
        if self.transport is not None and (self.inflight == 0 or self.reading):
            self.transport.abort()
        else:
            self._arm(IDLE_TIMEOUT)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._process()

    def _process(self) -> None:
        assert self.transport is not None
        while len(self.buf) >= 2 and not self.transport.is_closing():
            n = (self.buf[0] << 8) | self.buf[1]
            if len(self.buf) < 2 + n:
                break
            wire = bytes(self.buf[2:2 + n])
            del self.buf[:2 + n]
            self.reading = False
            self._arm(IDLE_TIMEOUT)
            if n < 12:
                self.transport.abort()            # nothing sensible can follow
                return
            try:
                out = self.server.handle(wire, True)
            except Exception:
                log.exception("cluster DNS: answering a TCP query failed")
                self.transport.abort()
                return
            if isinstance(out, bytes):
                self._send(out)
            elif out is not None:
                self.inflight += 1
                self.listener.spawn(self._send_later(out))
                if self.inflight >= MAX_TCP_INFLIGHT:
                    self.transport.pause_reading()
                    self.paused = True
                    break
        if self.buf and not self.reading and not self.paused:
            # a message begun must be complete READ_TIMEOUT after its first byte, however
            # slowly the rest trickles in (no slow-loris: later bytes do not extend it)
            self.reading = True
            self._arm(READ_TIMEOUT)

    def _send(self, out: bytes) -> None:
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.write(struct.pack("!H", len(out)) + out)

    async def _send_later(self, out: Awaitable[bytes | None]) -> None:
        try:
            reply = await out
            if reply is not None:
                self._send(reply)
        finally:
            self.inflight -= 1
            if self.paused and self.transport is not None and not self.transport.is_closing():
                self.paused = False
                self.transport.resume_reading()
                self._process()


class DNSListener:
    """One address: a UDP endpoint and a TCP server on the same port (0 picks a free one,
    the same for both)."""

    def __init__(self, server: DNSServer, *, max_tcp: int = MAX_TCP_CONNECTIONS) -> None:
        self.server = server
        self.max_tcp = max_tcp
        self.connections: set[_TCP] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.udp: asyncio.DatagramTransport | None = None
        self.tcp: asyncio.base_events.Server | None = None
        self.address: tuple[str, int] = ("", 0)

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("cluster DNS: a forwarded query failed", exc_info=task.exception())

    async def start(self, host: str, port: int, *, freebind: bool = False) -> tuple[str, int]:
        """Listen on host:port (UDP and TCP); freebind: host need not be a local address yet."""
        loop = asyncio.get_running_loop()
        for _ in range(10):               # port 0: find one free for both UDP and TCP
            where: dict[str, Any] = ({"sock": _freebind_socket(host, port, socket.SOCK_DGRAM)} if freebind
                                     else {"local_addr": (host, port)})
            udp, _ = await loop.create_datagram_endpoint(lambda: _UDP(self.server, self.spawn), **where)
            bound = udp.get_extra_info("sockname")[1]
            try:
                if freebind:
                    where = {"sock": _freebind_socket(host, bound, socket.SOCK_STREAM)}
                else:
                    where = {"host": host, "port": bound, "reuse_address": True}
                self.tcp = await loop.create_server(lambda: _TCP(self), **where)
            except OSError:
                udp.close()
                if port:
                    raise
                continue
            self.udp = udp
            self.address = (host, bound)
            return self.address
        raise OSError(f"no free port for DNS on {host}")

    async def stop(self) -> None:
        if self.udp is not None:
            self.udp.close()
        if self.tcp is not None:
            self.tcp.close()
            for c in list(self.connections):
                if c.transport is not None:
                    c.transport.abort()
            await self.tcp.wait_closed()
        for t in list(self.tasks):
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _freebind_socket(host: str, port: int, kind: int) -> socket.socket:
    """A socket bound to host:port with IP_FREEBIND (and SO_REUSEADDR for TCP, as the other
    listeners), non-blocking, for asyncio to take over."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, kind)
    try:
        sock.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        if kind == socket.SOCK_STREAM:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
