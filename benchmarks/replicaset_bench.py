"""ReplicaSet benchmark: scale 0 -> 1,000 -> 0 on `kubeplane up --nodes 0`; time until the RS
status converges (all pods created and reflected in status.replicas, then all deleted).

Run: .venv/bin/python benchmarks/replicaset_bench.py [--replicas 1000] [--storage sqlite] [--separate]
The client is this process over HTTPS (our clientset). Controllers run inside `kubeplane up`
(in-process transport), or with --separate in their own `kubeplane controller-manager` process
over HTTPS — the measurement behind running them in one process by default.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from api_bench import start_up, stop

from kubeplane.client.clientset import Clientset
from kubeplane.client.transport import HTTPTransport


def replica_set(replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
                     "template": {"metadata": {"labels": {"app": "bench"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}


async def wait_status(rs_client, replicas: int, rv: str) -> tuple[float, str]:
    """Watch the RS until status.replicas == replicas (and observedGeneration caught up)."""
    async for ev in rs_client.watch(resource_version=rv, field_selector="metadata.name=bench"):
        st = ev.obj.status
        if st and (st.replicas or 0) == replicas and st.observed_generation == ev.obj.metadata.generation:
            return time.perf_counter(), ev.resource_version
    raise RuntimeError("watch ended")


async def scale(rs_client, replicas: int) -> float:
    cur = await rs_client.get("bench")
    t0 = time.perf_counter()
    await rs_client.patch("bench", {"spec": {"replicas": replicas}}, "merge")
    t1, _ = await wait_status(rs_client, replicas, cur.metadata.resource_version)
    return t1 - t0


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        proc, _ = start_up(d, args.storage, ["--no-controllers"] if args.separate else [])
        cm = None
        if args.separate:
            cm = subprocess.Popen([sys.executable, "-m", "kubeplane", "controller-manager", "--kubeconfig",
                                   str(d / "kubeconfig"), "--no-leader-elect"], start_new_session=True)
        try:
            cs = Clientset(HTTPTransport.from_kubeconfig(d / "kubeconfig"))
            rs = cs.apps_v1().replicasets("default")
            await rs.create(replica_set(0))
            up = await scale(rs, args.replicas)
            pods = await cs.core_v1().pods("default").list()
            assert len(pods.items) == args.replicas, len(pods.items)
            down = await scale(rs, 0)
            print(f"scale_up_0_to_{args.replicas}_s={up:.3f} pods_per_s={args.replicas / up:.0f}")
            print(f"scale_down_{args.replicas}_to_0_s={down:.3f} pods_per_s={args.replicas / down:.0f}")
            await cs.close()
        finally:
            if cm is not None:
                stop(cm)
            stop(proc)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--replicas", type=int, default=1000)
    p.add_argument("--storage", default="sqlite")
    p.add_argument("--separate", action="store_true", help="controllers in their own process")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
