"""Instructions per in-process pods/binding (the scheduler's write through InProcessTransport).

    python benchmarks/bind_instructions.py 300 x     # µs per bind (process_time, gc frozen)
    valgrind --tool=callgrind --callgrind-out-file=/dev/null python benchmarks/bind_instructions.py 0
    valgrind --tool=callgrind --callgrind-out-file=/dev/null python benchmarks/bind_instructions.py 300
        (Ir at 300 - Ir at 0) / 300 = instructions per bind, repeatable under load
        (compare two source trees with PYTHONPATH=<tree>/src)
"""
from __future__ import annotations

import asyncio
import gc
import sys
import time

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

TOTAL, WARMUP = 400, 20


async def main(n: int, report: bool) -> None:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    pods = Clientset(InProcessTransport(api, "system:kube-scheduler")).core_v1().pods("default")
    uids = []
    for i in range(TOTAL):
        pod = {"metadata": {"name": f"p{i}"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        uids.append((await pods.create(types.from_dict(pod, core_v1.Pod))).metadata.uid)
    for i in range(WARMUP):
        await pods.bind(f"p{i}", "n1", uid=uids[i])
    gc.collect()
    gc.freeze()                      # no collection's cost lands on the measured binds
    t0 = time.process_time()
    for i in range(WARMUP, WARMUP + n):
        await pods.bind(f"p{i}", "n1", uid=uids[i])
    if report:
        print(f"{(time.process_time() - t0) / max(n, 1) * 1e6:.1f} µs per bind")


if __name__ == "__main__":
    asyncio.run(main(min(int(sys.argv[1]), TOTAL - WARMUP), len(sys.argv) > 2))
