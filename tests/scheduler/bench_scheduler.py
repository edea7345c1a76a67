"""Scheduler throughput: 1,000 pods on 100 nodes, in-process API server on memory storage.

    .venv/bin/python -m tests.scheduler.bench_scheduler [--pods 1000] [--nodes 100] [--profile]

Prints pods/s for (1) the scheduling cycles alone (filter + score + assume, no API) and
(2) the whole scheduler: pods created up front, informers synced, then Scheduler.run()
until every pod is bound through pods/binding and the watch confirmed it. Each figure is
by wall time, with the rate by this process's CPU time (steadier on a shared machine) in
brackets.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time

from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.scheduler import Scheduler, SchedulerOptions
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.runtime import default_framework
from kubeplane.scheduler.internal.cache import Cache, Snapshot
from kubeplane.scheduler.schedule_one import assume_copy, schedule_pod
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

from .helpers import make_node, make_pod, node_dict, pod_dict


class _Sched:
    """Just what schedule_pod needs."""

    def __init__(self) -> None:
        import random
        self.cache, self.snapshot = Cache(), Snapshot()
        self.framework = default_framework(snapshot=self.snapshot)
        self.next_start_node_index, self.percentage_of_nodes_to_score = 0, 0
        self.rng = random.Random(1)


def bench_cycles(n_pods: int, n_nodes: int) -> tuple[float, float]:
    s = _Sched()
    for i in range(n_nodes):
        s.cache.add_node(make_node(f"node-{i}", cpu="32", memory="128Gi"))
    pods = [make_pod(f"p{i}", requests={"cpu": "100m", "memory": "128Mi"}, labels={"app": "web"})
            for i in range(n_pods)]
    t0, c0 = time.perf_counter(), time.process_time()
    for pod in pods:
        r = schedule_pod(s, s.framework, CycleState(), pod)  # type: ignore[arg-type]
        s.cache.assume_pod(assume_copy(pod, r.suggested_host))
    return n_pods / (time.perf_counter() - t0), n_pods / (time.process_time() - c0)


async def bench_end_to_end(n_pods: int, n_nodes: int) -> tuple[float, float]:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    cs = Clientset(InProcessTransport(api))
    for i in range(n_nodes):
        await cs.core_v1().nodes().create(node_dict(f"node-{i}", cpu="32", memory="128Gi"))
    for i in range(n_pods):
        await cs.core_v1().pods("default").create(pod_dict(f"p{i}", requests={"cpu": "100m", "memory": "128Mi"},
                                                           labels={"app": "web"}))
    factory = SharedInformerFactory(cs)
    sched = Scheduler(cs, factory.core_v1().pods(), factory.core_v1().nodes(), recorder=FakeRecorder(),
                      options=SchedulerOptions(seed=1))
    factory.start()
    await factory.wait_for_cache_sync()
    t0, c0 = time.perf_counter(), time.process_time()
    task = asyncio.ensure_future(sched.run())
    while sched.scheduled < n_pods or sched.cache.assumed_pods:
        await asyncio.sleep(0.001)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await factory.shutdown()
    bound = sum(1 for p in (await cs.core_v1().pods("default").list()).items if p.spec.node_name)
    assert bound == n_pods, bound
    return n_pods / dt, n_pods / cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    prof = cProfile.Profile() if a.profile else None
    if prof:
        prof.enable()
    c = bench_cycles(a.pods, a.nodes)
    e = asyncio.run(bench_end_to_end(a.pods, a.nodes))
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
    print(f"scheduling cycles only: {c[0]:,.0f} pods/s (cpu {c[1]:,.0f}); end to end (bind + watch): "
          f"{e[0]:,.0f} pods/s (cpu {e[1]:,.0f}) ({a.pods} pods, {a.nodes} nodes)")


if __name__ == "__main__":
    main()
