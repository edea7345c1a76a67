"""Benchmark of recording Events end to end (not collected by pytest).

Run: .venv/bin/python tests/client/tools/record/bench_events.py [--pods 1000] [--rounds 5]
Old tree: PYTHONPATH=<tree>/src .venv/bin/python tests/client/tools/record/bench_events.py

Pushes what a density run records through real EventBroadcasters into an in-process API server
on memory storage (the clientsets `kubeplane up` gives its components):
- pod: per pod, the scheduler's "Scheduled" about the Pod and the kubelet's (one recorder per
  node, 100 nodes) "Pulled", "Created", "Started" about its container: 4 distinct events, 4 creates;
- rs: the replicaset-controller's "Created pod: <name>" about one ReplicaSet for every pod: similar
  events, aggregated after 10 and spam-filtered after 25 (so few writes, many drops).

Prints CPU time (time.process_time) per recorded event: total, server (inside route_trusted,
timed per coroutine step so other tasks are not counted) and client = total - server, both less
the cost of the timing itself. A first round warms up (imports, caches) and is not counted.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any, Generator

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.apiserver.server import APIServer
from kubeplane.client.tools.record import EventBroadcaster
from kubeplane.cmd.up import in_process_clientset
from kubeplane.storage import new_storage

NODES = 100
BATCH = 100         # pods recorded before the writers drain (keeps the 1000-event queue from dropping)


class _Timed:
    """Awaits a coroutine, adding the CPU time of each of its steps to acc[0] and 1 to acc[1].

    CPU time, not wall time: on a shared VM a preempted step would count the other
    process's time as the server's. A process_time() reading is a system call (~0.5 us,
    a sizeable share of a step), so run() removes the readings' own cost afterwards.
    """

    def __init__(self, coro: Any, acc: list[float]) -> None:
        self._coro, self._acc = coro, acc

    def __await__(self) -> Generator[Any, Any, Any]:
        it = self._coro.__await__()
        value: Any = None
        exc: BaseException | None = None
        acc = self._acc
        while True:
            t0 = time.process_time()
            try:
                y = it.throw(exc) if exc is not None else it.send(value)
            except StopIteration as e:
                acc[0] += time.process_time() - t0
                acc[1] += 1
                return e.value
            acc[0] += time.process_time() - t0
            acc[1] += 1
            try:
                value, exc = (yield y), None
            except BaseException as e:          # noqa: BLE001 - handed to the coroutine
                value, exc = None, e


def reading_cost() -> float:
    """CPU seconds of one process_time() reading (median of 5 batches)."""
    costs = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(20000):
            time.process_time()
        costs.append((time.process_time() - t0) / 20000)
    return statistics.median(costs)


def pod(i: int) -> core_v1.Pod:
    return types.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"density-5d8f7c-{i:05d}", "namespace": "default", "uid": f"pod-uid-{i:05d}",
                     "resourceVersion": str(100 + i)},
        "spec": {"nodeName": f"node-{i % NODES}", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}},
        core_v1.Pod)


def container_ref(p: core_v1.Pod) -> core_v1.ObjectReference:
    m = p.metadata
    return core_v1.ObjectReference(kind="Pod", api_version="v1", name=m.name, namespace=m.namespace, uid=m.uid,
                                   resource_version=m.resource_version, field_path="spec.containers{c}")


async def run(pods: list[core_v1.Pod], scenario: str) -> tuple[float, float, int]:
    """(total CPU s, server CPU s, events recorded) for one fresh server and broadcasters."""
    api = APIServer(new_storage("memory"))
    await api.bootstrap()
    server = [0.0, 0]                   # CPU seconds inside route_trusted, steps timed
    route = api.route_trusted
    api.route_trusted = lambda req: _Timed(route(req), server)     # type: ignore[method-assign]
    sched_b = EventBroadcaster(in_process_clientset(api, "kube-scheduler"))
    kubelet_b = EventBroadcaster(in_process_clientset(api, "kubelet"))
    rs_b = EventBroadcaster(in_process_clientset(api, "kube-controller-manager"))
    bs = [sched_b, kubelet_b, rs_b]
    for b in bs:
        b.start()
    sched = sched_b.new_recorder("default-scheduler")
    kubelets = [kubelet_b.new_recorder("kubelet", f"node-{n}") for n in range(NODES)]
    rsc = rs_b.new_recorder("replicaset-controller")
    rs = types.from_dict({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                          "metadata": {"name": "density-5d8f7c", "namespace": "default", "uid": "rs-uid",
                                       "resourceVersion": "7"}}, types.kind_type("apps/v1", "ReplicaSet"))
    n = 0
    t0 = time.process_time()
    for start in range(0, len(pods), BATCH):
        for i in range(start, min(start + BATCH, len(pods))):
            p = pods[i]
            m = p.metadata
            if scenario == "pod":
                sched.event(p, "Normal", "Scheduled", f"Successfully assigned {m.namespace}/{m.name} to node-{i % NODES}")
                k = kubelets[i % NODES]
                ref = container_ref(p)
                k.event(ref, "Normal", "Pulled", 'Container image "registry.k8s.io/pause:3.9" already present on machine')
                k.event(ref, "Normal", "Created", "Created container: c")
                k.event(ref, "Normal", "Started", "Started container c")
                n += 4
            else:
                rsc.eventf(rs, "Normal", "SuccessfulCreate", "Created pod: %s", m.name)
                n += 1
        for b in bs:
            await b.flush()
    total = time.process_time() - t0
    for b in bs:
        await b.shutdown()
    stored = (await in_process_clientset(api, "bench").core_v1().events("default").list()).items
    written = {"pod": 4 * len(pods), "rs": min(len(pods), 10)}[scenario]
    assert len(stored) == written, (scenario, len(stored), written)    # every distinct event, once
    # Each timed step costs two readings; about one falls inside the step's window, one outside.
    # Remove both from the total and one from the server's share.
    c = reading_cost()
    return total - 2 * c * server[1], server[0] - c * server[1], n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scenario", choices=["pod", "rs", "both"], default="both")
    args = ap.parse_args()
    pods = [pod(i) for i in range(args.pods)]
    scenarios = ["pod", "rs"] if args.scenario == "both" else [args.scenario]
    results: dict[str, list[tuple[float, float]]] = {s: [] for s in scenarios}
    for s in scenarios:
        asyncio.run(run(pods, s))                       # warm-up
    for r in range(args.rounds):
        line = [f"round {r}:"]
        for s in scenarios:
            total, server, n = asyncio.run(run(pods, s))
            results[s].append((total / n * 1e6, (total - server) / n * 1e6))
            line.append(f"{s}: total {total / n * 1e6:6.1f} client {(total - server) / n * 1e6:6.1f} us/event")
        print("  ".join(line), flush=True)
    for s in scenarios:
        tot = statistics.median(t for t, _ in results[s])
        cli = statistics.median(c for _, c in results[s])
        print(f"median {s}: total {tot:6.1f} client {cli:6.1f} us/event")


if __name__ == "__main__":
    main()
