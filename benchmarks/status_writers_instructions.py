"""The kubelet's status path of a pod as the status manager's writers run it (StatusManager.run,
8 writers as `kubeplane up`'s kubelet has them): each status set as a pod sync sets it, one per
event-loop round, the writers woken by the queue, the writes through the in-process transport to
the API server of benchmarks/status_patch_instructions.py (Node,RBAC, every default admission
plugin, memory storage). Per pod: pending, running, (graceful delete: not counted), terminating,
terminal, final DELETE. Unlike status_patch_instructions.py (sync_pod called directly) this
counts the queue and the writers' task switches too.

    python benchmarks/status_writers_instructions.py                       # this tree
    python benchmarks/status_writers_instructions.py --src /work/wt/s16start
    python benchmarks/status_writers_instructions.py --writers 1
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


async def _run(n: int, writers: int) -> None:
    import status_patch_instructions as spi
    from instructions import _switch
    admin, sm, pods = await spi._setup()
    sm.workers = writers
    pc = admin.core_v1().pods("default")
    task = asyncio.create_task(sm.run())

    async def batch(first: int, count: int, counted: bool) -> None:
        mine = []
        for k in range(first, first + count):
            pod = await pc.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{k}"},
                                   "spec": {"nodeName": spi.NODE, "containers": [{"name": "c", "image": "nginx"}]}})
            pods[pod.metadata.uid] = pod
            mine.append((k, pod.metadata.uid))
        sts = spi._statuses("kubeplane-sim://0")

        def switch(on: bool) -> None:
            if counted:
                _switch(os.getpid(), on)

        async def settle(done: object) -> None:
            last = mine[-1][1]
            while not done(last):                       # type: ignore[operator]
                await asyncio.sleep(0)
            while not all(done(u) for _, u in mine):    # type: ignore[operator]
                await asyncio.sleep(0)

        async def write(i: int) -> None:
            todo = [(u, spi._observed(pods[u], sts[i])) for _, u in mine]
            switch(True)
            for u, st in todo:              # a pod sync's set_pod_status, then the loop goes on
                sm.set_pod_status(pods[u], st)
                await asyncio.sleep(0)
            await settle(lambda u: not sm.pending(u))
            switch(False)
        await write(0)
        await write(1)
        for k, u in mine:
            await pc.delete(f"p{k}")
            pods[u] = await pc.get(f"p{k}")
        await write(2)
        await write(3)
        switch(True)
        for _, u in mine:
            sm.mark_pod_deletable(pods[u])
            await asyncio.sleep(0)
        await settle(lambda u: sm.get_pod_status(u) is None)
        switch(False)
    await batch(0, 50, False)
    await batch(1000, n, True)
    task.cancel()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--src", default=str(HERE.parent))
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        import gc
        gc.set_threshold(50000, 50, 100)
        asyncio.run(_run(a.n, a.writers))
        return
    from instructions import _callgrind, _total
    with tempfile.TemporaryDirectory(prefix="status-writers-") as tmp:
        data = pathlib.Path(tmp)
        subprocess.run([*_callgrind(data / "cg.out"), sys.executable, __file__, "--child", "-n", str(a.n),
                        "--writers", str(a.writers)], env=dict(os.environ, PYTHONPATH=f"{a.src}/src"), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = _total(data)
    print(f"{a.src}: {total / a.n:,.0f} instructions per pod ({a.writers} writers: 4 statuses + final delete)")


if __name__ == "__main__":
    main()
