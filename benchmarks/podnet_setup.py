"""Network namespaces for pods: `ip` against pyroute2, and kubeplane's PodNetwork.

    python benchmarks/podnet_setup.py --pods 100                    # every backend available
    python benchmarks/podnet_setup.py --pods 100 --backend ip

Per backend: N network namespaces, each with a veth pair on one bridge (eth0 inside), an address,
lo up and a default route (what kubelet/network/pod_network.py does per pod), then all deleted;
wall-clock seconds for creating and for deleting. "ip": `ip` processes, one per command;
"pyroute2": netlink from Python (needs pyroute2 on PYTHONPATH); "kubeplane": PodNetwork.setup
and teardown as the runtime calls them (two `ip -batch` processes per pod, run from asyncio,
IPAM records on disk). Needs root; everything it makes is named kpb<pid>... and removed.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

PFX = f"kpb{os.getpid() % 100000}"
SUBNET = "10.250.{}.{}"


def _ip(*args: str, ns: str = "") -> None:
    subprocess.run(["ip", *(["-n", ns] if ns else []), *args], check=True, capture_output=True)


def with_ip(n: int) -> tuple[float, float]:
    br = PFX + "br"
    t0 = time.perf_counter()
    _ip("link", "add", br, "type", "bridge")
    _ip("addr", "add", SUBNET.format(0, 1) + "/16", "dev", br)
    _ip("link", "set", br, "up")
    for i in range(n):
        ns, h = f"{PFX}-{i}", f"{PFX}h{i}"
        _ip("netns", "add", ns)
        _ip("link", "add", h, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", h, "master", br, "up")
        _ip("addr", "add", SUBNET.format(i // 250, i % 250 + 2) + "/16", "dev", "eth0", ns=ns)
        _ip("link", "set", "lo", "up", ns=ns)
        _ip("link", "set", "eth0", "up", ns=ns)
        _ip("route", "add", "default", "via", SUBNET.format(0, 1), ns=ns)
    t1 = time.perf_counter()
    for i in range(n):
        _ip("link", "del", f"{PFX}h{i}")
        _ip("netns", "del", f"{PFX}-{i}")
    _ip("link", "del", br)
    return t1 - t0, time.perf_counter() - t1


def with_pyroute2(n: int) -> tuple[float, float]:
    from pyroute2 import IPRoute, NetNS, netns
    br = PFX + "br"
    t0 = time.perf_counter()
    with IPRoute() as ipr:
        ipr.link("add", ifname=br, kind="bridge")
        bri = ipr.link_lookup(ifname=br)[0]
        ipr.addr("add", index=bri, address=SUBNET.format(0, 1), prefixlen=16)
        ipr.link("set", index=bri, state="up")
        for i in range(n):
            ns, h = f"{PFX}-{i}", f"{PFX}h{i}"
            netns.create(ns)
            ipr.link("add", ifname=h, kind="veth", peer={"ifname": "eth0", "net_ns_fd": ns})
            ipr.link("set", index=ipr.link_lookup(ifname=h)[0], master=bri, state="up")
            with NetNS(ns) as nsr:
                eth = nsr.link_lookup(ifname="eth0")[0]
                nsr.addr("add", index=eth, address=SUBNET.format(i // 250, i % 250 + 2), prefixlen=16)
                nsr.link("set", index=nsr.link_lookup(ifname="lo")[0], state="up")
                nsr.link("set", index=eth, state="up")
                nsr.route("add", dst="0.0.0.0/0", gateway=SUBNET.format(0, 1))
        t1 = time.perf_counter()
        for i in range(n):
            ipr.link("del", index=ipr.link_lookup(ifname=f"{PFX}h{i}")[0])
            netns.remove(f"{PFX}-{i}")
        ipr.link("del", index=bri)
    return t1 - t0, time.perf_counter() - t1


def with_kubeplane(n: int) -> tuple[float, float]:
    from kubeplane.kubelet.network import PodNetwork, teardown_recorded
    root = pathlib.Path(tempfile.mkdtemp(prefix="podnet-bench-"))
    net = PodNetwork("netns", lambda: root)
    uids = [f"{PFX}-{i}" for i in range(n)]

    async def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        net.add_node("bench", "10.250.0.0/16")
        for uid in uids:
            await net.setup(uid, "bench")
        t1 = time.perf_counter()
        for uid in uids:
            await net.teardown(uid)
        net.close()
        return t1 - t0, time.perf_counter() - t1
    try:
        return asyncio.run(run())
    finally:
        teardown_recorded(root)


BACKENDS = {"ip": with_ip, "pyroute2": with_pyroute2, "kubeplane": with_kubeplane}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--backend", choices=sorted(BACKENDS), action="append")
    args = ap.parse_args()
    for name in args.backend or list(BACKENDS):
        try:
            create, delete = BACKENDS[name](args.pods)
        except ImportError as err:
            print(f"{name:10} skipped: {err}")
            continue
        print(f"{name:10} {args.pods} pods: create {create:.2f} s ({create / args.pods * 1e3:.1f} ms/pod), "
              f"delete {delete:.2f} s ({delete / args.pods * 1e3:.1f} ms/pod)")


if __name__ == "__main__":
    main()
