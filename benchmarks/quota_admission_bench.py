"""The ResourceQuota admission plugin's cost per pod create, in-process (no HTTP, no storage write
of the pod): what the create path pays with no quota in the namespace, and with quotas.

Run:  .venv/bin/python benchmarks/quota_admission_bench.py [--calls 20000] [--runs 5]

Each figure is the median over --runs of µs per `ResourceQuota.validate` call on memory storage.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from kubeplane.apiserver.admission.interface import Attributes, Operation
from kubeplane.apiserver.admission.plugins.resource_quota import ResourceQuota
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                   "limits": {"cpu": "200m", "memory": "128Mi"}}}]}}


def quota(name: str, ns: str, hard: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns},
            "spec": {"hard": hard}, "status": {"hard": hard, "used": {k: "0" for k in hard}}}


async def per_call(plugin: ResourceQuota, calls: int, dry_run: bool) -> float:
    attrs = [Attributes(Operation.CREATE, "", "v1", "pods", "Pod", "default", f"p{i}", pod(f"p{i}"), dry_run=dry_run)
             for i in range(calls)]
    t0 = time.perf_counter()
    for a in attrs:
        await plugin.validate(a)
    return (time.perf_counter() - t0) / calls * 1e6


async def scenario(setup: list[dict[str, Any]], calls: int, dry_run: bool) -> float:
    api = APIServer(new_storage("memory"))
    await api.bootstrap()
    for q in setup:
        await api.storage.create(f"/registry/resourcequotas/{q['metadata']['namespace']}/{q['metadata']['name']}", q)
    try:
        return await per_call(ResourceQuota(api), calls, dry_run)
    finally:
        await api.storage.close()


BIG = {"pods": "1000000", "requests.cpu": "1000000", "requests.memory": "1000Ti", "limits.cpu": "1000000",
       "limits.memory": "1000Ti"}
SCENARIOS = {
    "no quota in the namespace": ([], False),
    "quotas in other namespaces only": ([quota(f"q{i}", f"ns{i}", BIG) for i in range(100)], False),
    "one compute quota, dry run (check only)": ([quota("compute", "default", BIG)], True),
    "one compute quota, charged (status written)": ([quota("compute", "default", BIG)], False),
    "a count/configmaps quota only (pods not tracked)": ([quota("cm", "default", {"count/configmaps": "10"})], False),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for name, (setup, dry_run) in SCENARIOS.items():
        runs = [asyncio.run(scenario(setup, args.calls, dry_run)) for _ in range(args.runs)]
        print(f"{name}: {statistics.median(runs):.2f} µs per pod create (runs: {', '.join(f'{r:.2f}' for r in runs)})")


if __name__ == "__main__":
    main()
