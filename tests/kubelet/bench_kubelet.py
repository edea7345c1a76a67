"""Kubelet throughput: 1,000 bound pods on 100 sim nodes, in-process API server on memory storage.

    .venv/bin/python -m tests.kubelet.bench_kubelet [--pods 1000] [--nodes 100] [--runs 1]
                                                    [--real-delays] [--profile]

Pods are created already bound (spec.nodeName set, round-robin over the nodes) before the
kubelet starts; the kubelet (Kubelet + SimRuntime + EventBroadcaster, wired as run_kubelet
wires them, default profile with every delay set to 0 unless --real-delays) then runs until
the status manager has written Ready=True for every pod. Prints pods/s, status writes per
pod, the process CPU time of the run (time.process_time: API server, storage, events and
kubelet together, garbage collection shown apart) and the kubelet's own CPU: time inside pod
syncs (Kubelet.sync), its runtime event handler (Kubelet._on_runtime_change) and the sim
runtime's stage steps (SimRuntime._apply / _advance), outermost call only, less the garbage collections that happened to run inside them.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pathlib
import pstats
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.tools.record import EventBroadcaster
from kubeplane.client.tools.record.event import MAX_QUEUED_EVENTS
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.kubelet import node_names
from kubeplane.kubelet.kubelet import Kubelet, KubeletOptions
from kubeplane.kubelet.runtime.sim import SimRuntime
from kubeplane.kubelet.runtime.sim.lifecycle import load_profile
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

from conftest import zero_delays


class Meter:
    """CPU seconds spent inside the wrapped callables (nested calls are counted once), and
    the garbage collector's share of it: a collection runs inside whichever code allocates
    when the threshold is crossed, so it lands in the kubelet's share at random (1,000
    pods' worth of API objects make a full collection cost tens of milliseconds).
    """

    def __init__(self) -> None:
        self.cpu = 0.0
        self.depth = 0
        self.gc = 0.0                      # all collections during the run
        self.gc_inside = 0.0               # those that ran inside a wrapped call
        self._gc_t0 = 0.0

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_t0 = time.process_time()
            return
        dt = time.process_time() - self._gc_t0
        self.gc += dt
        if self.depth:
            self.gc_inside += dt

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            t0 = time.process_time() if self.depth == 1 else 0.0
            try:
                return fn(*args, **kwargs)
            finally:
                if self.depth == 1:
                    self.cpu += time.process_time() - t0
                self.depth -= 1
        return timed

    def wrap_async(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """For a coroutine function whose body never suspends (Kubelet.sync)."""
        async def timed(*args: Any) -> Any:
            self.depth += 1
            t0 = time.process_time()
            try:
                return await fn(*args)
            finally:
                self.cpu += time.process_time() - t0
                self.depth -= 1
        return timed


def pod_dict(name: str, node: str) -> dict[str, Any]:
    """A Deployment-like pod: labels, one container with requests, bound to node."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web", "pod-template-hash": "abc"}},
            "spec": {"nodeName": node, "containers": [
                {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def _ready(status: dict[str, Any] | None) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (status or {}).get("conditions") or ())


async def bench(n_pods: int, n_nodes: int, real_delays: bool) -> dict[str, float]:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    cs = Clientset(InProcessTransport(api))
    names = node_names(n_nodes)
    for i in range(n_pods):
        await cs.core_v1().pods("default").create(pod_dict(f"web-{i}", names[i % n_nodes]))
    stages = load_profile("default")
    broadcaster = EventBroadcaster(cs, max_queued_events=MAX_QUEUED_EVENTS * n_nodes)   # as run_kubelet
    rt = SimRuntime(profile=stages if real_delays else zero_delays(stages))
    kl = Kubelet(cs, node_names=names, runtime=rt, options=KubeletOptions(), broadcaster=broadcaster)
    meter = Meter()
    kl.pod_workers.sync = meter.wrap_async(kl.pod_workers.sync)
    rt._apply = meter.wrap(rt._apply)            # type: ignore[method-assign]
    rt._advance = meter.wrap(rt._advance)        # type: ignore[method-assign]
    rt.set_event_handler(meter.wrap(kl._on_runtime_change))     # the kubelet's PLEG filter
    broadcaster.start()
    gc.callbacks.append(meter.on_gc)
    c0, t0 = time.process_time(), time.perf_counter()
    task = asyncio.ensure_future(kl.run())
    sm = kl.status_manager
    while True:
        await asyncio.sleep(0.005)
        if sm.writes >= n_pods and sum(1 for s in sm.written.values() if _ready(s)) >= n_pods:
            break
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    gc.callbacks.remove(meter.on_gc)
    writes = sm.writes
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await broadcaster.shutdown()
    return {"wall": dt, "cpu": cpu, "kubelet_cpu": meter.cpu - meter.gc_inside, "gc": meter.gc,
            "writes": writes, "syncs": kl.pod_workers.syncs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--real-delays", action="store_true", help="the default profile's delays (up to 300 ms)")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    results = []
    for _ in range(a.runs):
        prof = cProfile.Profile() if a.profile else None
        if prof:
            prof.enable()
        r = asyncio.run(bench(a.pods, a.nodes, a.real_delays))
        if prof:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(60)
        results.append(r)
        print(f"{a.pods} pods on {a.nodes} nodes Ready in {r['wall']:.2f} s ({a.pods / r['wall']:,.0f} pods/s); "
              f"CPU {r['cpu']:.2f} s (GC {r['gc']:.3f} s), kubelet's own {r['kubelet_cpu']:.3f} s "
              f"({r['kubelet_cpu'] / a.pods * 1e6:,.0f} us/pod, GC excluded); "
              f"{r['writes'] / a.pods:.2f} status writes/pod, {r['syncs'] / a.pods:.2f} syncs/pod", flush=True)
    if a.runs > 1:
        for key, label in (("wall", "wall s"), ("cpu", "CPU s"), ("gc", "GC s"), ("kubelet_cpu", "kubelet CPU s")):
            vals = [r[key] for r in results]
            print(f"{label}: best {min(vals):.3f}, median {statistics.median(vals):.3f}")


if __name__ == "__main__":
    main()
