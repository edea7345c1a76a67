"""Micro-benchmark of the controllers' per-pod client-side work (not collected by pytest).

Run: .venv/bin/python tests/controller/bench_hot_paths.py [--pods 1000] [--rounds 3]

CPU time (time.process_time) of:
- rs-sync: a steady-state ReplicaSet sync over --pods cached pods (list the namespace, claim,
  compute status; no write because the cached status is already right), per sync;
- rank: get_pods_to_delete choosing half of the pods (the scale-down sort), per call;
- events: recorder.event + correlation of distinct "Created pod" events into a no-op sink, per event;
- informer: SharedIndexInformer.update of a cached pod with two handlers, per event.
To compare with another tree: PYTHONPATH=<tree>/src .venv/bin/python tests/controller/bench_hot_paths.py
"""
from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from kubeplane.api import types
from kubeplane.api.types import ObjectName, apps_v1, core_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.cache import ResourceEventHandlerFuncs, SharedIndexInformer
from kubeplane.client.tools.record import EventBroadcaster
from kubeplane.controller.replicaset import ReplicaSetController
from kubeplane.controller.replicaset.replica_set import get_pods_to_delete
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
LABELS = {"app": "bench", "pod-template-hash": "5d8f7c"}


def rs_obj(n: int) -> apps_v1.ReplicaSet:
    return types.from_dict({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "bench-5d8f7c", "namespace": "default", "uid": "rs-uid", "generation": 1,
                     "resourceVersion": "1",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "bench",
                                          "uid": "d-uid", "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"replicas": n, "selector": {"matchLabels": LABELS},
                 "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "x"}]}}},
        "status": {"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": n, "availableReplicas": n,
                   "terminatingReplicas": 0, "observedGeneration": 1}}, apps_v1.ReplicaSet)


def pod_obj(i: int, rv: int = 1) -> core_v1.Pod:
    t = rfc3339(NOW - 3600 - i)
    conds = [{"type": ty, "status": "True", "lastTransitionTime": t}
             for ty in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")]
    return types.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"bench-5d8f7c-{i:05d}", "namespace": "default", "uid": f"pod-uid-{i:05d}",
                     "resourceVersion": str(rv), "labels": dict(LABELS), "creationTimestamp": t,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "bench-5d8f7c",
                                          "uid": "rs-uid", "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"nodeName": f"node-{i % 100}", "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running", "conditions": conds,
                   "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "x",
                                          "imageID": "", "started": True}]}}, core_v1.Pod)


def cpu(fn: Any, n: int) -> float:
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n


async def bench_rs_sync(pods: list[core_v1.Pod], rounds: int) -> float:
    fake = await FakeClientset.new(clock=FakeClock(NOW))
    factory = SharedInformerFactory(fake)
    rsc = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), fake,
                               clock=FakeClock(NOW))
    rsc.rs_indexer.add(rs_obj(len(pods)))
    pod_indexer = factory.core_v1().pods().informer().get_indexer()
    for p in pods:
        pod_indexer.add(p)
    key = ObjectName("default", "bench-5d8f7c")
    await rsc.sync_replica_set(key)
    assert not fake.verbs(), fake.verbs()           # steady state: no writes
    n = 50
    t0 = time.process_time()
    for _ in range(n):
        await rsc.sync_replica_set(key)
    return (time.process_time() - t0) / n


async def bench_events(n: int) -> float:
    class Sink:
        async def create(self, event: Any) -> Any:
            return event

        async def patch(self, event: Any, data: Any) -> Any:
            return event

        update = create

    b = EventBroadcaster(sink=Sink(), clock=FakeClock(NOW))
    rec = b.new_recorder("replicaset-controller")
    rs = rs_obj(1)
    t0 = time.process_time()
    for i in range(n):
        rec.event(rs, "Normal", "SuccessfulCreate", f"Created pod: bench-5d8f7c-{i:05d}")
        await b.record_to_sink(b._queue.get_nowait())
    return (time.process_time() - t0) / n


def bench_informer(pods: list[core_v1.Pod], updates: list[core_v1.Pod]) -> float:
    inf = SharedIndexInformer(None, name="pods")          # no list-watch: the reflector is not run
    seen = [0]

    def on_update(old: Any, new: Any) -> None:
        seen[0] += 1

    for _ in range(2):
        inf.add_event_handler(ResourceEventHandlerFuncs(lambda o: None, on_update, lambda o: None))
    for p in pods:
        inf.add(p)
    t0 = time.process_time()
    for p in updates:
        inf.update(p)
    assert seen[0] == 2 * len(updates)
    return (time.process_time() - t0) / len(updates)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    pods = [pod_obj(i) for i in range(args.pods)]
    updates = [pod_obj(i, rv=2) for i in range(args.pods)] * 5
    for r in range(args.rounds):
        sync = asyncio.run(bench_rs_sync(pods, r))
        rank = cpu(lambda: get_pods_to_delete(pods, pods, len(pods) // 2, NOW), 5)
        ev = asyncio.run(bench_events(5000))
        inf = bench_informer(pods, updates)
        print(f"round {r}: rs-sync {sync * 1e3:7.2f} ms ({sync / len(pods) * 1e6:5.2f} us/pod)  "
              f"rank {rank * 1e3:7.2f} ms  events {ev * 1e6:6.1f} us/event  informer {inf * 1e6:5.2f} us/event",
              flush=True)


if __name__ == "__main__":
    main()
