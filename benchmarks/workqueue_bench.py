"""Workqueue throughput: add -> get -> done cycles per second, named (metered) and unnamed.

    .venv/bin/python benchmarks/workqueue_bench.py [--items 200000]

One worker drains a RateLimitingQueue that a producer fills with distinct keys in batches of
1,000 (the shape of an informer burst); a named queue carries the workqueue_* metrics, an
unnamed one none (as upstream, where only named queues are metered).
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from kubeplane.client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions

BATCH = 1000


async def cycles_per_second(name: str, items: int) -> float:
    q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name=name))
    keys = [f"ns-{i % 20}/pod-{i}" for i in range(items)]
    start = time.perf_counter()
    for b in range(0, items, BATCH):
        for k in keys[b:b + BATCH]:
            q.add(k)
        for _ in range(BATCH):
            k, _ = await q.get()
            q.forget(k)
            q.done(k)
    return items / (time.perf_counter() - start)


async def main(items: int) -> None:
    for name in ("", "bench", "", "bench"):
        rate = await cycles_per_second(name, items)
        print(f"{'named (metered)' if name else 'unnamed':16} {rate:>10,.0f} add/get/done cycles/s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200_000)
    asyncio.run(main(ap.parse_args().items))
