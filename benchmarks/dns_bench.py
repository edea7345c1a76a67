"""Cluster DNS benchmark: how fast one query is answered, by codec and through the server.

Run:  PYTHONPATH=src .venv/bin/python benchmarks/dns_bench.py [-n 20000] [--services 1000] [--window 32]

Phases (each prints a rate; CPU-bound, one core):
  codec      parse one A query, build the reply with one A record, pack it: dnspython (what the
             server uses) and, when installed, dnslib (the candidate compared)
  handle     DNSServer.handle() in process over --services Services: `miss` answers each query
             from the zone (the response cache off), `hit` repeats a question (the bounded cache)
  udp        queries/s over loopback UDP: the server (DNSListener on asyncio, as `up` runs it) in
             this process, a client in a second process keeping --window queries in flight over
             --services distinct names (mostly cache hits after the first round)
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import socket
import struct
import time
from typing import Any

import dns.message

from kubeplane.api.types import core_v1
from kubeplane.api.types.base import from_dict
from kubeplane.dns.records import ClusterZone
from kubeplane.dns.server import DNSListener, DNSServer


def zone(services: int) -> ClusterZone:
    z = ClusterZone(dns_ips=("10.96.0.10",))
    z.namespaces.add("default")
    for i in range(services):
        z.set_service(from_dict({"metadata": {"name": f"svc-{i}", "namespace": "default"},
                                 "spec": {"clusterIP": f"10.96.{i // 250}.{i % 250 + 2}",
                                          "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}},
                                core_v1.Service))
    return z


def rate(n: int, fn: Any) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t)


def codec(n: int) -> None:
    import dns.flags
    import dns.rdataclass
    import dns.rdatatype
    import dns.rrset
    from dns.rdtypes.IN.A import A
    wire = dns.message.make_query("web.default.svc.cluster.local.", "A").to_wire()

    def with_dnspython() -> bytes:
        q = dns.message.from_wire(wire)
        r = dns.message.make_response(q)
        r.flags |= dns.flags.AA
        rr = dns.rrset.RRset(q.question[0].name, dns.rdataclass.IN, dns.rdatatype.A)
        rr.update_ttl(5)
        rr.add(A(dns.rdataclass.IN, dns.rdatatype.A, "10.96.0.15"))
        r.answer.append(rr)
        return r.to_wire(max_size=512, prefer_truncation=True)

    print(f"codec dnspython: {rate(n, with_dnspython):,.0f} queries/s")
    try:
        import dnslib
    except ImportError:
        print("codec dnslib: not installed")
        return

    def with_dnslib() -> bytes:
        q = dnslib.DNSRecord.parse(wire)
        r = q.reply()
        r.add_answer(dnslib.RR(q.q.qname, dnslib.QTYPE.A, rdata=dnslib.A("10.96.0.15"), ttl=5))
        return bytes(r.pack())

    print(f"codec dnslib: {rate(n, with_dnslib):,.0f} queries/s")


def handle(n: int, services: int) -> None:
    queries = [dns.message.make_query(f"svc-{i % services}.default.svc.cluster.local.", "A").to_wire()
               for i in range(min(n, 5000))]
    miss = DNSServer(zone(services), cache_size=0)
    hit = DNSServer(zone(services))
    it = iter(range(1 << 62))
    print(f"handle miss: {rate(n, lambda: miss.handle(queries[next(it) % len(queries)], False)):,.0f} queries/s")
    print(f"handle hit: {rate(n, lambda: hit.handle(queries[0], False)):,.0f} queries/s")


def _client(port: int, n: int, services: int, window: int, out: Any) -> None:
    queries = [bytearray(dns.message.make_query(f"svc-{i}.default.svc.cluster.local.", "A").to_wire())
               for i in range(services)]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", port))
    s.settimeout(2)
    sent = received = lost = 0
    start = time.perf_counter()
    while received + lost < n:
        while sent - received - lost < window and sent < n:
            q = queries[sent % services]
            struct.pack_into("!H", q, 0, sent & 0xFFFF)
            s.send(q)
            sent += 1
        try:
            s.recv(4096)
            received += 1
        except socket.timeout:
            lost += sent - received - lost
    out.put((received / (time.perf_counter() - start), lost))


def udp(n: int, services: int, window: int) -> None:
    async def serve() -> None:
        listener = DNSListener(DNSServer(zone(services)))
        _, port = await listener.start("127.0.0.1", 0)
        out: Any = multiprocessing.Queue()
        proc = multiprocessing.Process(target=_client, args=(port, n, services, window, out))
        proc.start()
        while proc.is_alive() and out.empty():
            await asyncio.sleep(0.05)
        qps, lost = out.get()
        proc.join()
        await listener.stop()
        print(f"udp: {qps:,.0f} queries/s (window {window}, {lost} lost)")
    asyncio.run(serve())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=20000)
    p.add_argument("--services", type=int, default=1000)
    p.add_argument("--window", type=int, default=32)
    args = p.parse_args()
    codec(args.n)
    handle(args.n, args.services)
    udp(args.n, args.services, args.window)


if __name__ == "__main__":
    main()
