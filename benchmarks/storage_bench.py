"""Storage throughput: creates/s, updates/s, gets/s, lists of 1,000 pods/s, watch fan-out.

    .venv/bin/python benchmarks/storage_bench.py [--pods 20000] [--backend memory|sqlite]

Objects are ~1 KB pod-like dicts spread over 20 namespaces of `pods / 20` pods each, so the
list figure is a namespace list of 1,000 pods out of 20,000 (the index has to skip the rest).
Watch delivery: 10 watchers of /registry/pods/ each consume every update while the writer
yields to the loop every 100 writes; the figure is events delivered per second, summed over
watchers, from the first write until the last watcher has seen the last event.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import tempfile
import time
from typing import Any

import orjson

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from kubeplane.storage import Storage, new_storage

NAMESPACES = 20
WATCHERS = 10


def pod(i: int) -> tuple[str, dict[str, Any]]:
    ns, name = f"ns-{i % NAMESPACES:02d}", f"web-7d4b9c8f6-{i:06d}"
    obj = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "uid": f"3f1c0f7e-0000-4000-8000-{i:012d}",
            "creationTimestamp": "2025-01-01T00:00:00Z", "generateName": "web-7d4b9c8f6-",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6", "tier": "frontend"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-7d4b9c8f6", "uid": "9a0e-rs", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "containers": [{
                "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "env": [{"name": "MODE", "value": "production"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "schedulerName": "default-scheduler", "nodeName": f"node-{i % 50}",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "podIP": f"10.0.{i // 250 % 256}.{i % 250}",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2025-01-01T00:00:01Z"}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
        },
    }
    return f"/registry/pods/{ns}/{name}", obj


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>12,.0f}/s"


async def bench(backend: str, n: int, data_dir: pathlib.Path) -> None:
    s: Storage = new_storage(backend, data_dir / backend, history=50_000)
    objs = [pod(i) for i in range(n)]
    size = len(orjson.dumps(objs[0][1]))
    print(f"{backend}: {n} pods of {size} bytes")

    t = time.perf_counter()
    for key, obj in objs:
        await s.create(key, obj)
    await s.wait_committed(s.revision)          # durable, not just applied in memory
    print(f"  create           {rate(n, time.perf_counter() - t)}")

    updated = [(key, {**obj, "status": {**obj["status"], "phase": "Succeeded"}}) for key, obj in objs]
    t = time.perf_counter()
    for key, obj in updated:
        await s.update(key, obj)
    await s.wait_committed(s.revision)
    print(f"  update           {rate(n, time.perf_counter() - t)}")

    t = time.perf_counter()
    for key, _ in objs:
        await s.get(key)
    print(f"  get              {rate(n, time.perf_counter() - t)}")

    per_ns = n // NAMESPACES
    lists = max(20, 200_000 // per_ns)
    t = time.perf_counter()
    for i in range(lists):
        kvs, _ = await s.list(f"/registry/pods/ns-{i % NAMESPACES:02d}/")
    assert len(kvs) == per_ns
    print(f"  list of {per_ns:<5}    {rate(lists, time.perf_counter() - t)}")

    await watch_delivery(s, updated[:min(n, 20_000)])
    await s.close()


async def watch_delivery(s: Storage, updates: list[tuple[str, dict[str, Any]]]) -> None:
    m = len(updates)
    done = asyncio.Event()
    remaining = WATCHERS

    async def consume(w: Any) -> None:
        nonlocal remaining
        seen = 0
        async for _ in w:
            seen += 1
            if seen == m:
                break
        remaining -= 1
        if remaining == 0:
            done.set()

    tasks = [asyncio.create_task(consume(s.watch("/registry/pods/", s.revision)))
             for _ in range(WATCHERS)]
    await asyncio.sleep(0)                       # let every watcher start waiting
    t = time.perf_counter()
    for i, (key, obj) in enumerate(updates):
        await s.update(key, obj)
        if i % 100 == 99:
            await asyncio.sleep(0)               # a real writer yields between requests
    await done.wait()
    dt = time.perf_counter() - t
    await asyncio.gather(*tasks)
    print(f"  watch x{WATCHERS} events {rate(m * WATCHERS, dt)}  ({rate(m, dt).strip()} writes"
          f" with {WATCHERS} watchers attached)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=20_000)
    ap.add_argument("--backend", choices=["memory", "sqlite"], action="append")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-") as d:
        for backend in args.backend or ["memory", "sqlite"]:
            asyncio.run(bench(backend, args.pods, pathlib.Path(d)))


if __name__ == "__main__":
    main()
