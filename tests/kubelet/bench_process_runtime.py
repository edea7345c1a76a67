"""Process runtime start-up: N `sleep` containers of one pod from start_container to Running.

    .venv/bin/python -m tests.kubelet.bench_process_runtime [--containers 10] [--runs 3]

Prints the best and median wall time of the runs and the RSS of one container's shim (each
attempt runs under a shim process that outlives the kubelet; see runtime/process/shim.py).
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from process_testutil import make_pod

from kubeplane.kubelet.runtime import RUNNING
from kubeplane.kubelet.runtime.process import ProcessRuntime


def _rss_kb(pid: int | None) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def one_run(n: int) -> tuple[float, int]:
    r = ProcessRuntime(root_dir=pathlib.Path(tempfile.mkdtemp(prefix="kubeplane-bench-")))
    pod = make_pod([{"name": f"c{i}", "image": "busybox", "command": ["sleep", "60"]} for i in range(n)])
    r.run_pod_sandbox(pod)
    t0 = time.monotonic()
    for c in pod.spec.containers:
        r.start_container(pod, c, init=False, attempt=0)

    def all_running() -> bool:
        st = r.pod_status("uid-1")
        return st is not None and all((s := st.latest(c.name or "")) is not None and s.state == RUNNING
                                      for c in pod.spec.containers)
    while not all_running():
        await asyncio.sleep(0.002)
    took = time.monotonic() - t0
    rss = _rss_kb(next(iter(r._by_id.values())).shim_pid)
    await r.stop_all()
    return took, rss


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--containers", type=int, default=10)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    results = [await one_run(args.containers) for _ in range(args.runs)]
    times = [t for t, _ in results]
    print(f"{args.containers} containers Running: best {min(times):.3f} s, median {statistics.median(times):.3f} s")
    print(f"shim RSS: {results[-1][1] / 1024:.1f} MB")


if __name__ == "__main__":
    asyncio.run(main())
