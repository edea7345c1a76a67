"""Job benchmark: a Job of 1,000 completions with parallelism 100 on 100 simulated nodes; pods
completed per second, from the Job's creation to its Complete condition.

Run:  .venv/bin/python benchmarks/job_bench.py [--nodes 100] [--completions 1000] [--parallelism 100]
                                               [--run-duration 0s] [--storage sqlite] [--jobs 1]

`kubeplane up --nodes N` runs in its own process (controllers, scheduler and kubelets inside it,
as a user runs it); this process creates the Job over HTTPS and watches it. The pods' simulated
run time is the template's sim.kubeplane.io/run-duration annotation (default 0s: a pod exits as
soon as its container starts, so the figure is the control plane's: create, schedule, start,
exit, status, count, finalizer removal, replacement).

Target (issue 14): >= 300 pods/s. Note: upstream's Job controller syncs a Job at most once per
syncJobBatchPeriod (1 s) after pod events, and keeps at most `parallelism` pods active, so with
parallelism 100 it replaces at most ~100 finished pods per second whatever the machine;
the figure printed says how close we are to that bound (`bound_pods_per_s`). `--jobs N` runs N
such Jobs at once: the control plane's own throughput, which that bound does not limit.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from api_bench import start_up, stop

from kubeplane.client.clientset import Clientset
from kubeplane.client.transport import HTTPTransport


def job(completions: int, parallelism: int, run_duration: str, name: str = "bench") -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": 0,
                     "template": {"metadata": {"annotations": {"sim.kubeplane.io/run-duration": run_duration}},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}


async def wait_ready_nodes(cs: Clientset, n: int) -> None:
    while True:
        nodes = (await cs.core_v1().nodes().list()).items or []
        ready = [x for x in nodes if any(c.type == "Ready" and c.status == "True"
                                         for c in (x.status.conditions if x.status else None) or ())]
        if len(ready) >= n:
            return
        await asyncio.sleep(0.2)


async def run_job(cs: Clientset, args: argparse.Namespace, name: str = "bench") -> tuple[float, float, dict]:
    """(seconds to Complete, seconds to the first succeeded pod counted, final status)."""
    jobs = cs.batch_v1().jobs("default")
    t0 = time.perf_counter()
    created = await jobs.create(job(args.completions, args.parallelism, args.run_duration, name))
    first = 0.0
    async for ev in jobs.watch(resource_version=created.metadata.resource_version,
                               field_selector=f"metadata.name={name}"):
        st = ev.obj.status
        if st is None:
            continue
        if not first and (st.succeeded or 0) > 0:
            first = time.perf_counter() - t0
        for c in st.conditions or ():
            if c.type in ("Complete", "Failed") and c.status == "True":
                return time.perf_counter() - t0, first, {"condition": c.type, "succeeded": st.succeeded,
                                                         "failed": st.failed}
    raise RuntimeError("watch ended")


async def sync_figures(cs: Clientset) -> str:
    """The Job controller's syncs (count, mean seconds) from the server's /metrics."""
    raw = await cs.transport.request("GET", "/metrics")
    count = total = 0.0
    for line in raw.body.decode().splitlines():
        if line.startswith("job_controller_job_sync_duration_seconds_count"):
            count += float(line.rsplit(" ", 1)[1])
        elif line.startswith("job_controller_job_sync_duration_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
    return f"job_syncs={count:.0f} job_sync_mean_ms={1000 * total / count if count else 0:.1f}"


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        proc, _ = start_up(d, args.storage, ["--nodes", str(args.nodes)])
        try:
            cs = Clientset(HTTPTransport.from_kubeconfig(d / "kubeconfig"))
            await wait_ready_nodes(cs, args.nodes)
            t0 = time.perf_counter()
            results = await asyncio.gather(*(run_job(cs, args, f"bench-{i}") for i in range(args.jobs)))
            elapsed = time.perf_counter() - t0
            first = min(r[1] for r in results)
            pods = (await cs.core_v1().pods("default").list()).items or []
            succeeded = sum(1 for p in pods if p.status and p.status.phase == "Succeeded")
            total = args.jobs * args.completions
            print(f"{args.jobs}x job_{args.completions}_completions_parallelism_{args.parallelism}_nodes_{args.nodes}: "
                  f"{','.join(sorted({r[2]['condition'] for r in results}))} in {elapsed:.2f} s "
                  f"(first success counted at {first:.2f} s)")
            print(f"pods_completed_per_s={total / elapsed:.0f} "
                  f"bound_pods_per_s={args.jobs * args.parallelism:.0f} succeeded_pods={succeeded} pods={len(pods)} "
                  f"status_succeeded={sum(r[2]['succeeded'] or 0 for r in results)} "
                  f"status_failed={sum(r[2]['failed'] or 0 for r in results)}")
            print(await sync_figures(cs))
            await cs.close()
        finally:
            stop(proc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--completions", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=100)
    p.add_argument("--run-duration", default="0s", help="the pods' sim.kubeplane.io/run-duration")
    p.add_argument("--storage", default="sqlite")
    p.add_argument("--jobs", type=int, default=1, help="Jobs run at once (default 1)")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
