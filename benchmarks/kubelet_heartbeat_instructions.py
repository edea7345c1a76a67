"""Instructions per node heartbeat (callgrind): what an idle simulated node costs, load-independent.

Run:  .venv/bin/python benchmarks/kubelet_heartbeat_instructions.py [--src DIR ...] [--nodes 200]
          [--period 2] [--seconds 10]

A Kubelet with --nodes simulated nodes against an in-process APIServer (memory storage, no
controllers), under uvloop as in `kubeplane up`, runs its real heartbeat loop (Lease renewal
+ node status check per node per --period seconds; 200 nodes every 2 s is the rate of 1,000
nodes every 10 s, 100 renewals/s) under valgrind's callgrind. Counting starts one period
after the nodes registered and covers --seconds; the figure is the instructions counted
divided by the renewals made meanwhile: the kubelet's loop, its requests and the API
server's handling of them (the watch fan-out to informers and the node lifecycle controller
of `up` are not in it). CPU per idle node per second = figure / 10 s heartbeat period.
--src compares checkouts (each DIR holding src/kubeplane).
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


def _switch(on: bool) -> None:
    child = os.posix_spawnp("callgrind_control", ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
                            os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    os.waitpid(child, 0)


async def child(nodes: int, period: float, seconds: float) -> None:
    from kubeplane.apiserver.inprocess import InProcessTransport
    from kubeplane.apiserver.server import APIServer
    from kubeplane.client.clientset import Clientset
    from kubeplane.kubelet import node_names
    from kubeplane.kubelet.kubelet import Kubelet, KubeletOptions
    from kubeplane.kubelet.runtime.sim import SimRuntime
    from kubeplane.storage import new_storage
    from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    cs = Clientset(InProcessTransport(api))
    kl = Kubelet(cs, node_names=node_names(nodes), runtime=SimRuntime(), options=KubeletOptions(heartbeat_period=period))
    await kl.register_nodes()
    loop = asyncio.ensure_future(kl.heartbeat_loop())
    await asyncio.sleep(period * 1.5)                  # every Lease created, the renewals going
    renewals = sum(ns.lease.renewals for ns in kl.nodes.values())
    _switch(True)
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    _switch(False)
    dt = time.monotonic() - t0
    renewals = sum(ns.lease.renewals for ns in kl.nodes.values()) - renewals
    loop.cancel()
    print(f"renewals {renewals} in {dt:.2f} s (due: {nodes * dt / period:.0f})", flush=True)


def measure(src: str, args: argparse.Namespace) -> tuple[int, int]:
    with tempfile.TemporaryDirectory(prefix="hb-instr-") as d:
        out = pathlib.Path(d)
        env = {**os.environ, "PYTHONPATH": src}
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg.out",
                               sys.executable, __file__, "--child", "--nodes", str(args.nodes), "--period",
                               str(args.period), "--seconds", str(args.seconds)],
                              env=env, capture_output=True, text=True, check=True)
        renewals = int(proc.stdout.split("renewals ")[1].split()[0])
        total = sum(int(line.split()[1]) for f in out.glob("cg.out*")
                    for line in f.read_text(errors="replace").splitlines() if line.startswith("totals:"))
        print(f"{src}: {proc.stdout.strip()}")
        return total, renewals


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--src", action="append", help="a checkout (holding src/kubeplane); repeatable")
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--period", type=float, default=2.0)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    if args.child:
        import uvloop
        uvloop.install()
        asyncio.run(child(args.nodes, args.period, args.seconds))
        return
    for src in args.src or [str(pathlib.Path(__file__).resolve().parent.parent)]:
        total, renewals = measure(str(pathlib.Path(src) / "src"), args)
        print(f"  {total / max(1, renewals):,.0f} instructions per heartbeat ({renewals} renewals)", flush=True)


if __name__ == "__main__":
    main()
