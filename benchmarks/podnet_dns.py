"""DNS libraries for the cluster DNS (kubelet/network/dns.py): dnslib against dnspython.

    PYTHONPATH=src:<dir with both> python benchmarks/podnet_dns.py [--answers 20000] [--fuzz 3000]

Per library: import time, µs to parse an A query and build + encode its answer, that each
parses the other's answer (correctness), and what it raises on random packets and on a
compression-pointer loop (robustness: an exception, never a hang or a crash).
"""
from __future__ import annotations

import argparse
import importlib
import os
import random
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=20000)
    ap.add_argument("--fuzz", type=int, default=3000)
    args = ap.parse_args()
    t = time.perf_counter()
    dnslib: Any = importlib.import_module("dnslib")
    t1 = time.perf_counter()
    for m in ("dns.message", "dns.rrset", "dns.flags"):
        importlib.import_module(m)
    t2 = time.perf_counter()
    import dns.flags
    import dns.message
    import dns.rrset
    print(f"import: dnslib {1e3 * (t1 - t):.0f} ms, dnspython {1e3 * (t2 - t1):.0f} ms")
    query = bytes(dnslib.DNSRecord.question("web.default.svc.cluster.local", "A").pack())

    def with_dnslib(raw: bytes) -> bytes:
        r = dnslib.DNSRecord.parse(raw)
        a = r.reply()
        a.add_answer(dnslib.RR(str(r.q.qname), dnslib.QTYPE.A, rdata=dnslib.A("10.96.0.20"), ttl=30))
        return bytes(a.pack())

    def with_dnspython(raw: bytes) -> bytes:
        m = dns.message.from_wire(raw)
        a = dns.message.make_response(m)
        a.flags |= dns.flags.AA
        a.answer.append(dns.rrset.from_text(m.question[0].name, 30, "IN", "A", "10.96.0.20"))
        return bytes(a.to_wire())

    for f in (with_dnslib, with_dnspython):
        t = time.perf_counter()
        for _ in range(args.answers):
            f(query)
        print(f"{f.__name__}: {(time.perf_counter() - t) / args.answers * 1e6:.1f} µs per answer")
    print("dnspython reads dnslib's answer:", dns.message.from_wire(with_dnslib(query)).answer)
    print("dnslib reads dnspython's answer:", dnslib.DNSRecord.parse(with_dnspython(query)).rr)
    loop = bytes.fromhex("abcd01000001000000000000") + b"\xc0\x0c\x00\x01\x00\x01"
    rnd = random.Random(1)
    packets = [loop, query[:20], *(os.urandom(rnd.randint(0, 60)) for _ in range(args.fuzz))]
    for name, parse in (("dnslib", dnslib.DNSRecord.parse), ("dnspython", dns.message.from_wire)):
        kinds: dict[str, int] = {}
        for raw in packets:
            try:
                parse(raw)
                kinds["parsed"] = kinds.get("parsed", 0) + 1
            except Exception as err:
                kinds[type(err).__name__] = kinds.get(type(err).__name__, 0) + 1
        print(f"{name} on {len(packets)} malformed packets: {kinds}")


if __name__ == "__main__":
    main()
