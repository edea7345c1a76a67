"""What storing Service allocations costs a single API server on SQLite (issue 16).

Run:  .venv/bin/python benchmarks/service_creates.py [-n 1000] [--runs 5] [--type ClusterIP|NodePort]

An APIServer on SQLite storage in a temp dir (as `kubeplane up`), Services created one after
another through route_trusted (admission, validation, storage, the wait for durability), then
deleted. Each run alternates the two modes on fresh servers: "shared" (upstream 1.37's layout:
an IPAddress object per ClusterIP, the RangeAllocation bitmap for NodePorts;
registry/core/service/shared.py) and "memory" (the allocators alone, what one API server did
before). Printed: the median over --runs of CPU µs and wall µs per create and per delete.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

PATH = "/api/v1/namespaces/default/services"


async def run_once(n: int, kind: str, shared: bool) -> tuple[float, float, float, float]:
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as tmp:
        storage = new_storage("sqlite", pathlib.Path(tmp))
        await storage.start()
        api = APIServer(storage)
        await api.bootstrap()
        if not shared:
            assert api.service_alloc is not None
            api.service_alloc.shared = None
        bodies = [json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}"},
                              "spec": {"type": kind, "ports": [{"port": 80}]}}).encode() for i in range(n)]
        headers = {"content-type": "application/json"}
        cpu, wall = time.process_time(), time.perf_counter()
        for body in bodies:
            r = await api.route_trusted(Request.build("POST", PATH, "", headers, body))
            assert r.status == 201, r.body
        create = ((time.process_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6)
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(n):
            r = await api.route_trusted(Request.build("DELETE", f"{PATH}/s{i}", "", {}, b""))
            assert r.status == 200, r.body
        delete = ((time.process_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6)
        await storage.close()
    return (*create, *delete)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=1000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--type", default="ClusterIP", choices=("ClusterIP", "NodePort"))
    args = p.parse_args()
    results: dict[str, list[tuple[float, ...]]] = {"memory": [], "shared": []}
    for _ in range(args.runs):
        for mode in ("memory", "shared"):
            results[mode].append(asyncio.run(run_once(args.n, args.type, mode == "shared")))
    for mode, rows in results.items():
        med = [statistics.median(col) for col in zip(*rows)]
        print(f"{mode:7s} {args.type}: create cpu {med[0]:6.0f} µs wall {med[1]:6.0f} µs | "
              f"delete cpu {med[2]:6.0f} µs wall {med[3]:6.0f} µs  (median of {args.runs} x {args.n})")


if __name__ == "__main__":
    main()
