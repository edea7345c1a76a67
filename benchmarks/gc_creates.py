"""The collector's share of a pod create as the store fills: µs per create and µs of it in
collections, with `up`'s collector settings (utils/gc_tuning.py).

Run:  .venv/bin/python benchmarks/gc_creates.py [-n 60000] [--skip-admission NAMES]

In process (APIServer.handle with JSON bodies, as the HTTPS front end hands them over; memory
storage), one writer. CPU time (time.process_time); the collector's time from gc.callbacks. To
compare two policies or checkouts on a busy machine, run them at the same time (both see the
same load) rather than one after the other.
Tried with it and not kept (2026-11-26): no middle-generation collections and a full one only
when the heap doubled. Before the token volume source was shared it saved 15 of 128 µs per
create at 60,000 pods; after, with 21 tracked objects per stored pod instead of 34, it cost
4 µs more (one full collection at 1M objects against CPython's two middle ones). `--skip-admission ServiceAccount,Priority` (or
`all`) takes plugins out of the chain, to see what each one's work costs downstream.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import time
from typing import Any

import orjson

from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.utils import gc_tuning

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
HEADERS = {"authorization": "Bearer t", "content-type": "application/json", "user-agent": "bench"}


class CollectorTime:
    """gc callback: CPU seconds spent in collections, and how many ran."""

    def __init__(self) -> None:
        self.seconds, self.collections, self._start = 0.0, 0, 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds += time.process_time() - self._start
            self.collections += 1


def skip_plugins(api: APIServer, names: str) -> None:
    from kubeplane.apiserver.admission.interface import Operation
    skip = set(names.split(","))
    chain = api.admission
    for op in Operation:
        chain._admitters[op] = [p for p in chain._admitters[op] if "all" not in skip and p.NAME not in skip]
        chain._validators[op] = [p for p in chain._validators[op] if "all" not in skip and p.NAME not in skip]
    chain._routes.clear()


async def run(n: int, skip: str) -> None:
    api = APIServer(new_storage("memory"), tokens={"t": "admin"})
    await api.bootstrap()
    sa = orjson.dumps({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    await api.handle(Request.build("POST", "/api/v1/namespaces/default/serviceaccounts", "", dict(HEADERS), sa))
    if skip:
        skip_plugins(api, skip)
    gc_tuning.tune()
    collector = CollectorTime()
    gc.callbacks.insert(0, collector)
    started = time.process_time()
    for i in range(n):
        POD["metadata"]["name"] = f"p{i}"
        resp = await api.handle(Request.build("POST", "/api/v1/namespaces/default/pods", "", dict(HEADERS),
                                              orjson.dumps(POD)))
        assert resp.status == 201, resp.body
        if i % 1000 == 0:
            await asyncio.sleep(0)            # let a scheduled full collection run, as the loop would
    cpu = time.process_time() - started
    print(f"skip={skip or '-'}: {cpu / n * 1e6:.1f} µs per create, of which "
          f"{collector.seconds / n * 1e6:.1f} µs in {collector.collections} collections")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=60_000)
    ap.add_argument("--skip-admission", default="")
    args = ap.parse_args()
    asyncio.run(run(args.n, args.skip_admission))


if __name__ == "__main__":
    main()
