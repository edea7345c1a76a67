"""Can kube-proxy's nftables rules be written without the `nft` binary? pyroute2's nftables
netlink API, in a scratch network namespace: a table, a nat chain on the output hook, N DNAT
rules as upstream's nftables proxier writes one per Service port (`ip daddr VIP tcp dport P
dnat to EP:PORT`, here as the raw expressions nft compiles it to), a TCP connection through the
first, then the table deleted.

    PYTHONPATH=/tmp/deps python benchmarks/nft_dnat_pyroute2.py --rules 1000    # root; pyroute2 needed

Prints the seconds taken to add the rules (each rule is its own nfnetlink transaction with
pyroute2's rule('add')) and the reply that came through the DNAT. Everything it makes is in a
namespace named kpnft<pid>, deleted at the end. An evaluation only: kubeplane ships no nftables
proxier (kubelet/network/proxy.py is the userspace one; BENCHMARKS.md has the result).
"""
from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import Any


def genex(name: str, kwarg: dict[str, Any]) -> Any:
    from pyroute2.nftables.expressions import genex as g
    return g(name, kwarg)


def dnat_rule(vip: str, port: int, ep: str, ep_port: int) -> list[Any]:
    """`ip daddr vip tcp dport port dnat to ep:ep_port` as nft compiles it."""
    def value(data: bytes) -> dict[str, Any]:
        return {"attrs": [("NFTA_DATA_VALUE", data)]}
    return [[genex("payload", OrderedDict(dreg=1, base=1, offset=16, len=4)),      # ip daddr
             genex("cmp", OrderedDict(sreg=1, op=0, data=value(socket.inet_aton(vip)))),
             genex("meta", OrderedDict(dreg=1, key=16)),                               # meta l4proto
             genex("cmp", OrderedDict(sreg=1, op=0, data=value(b"\x06"))),
             genex("payload", OrderedDict(dreg=1, base=2, offset=2, len=2)),          # th dport
             genex("cmp", OrderedDict(sreg=1, op=0, data=value(struct.pack("!H", port)))),
             genex("immediate", OrderedDict(dreg=1, data=value(socket.inet_aton(ep)))),
             genex("immediate", OrderedDict(dreg=2, data=value(struct.pack("!H", ep_port)))),
             genex("nat", OrderedDict(type=1, family=2, reg_addr_min=1, reg_proto_min=2))]]


def inside(rules: int) -> None:
    from pyroute2.nftables.main import NFTables
    nft = NFTables(nfgen_family=2)
    nft.table("add", name="kube-proxy")
    nft.chain("add", table="kube-proxy", name="nat-output", hook="output", type="nat", priority=-100)
    srv = socket.socket()
    srv.bind(("10.1.1.1", 8080))
    srv.listen()

    def answer() -> None:
        conn, _ = srv.accept()
        conn.sendall(b"through the DNAT")
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    t0 = time.perf_counter()
    for i in range(rules):
        nft.rule("add", table="kube-proxy", chain="nat-output",
                 expressions=dnat_rule(f"10.96.{(i + 1) // 256}.{(i + 1) % 256}", 80, "10.1.1.1", 8080))
    took = time.perf_counter() - t0
    with socket.create_connection(("10.96.0.1", 80), timeout=3) as c:
        reply = c.recv(100)
    listed = len(list(nft.get_rules()))
    nft.table("del", name="kube-proxy")
    print(f"{rules} DNAT rules in {took:.3f} s ({took / rules * 1e3:.2f} ms each), {listed} listed; "
          f"reply: {reply.decode()!r}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", type=int, default=100)
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        inside(args.rules)
        return
    ns = f"kpnft{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for cmd in (["link", "set", "lo", "up"], ["link", "add", "d0", "type", "bridge"],
                    ["addr", "add", "10.1.1.1/24", "dev", "d0"], ["link", "set", "d0", "up"],
                    ["route", "add", "10.96.0.0/16", "dev", "d0"]):
            subprocess.run(["ip", "-n", ns, *cmd], check=True)
        subprocess.run(["ip", "netns", "exec", ns, sys.executable, __file__, "--inside", "--rules", str(args.rules)],
                       check=True)
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=False)


if __name__ == "__main__":
    main()
