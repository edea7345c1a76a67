"""DaemonSet benchmark: a DaemonSet rolled out to N simulated nodes, then updated.

Run: python benchmarks/daemonset_bench.py [--nodes 1000] [--max-unavailable 10%] [--storage sqlite]

A fresh `kubeplane up --nodes N` is started (sim runtime, default profile); once every Node
is Ready, the DaemonSet is created and timed until its status says every node runs an
available pod of the current template (desiredNumberScheduled == numberAvailable ==
updatedNumberScheduled == N, observedGeneration caught up): the rollout. Then the image is
changed and timed the same way (RollingUpdate with --max-unavailable): the update.
Target (issue 14): the rollout to 1,000 nodes in <= 5 s.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from api_bench import start_up, stop

from kubeplane.client.clientset import Clientset
from kubeplane.client.transport import HTTPTransport

NAME = "bench"


def daemonset(image: str, max_unavailable: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": NAME, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": NAME}},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": max_unavailable}},
                     "template": {"metadata": {"labels": {"app": NAME}},
                                  "spec": {"containers": [{"name": "c", "image": image}],
                                           "terminationGracePeriodSeconds": 0}}}}


def done(ds: Any, nodes: int, image: str) -> bool:
    st = ds.status
    if st is None or ds.spec.template.spec.containers[0].image != image:
        return False
    return ((st.observed_generation or 0) >= (ds.metadata.generation or 0)
            and (st.desired_number_scheduled or 0) == nodes and (st.number_available or 0) == nodes
            and (st.updated_number_scheduled or 0) == nodes)


async def wait_done(dss: Any, rv: str, nodes: int, image: str, timeout: float) -> float:
    async def watch() -> float:
        async for ev in dss.watch(resource_version=rv, field_selector=f"metadata.name={NAME}"):
            if done(ev.obj, nodes, image):
                return time.perf_counter()
        raise RuntimeError("watch ended")
    return await asyncio.wait_for(watch(), timeout)


async def wait_nodes_ready(cs: Clientset, nodes: int, timeout: float) -> None:
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        items = (await cs.core_v1().nodes().list()).items or []
        ready = sum(any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
                    for n in items if n.status)
        if ready >= nodes:
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"fewer than {nodes} nodes Ready after {timeout}s")


async def measure(data: pathlib.Path, args: argparse.Namespace) -> dict[str, float]:
    cs = Clientset(HTTPTransport.from_kubeconfig(data / "kubeconfig"))
    try:
        await wait_nodes_ready(cs, args.nodes, args.timeout)
        dss = cs.apps_v1().daemonsets("default")
        rv = (await dss.list()).resource_version
        t0 = time.perf_counter()
        await dss.create(daemonset("bench:v1", args.max_unavailable))
        rollout = await wait_done(dss, rv, args.nodes, "bench:v1", args.timeout) - t0
        cur = await dss.get(NAME)
        t1 = time.perf_counter()
        await dss.patch(NAME, {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "bench:v2"}]}}}})
        update = await wait_done(dss, cur.metadata.resource_version, args.nodes, "bench:v2", args.timeout) - t1
        return {"rollout_s": rollout, "update_s": update}
    finally:
        await cs.close()


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="kubeplane-ds-bench-") as tmp:
        data = pathlib.Path(tmp)
        proc, startup = start_up(data, args.storage, ["--nodes", str(args.nodes)])
        profile = None
        try:
            if args.profile:
                from rollout_bench import Profiler
                Profiler.COMPONENTS = {"daemonset_controller": "controller/daemon/", **Profiler.COMPONENTS}
                profiler = Profiler(proc.pid, pathlib.Path(args.profile))
            r = await measure(data, args)
            if args.profile:
                profile = profiler.stop()
        finally:
            stop(proc)
    print(f"daemonset nodes={args.nodes} storage={args.storage} (up ready in {startup:.1f} s)")
    print(f"  rollout to every node: {r['rollout_s']:.2f} s ({args.nodes / r['rollout_s']:.0f} pods/s)")
    print(f"  update (maxUnavailable {args.max_unavailable}): {r['update_s']:.2f} s")
    if profile:
        print("  CPU s by component (py-spy, whole run):", {k: round(v, 2) for k, v in profile.items()})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--max-unavailable", default="10%")
    p.add_argument("--storage", default="sqlite")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--profile", metavar="FILE", help="sample the server with py-spy into FILE (raw); print CPU by component")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
