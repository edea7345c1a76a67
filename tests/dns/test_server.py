"""The DNS server as an attacker sees it: malformed and oversized messages are refused or
dropped at once, UDP answers are truncated to the client's size, TCP clients that stall are
closed, and names outside the zone are forwarded (SERVFAIL when no upstream answers)."""
from __future__ import annotations

import asyncio
import struct
from typing import Any

import dns.asyncquery
import dns.edns
import dns.flags
import dns.message
import dns.rcode
import pytest

from kubeplane.dns import server as server_mod
from kubeplane.dns.forward import Forwarder
from kubeplane.dns.server import DNSListener, DNSServer
from zone_fixtures import endpoint_slice, service, zone_with

QUERY = dns.message.make_query("web.default.svc.cluster.local.", "A").to_wire()


def header(wire: bytes) -> tuple[int, ...]:
    return struct.unpack("!HHHHHH", wire[:12])


@pytest.fixture
def server() -> DNSServer:
    many = [{"addresses": [f"10.244.{i // 250}.{i % 250 + 1}"], "conditions": {"ready": True}} for i in range(200)]
    return DNSServer(zone_with(service("web"), service("big", cluster_ip="None"), endpoint_slice("big", many)))


def test_short_packets_and_responses_are_dropped(server: DNSServer) -> None:
    assert server.handle(b"", False) is None
    assert server.handle(QUERY[:11], False) is None
    response = bytearray(QUERY)
    response[2] |= 0x80                                   # QR: a reflected answer is never answered
    assert server.handle(bytes(response), False) is None


@pytest.mark.parametrize("counts,rcode", [((2, 0, 0, 0), dns.rcode.FORMERR), ((0, 0, 0, 0), dns.rcode.FORMERR),
                                          ((1, 2, 0, 0), dns.rcode.FORMERR), ((1, 0, 2, 0), dns.rcode.FORMERR),
                                          ((1, 0, 0, 3), dns.rcode.FORMERR), ((65535, 0, 0, 0), dns.rcode.FORMERR)])
def test_section_counts_outside_one_query_are_formerr(server: DNSServer, counts: tuple[int, ...], rcode: int) -> None:
    wire = QUERY[:4] + struct.pack("!HHHH", *counts) + QUERY[12:] * 2
    out = server.handle(wire, False)
    assert isinstance(out, bytes) and len(out) == 12
    qid, flags, *rest = header(out)
    assert qid == header(QUERY)[0] and flags & 0x8000 and flags & 0xF == rcode and rest == [0, 0, 0, 0]


def test_other_opcodes_are_notimp(server: DNSServer) -> None:
    wire = bytearray(QUERY)
    wire[2] |= 2 << 3                                     # STATUS
    out = server.handle(bytes(wire), False)
    assert isinstance(out, bytes) and header(out)[1] & 0xF == dns.rcode.NOTIMP


@pytest.mark.parametrize("body", [
    b"\xc0\x0c\x00\x01\x00\x01",                          # a compression pointer to itself
    b"\x3f" + b"a" * 20,                                  # a label running past the end
    b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01",         # a label of 64 bytes
    (b"\x3f" + b"a" * 63) * 5 + b"\x00\x00\x01\x00\x01",  # a name over 255 bytes
    b"\x03web\x00\x00\x01",                               # the question cut short
    b"\x03web\x00\x00\x01\x00\x01" + b"junk",             # trailing bytes
])
def test_malformed_questions_are_formerr(server: DNSServer, body: bytes) -> None:
    out = server.handle(QUERY[:12] + body, False)
    assert isinstance(out, bytes) and header(out)[1] & 0xF == dns.rcode.FORMERR


def test_edns_version_above_0_is_badvers(server: DNSServer) -> None:
    q = dns.message.make_query("web.default.svc.cluster.local.", "A", use_edns=1)
    out = server.handle(q.to_wire(), False)
    assert isinstance(out, bytes) and dns.message.from_wire(out).rcode() == dns.rcode.BADVERS


def test_udp_answers_are_truncated_to_the_client_size(server: DNSServer) -> None:
    q = dns.message.make_query("big.default.svc.cluster.local.", "A")
    out = server.handle(q.to_wire(), False)
    assert isinstance(out, bytes) and len(out) <= 512
    assert dns.message.from_wire(out).flags & dns.flags.TC
    edns = dns.message.make_query("big.default.svc.cluster.local.", "A", use_edns=0, payload=4096)
    m = dns.message.from_wire(server.handle(edns.to_wire(), False))  # type: ignore[arg-type]
    assert not m.flags & dns.flags.TC and len(m.answer[0]) == 200 and m.edns == 0
    tcp = server.handle(q.to_wire(), True)
    assert isinstance(tcp, bytes) and len(dns.message.from_wire(tcp).answer[0]) == 200


def test_a_name_outside_the_zone_without_upstreams_is_servfail(server: DNSServer) -> None:
    out = server.handle(dns.message.make_query("example.com.", "A").to_wire(), False)
    assert not isinstance(out, (bytes, type(None)))
    m = dns.message.from_wire(asyncio.run(out))  # type: ignore[arg-type]
    assert m.rcode() == dns.rcode.SERVFAIL


async def _upstream(answer: str) -> tuple[DNSListener, tuple[str, int]]:
    """A second DNSServer standing in for the host's resolver: it holds `example.` itself."""
    import dns.name

    from kubeplane.dns.records import ClusterZone
    z = ClusterZone(zone=dns.name.from_text("example."), dns_ips=(answer,))
    listener = DNSListener(DNSServer(z))
    return listener, await listener.start("127.0.0.1", 0)


def test_forwarding_over_udp_and_tcp_and_the_limit() -> None:
    async def run() -> None:
        up, addr = await _upstream("192.0.2.7")
        own = DNSListener(DNSServer(zone_with(), Forwarder([addr])))
        host, port = await own.start("127.0.0.1", 0)
        try:
            q = dns.message.make_query("ns.dns.example.", "A")
            for query in (dns.asyncquery.udp, dns.asyncquery.tcp):
                m = await query(q, host, port=port, timeout=5)
                assert m.id == q.id and [rd.to_text() for rd in m.answer[0]] == ["192.0.2.7"]
            own.server.forwarder.max_concurrent = 0
            m = await dns.asyncquery.udp(q, host, port=port, timeout=5)
            assert m.rcode() == dns.rcode.REFUSED
        finally:
            await own.stop()
            await up.stop()
    asyncio.run(run())


def test_a_dead_upstream_is_servfail_within_the_deadline() -> None:
    async def run() -> None:
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))                  # bound, never answers
        fwd = Forwarder([s.getsockname()], timeout=0.2, deadline=0.5)
        own = DNSListener(DNSServer(zone_with(), fwd))
        host, port = await own.start("127.0.0.1", 0)
        try:
            m = await dns.asyncquery.udp(dns.message.make_query("example.com.", "A"), host, port=port, timeout=5)
            assert m.rcode() == dns.rcode.SERVFAIL
        finally:
            await own.stop()
            s.close()
    asyncio.run(run())


def test_tcp_pipelined_queries_and_stalled_clients(monkeypatch: Any) -> None:
    monkeypatch.setattr(server_mod, "READ_TIMEOUT", 0.2)
    monkeypatch.setattr(server_mod, "IDLE_TIMEOUT", 0.4)

    async def run() -> None:
        own = DNSListener(zone_server(), max_tcp=2)
        host, port = await own.start("127.0.0.1", 0)
        try:
            r, w = await asyncio.open_connection(host, port)
            w.write((struct.pack("!H", len(QUERY)) + QUERY) * 3)     # three queries in one write
            for _ in range(3):
                n = struct.unpack("!H", await r.readexactly(2))[0]
                assert dns.message.from_wire(await r.readexactly(n)).answer
            w.write(struct.pack("!H", len(QUERY)) + QUERY[:5])         # a message begun, never finished
            assert await asyncio.wait_for(r.read(), 5) == b""          # closed by the server
            w.close()
            idle_r, idle_w = await asyncio.open_connection(host, port)  # says nothing at all
            assert await asyncio.wait_for(idle_r.read(), 5) == b""
            idle_w.close()
            conns = [await asyncio.open_connection(host, port) for _ in range(3)]   # max_tcp=2
            assert await asyncio.wait_for(conns[2][0].read(), 5) == b""
            for _, cw in conns:
                cw.close()
        finally:
            await own.stop()
    asyncio.run(run())


def zone_server() -> DNSServer:
    return DNSServer(zone_with(service("web")))


def test_a_tcp_length_prefix_below_a_header_closes_the_connection() -> None:
    async def run() -> None:
        own = DNSListener(zone_server())
        host, port = await own.start("127.0.0.1", 0)
        try:
            r, w = await asyncio.open_connection(host, port)
            w.write(b"\x00\x03abc")
            assert await asyncio.wait_for(r.read(), 5) == b""
            w.close()
            m = await dns.asyncquery.udp(dns.message.make_query("web.default.svc.cluster.local.", "A"), host,
                                         port=port, timeout=5)            # the server still answers
            assert m.answer
        finally:
            await own.stop()
    asyncio.run(run())


def test_a_slowly_trickled_tcp_message_is_not_given_more_time(monkeypatch: Any) -> None:
    monkeypatch.setattr(server_mod, "READ_TIMEOUT", 0.3)

    async def run() -> None:
        own = DNSListener(zone_server())
        host, port = await own.start("127.0.0.1", 0)
        try:
            r, w = await asyncio.open_connection(host, port)
            message = struct.pack("!H", len(QUERY)) + QUERY
            closed = False
            for i in range(len(message) - 1):            # one byte at a time, never the last one
                w.write(message[i:i + 1])
                try:
                    closed = await asyncio.wait_for(r.read(), 0.1) == b""
                except asyncio.TimeoutError:
                    continue
                if closed:
                    break
            assert closed, "the server waited for the whole trickle"
            w.close()
        finally:
            await own.stop()
    asyncio.run(run())


def test_a_freebind_listener_needs_no_local_address_yet() -> None:
    """The pod network's listener on the cluster DNS IP: bound before the kube-proxy makes the
    address local (192.0.2.53, TEST-NET-1, is local nowhere)."""
    async def run() -> None:
        plain = DNSListener(DNSServer(zone_with()))
        with pytest.raises(OSError):
            await plain.start("192.0.2.53", 0)
        own = DNSListener(DNSServer(zone_with()))
        host, port = await own.start("192.0.2.53", 0, freebind=True)
        try:
            assert host == "192.0.2.53" and port
            assert own.udp is not None and own.udp.get_extra_info("sockname") == (host, port)
            assert own.tcp is not None and own.tcp.sockets[0].getsockname() == (host, port)
        finally:
            await own.stop()
    asyncio.run(run())
