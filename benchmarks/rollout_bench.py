"""Rollout benchmark: a 1,000-replica Deployment rolled from image A to image B.

Run: .venv/bin/python benchmarks/rollout_bench.py [--replicas 1000] [--nodes 0 100] [--storage sqlite]

For each --nodes value a fresh `kubeplane up` is started. With 0 nodes no kubelet runs, so this
process runs a Ready helper: it watches pods over our clientset (HTTPS) and marks each new pod
Ready through /status as soon as it appears, as upstream's integration tests do; its own cost
is measured separately (patch count, summed patch latency, this process's CPU time). With N > 0
nodes the scheduler binds the pods and the simulated kubelets make them Ready; no helper.

Timeline: create the Deployment, wait until it is available (complete); then patch the image
and time until status says updatedReplicas == availableReplicas == replicas == spec.replicas
with observedGeneration caught up. Meanwhile a watch counts the controller's observable work:
Deployment status writes (each is one sync that changed status) and ReplicaSet scale writes
(spec.replicas changes); their sum over the rollout time is printed as syncs/s (syncs that
wrote nothing are not observable from outside).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import pathlib
import sys
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from api_bench import start_up, stop

from kubeplane.client.clientset import Clientset
from kubeplane.client.transport import HTTPTransport

NAME = "bench"
READY_PATCH = {"status": {"phase": "Running", "conditions": [
    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def deployment(replicas: int, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": NAME}},
                     "template": {"metadata": {"labels": {"app": NAME}},
                                  "spec": {"containers": [{"name": "c", "image": image}],
                                           "terminationGracePeriodSeconds": 0}}}}


def is_ready(pod: Any) -> bool:
    conds = (pod.status.conditions if pod.status is not None else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conds)


@dataclass
class ReadyHelper:
    """Marks every new pod Ready through /status (a kubelet stand-in for --nodes 0)."""

    pods: Any
    concurrency: int = 16
    marked: int = 0
    patch_seconds: float = 0.0              # summed latency of the status patches
    seen_to_ready: list[float] = field(default_factory=list)
    _done: set[str] = field(default_factory=set)

    async def run(self) -> None:
        lst = await self.pods.list()
        queue: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
        for p in lst.items:
            self._offer(p, queue)
        workers = [asyncio.ensure_future(self._worker(queue)) for _ in range(self.concurrency)]
        try:
            async for ev in self.pods.watch(resource_version=lst.resource_version):
                if ev.type in ("ADDED", "MODIFIED"):
                    self._offer(ev.obj, queue)
        finally:
            for w in workers:
                w.cancel()

    def _offer(self, pod: Any, queue: asyncio.Queue[tuple[str, float]]) -> None:
        name = pod.metadata.name
        if name in self._done or pod.metadata.deletion_timestamp is not None or is_ready(pod):
            return
        self._done.add(name)
        queue.put_nowait((name, time.perf_counter()))

    async def _worker(self, queue: asyncio.Queue[tuple[str, float]]) -> None:
        while True:
            name, seen = await queue.get()
            t0 = time.perf_counter()
            try:
                await self.pods.patch(name, READY_PATCH, "merge", subresource="status")
            except Exception:               # deleted meanwhile (scale-down): nothing to mark
                continue
            t1 = time.perf_counter()
            self.patch_seconds += t1 - t0
            self.seen_to_ready.append(t1 - seen)
            self.marked += 1


@dataclass
class WriteCounter:
    """Counts the controllers' writes seen through watches while `armed`."""

    armed: bool = False
    d_status_writes: int = 0
    rs_scale_writes: int = 0
    rs_created: int = 0
    timeline: list[tuple[float, bool, str]] = field(default_factory=list)   # (time, by the deployment controller, what)
    _rs_sizes: dict[str, int] = field(default_factory=dict)

    async def watch_deployment(self, deployments: Any, since: Any) -> None:
        """Count status changes of the Deployment after `since` (the object last seen)."""
        rv, last = since.metadata.resource_version, since.status
        async for ev in deployments.watch(resource_version=rv, field_selector=f"metadata.name={NAME}"):
            if ev.type == "MODIFIED" and self.armed and ev.obj.status != last:
                self.d_status_writes += 1
                st = ev.obj.status
                self.timeline.append((time.perf_counter(), True, f"deployment status replicas={st.replicas} "
                                      f"updated={st.updated_replicas} ready={st.ready_replicas} "
                                      f"available={st.available_replicas}"))
            last = ev.obj.status

    async def watch_replica_sets(self, rss: Any, rv: str) -> None:
        async for ev in rss.watch(resource_version=rv):
            name, size = ev.obj.metadata.name, ev.obj.spec.replicas
            if self.armed:
                by_dc = ev.type == "ADDED" or self._rs_sizes.get(name) != size
                if ev.type == "ADDED":
                    self.rs_created += 1
                elif by_dc:
                    self.rs_scale_writes += 1
                st = ev.obj.status
                self.timeline.append((time.perf_counter(), by_dc, f"rs {name[-5:]} {ev.type} spec={size} "
                                      f"status={st.replicas if st else None}/{st.available_replicas if st else None}"))
            self._rs_sizes[name] = size


class Profiler:
    """py-spy sampling the server process; stop() returns CPU seconds per component.

    A sample counts for the first component whose source directory is on its stack, so the
    API server's share is what it spends outside the controllers' own code."""

    RATE = 250
    COMPONENTS: ClassVar[dict[str, str]] = {"deployment_controller": "controller/deployment/", "replicaset_controller": "controller/replicaset/",
                  "garbage_collector": "controller/garbagecollector/", "scheduler": "kubeplane/scheduler/",
                  "kubelet": "kubeplane/kubelet/", "apiserver_and_storage": "kubeplane/"}

    def __init__(self, pid: int, out: pathlib.Path) -> None:
        self.out = out
        spy = pathlib.Path(sys.executable).parent / "py-spy"
        self.proc = subprocess.Popen([str(spy), "record", "-p", str(pid), "-r", str(self.RATE), "-f", "raw",
                                      "-o", str(out), "--nonblocking"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> dict[str, float]:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)
        counts = collections.Counter[str]()
        for line in self.out.read_text().splitlines():
            stack, n = line.rsplit(" ", 1)
            comp = next((c for c, d in self.COMPONENTS.items() if d in stack), "other")
            counts[comp] += int(n)
        counts["total"] = sum(counts.values())
        return {k: v / self.RATE for k, v in counts.most_common()}


def critical_path(t_start: float, timeline: list[tuple[float, bool, str]]) -> float:
    """Seconds of the rollout spent waiting for the deployment controller: for each of its
    writes, the gap since the event observed just before it (the patch, an RS status change,
    or its own previous write). Example: RS status at 1.174 s, controller scales at 1.195 s
    -> 21 ms. Pod churn (creates, deletes, Ready marks) fills the rest of the rollout time.
    """
    total, prev = 0.0, t_start
    for t, by_dc, _ in timeline:
        if by_dc:
            total += t - prev
        prev = t
    return total


def complete(d: Any, want_image: str) -> bool:
    st = d.status
    if st is None or d.spec.template.spec.containers[0].image != want_image:
        return False
    n = d.spec.replicas
    return ((st.observed_generation or 0) >= (d.metadata.generation or 0) and (st.updated_replicas or 0) == n
            and (st.available_replicas or 0) == n and (st.replicas or 0) == n)


async def wait_complete(deployments: Any, rv: str, image: str, timeout: float) -> tuple[float, Any]:
    async def watch() -> tuple[float, Any]:
        async for ev in deployments.watch(resource_version=rv, field_selector=f"metadata.name={NAME}"):
            if complete(ev.obj, image):
                return time.perf_counter(), ev.obj
        raise RuntimeError("watch ended")
    return await asyncio.wait_for(watch(), timeout)


async def run_one(nodes: int, replicas: int, storage: str, timeout: float,
                  timeline: bool = False, profile: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data = pathlib.Path(tmp)
        proc, _ = start_up(data, storage, ["--nodes", str(nodes)])
        # Keep reading the server's output: a full pipe would block its logging.
        threading.Thread(target=lambda: collections.deque(proc.stdout, maxlen=50), daemon=True).start()
        tasks: list[asyncio.Future[Any]] = []
        try:
            cs = Clientset(HTTPTransport.from_kubeconfig(data / "kubeconfig"))
            ds = cs.apps_v1().deployments("default")
            helper = ReadyHelper(cs.core_v1().pods("default")) if nodes == 0 else None
            if helper is not None:
                tasks.append(asyncio.ensure_future(helper.run()))
            rv = (await ds.list()).resource_version
            t0 = time.perf_counter()
            await ds.create(deployment(replicas, "nginx:a"))
            t_created, d = await wait_complete(ds, rv, "nginx:a", timeout)
            create_s = t_created - t0

            counter = WriteCounter()
            rss = cs.apps_v1().replicasets("default")
            rs_rv = (await rss.list()).resource_version
            tasks.append(asyncio.ensure_future(counter.watch_deployment(ds, d)))
            tasks.append(asyncio.ensure_future(counter.watch_replica_sets(rss, rs_rv)))
            marked0 = helper.marked if helper else 0
            patch0 = helper.patch_seconds if helper else 0.0
            lat0 = len(helper.seen_to_ready) if helper else 0
            cpu0 = time.process_time()
            spy = Profiler(proc.pid, data / "profile.txt") if profile else None
            counter.armed = True
            t1 = time.perf_counter()
            patched = await ds.patch(NAME, {"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "nginx:b"}]}}}}, "strategic")
            t_done, _ = await wait_complete(ds, patched.metadata.resource_version, "nginx:b", timeout)
            rollout_s = t_done - t1
            cpu = time.process_time() - cpu0
            shares = spy.stop() if spy is not None else None
            if timeline:
                for t, by_dc, what in counter.timeline:
                    print(f"  {t - t1:7.3f} {'dc' if by_dc else '  '} {what}")
            counter.armed = False
            writes = counter.d_status_writes + counter.rs_scale_writes + counter.rs_created
            out: dict[str, Any] = {
                "nodes": nodes, "replicas": replicas, "create_to_available_s": create_s, "rollout_s": rollout_s,
                "deployment_status_writes": counter.d_status_writes, "rs_scale_writes": counter.rs_scale_writes,
                "rs_created": counter.rs_created, "controller_writes_per_s": writes / rollout_s,
                "bench_process_cpu_s": cpu, "dc_critical_path_s": critical_path(t1, counter.timeline),
                "profile": shares}
            if helper is not None:
                lats = sorted(helper.seen_to_ready[lat0:])
                out.update(helper_marked=helper.marked - marked0, helper_patch_s=helper.patch_seconds - patch0,
                           helper_seen_to_ready_p50_ms=1000 * lats[len(lats) // 2] if lats else 0.0,
                           helper_seen_to_ready_max_ms=1000 * lats[-1] if lats else 0.0)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await cs.close()
            return out
        finally:
            for t in tasks:
                t.cancel()
            stop(proc)


def report(r: dict[str, Any]) -> None:
    print(f"nodes={r['nodes']} replicas={r['replicas']}")
    print(f"  create_to_available_s={r['create_to_available_s']:.3f}")
    print(f"  rollout_A_to_B_s={r['rollout_s']:.3f} "
          f"deployment_controller_critical_path_s={r['dc_critical_path_s']:.3f}")
    print(f"  deployment_status_writes={r['deployment_status_writes']} rs_scale_writes={r['rs_scale_writes']} "
          f"rs_created={r['rs_created']} controller_syncs_per_s={r['controller_writes_per_s']:.1f}")
    if "helper_marked" in r:
        print(f"  ready_helper: marked={r['helper_marked']} patch_time_sum_s={r['helper_patch_s']:.3f} "
              f"seen_to_ready_p50_ms={r['helper_seen_to_ready_p50_ms']:.1f} "
              f"max_ms={r['helper_seen_to_ready_max_ms']:.1f}")
    if r.get("profile"):
        print("  server CPU during the rollout (py-spy samples): " +
              " ".join(f"{k}={v:.3f}s" for k, v in r["profile"].items()))
    print(f"  bench_process_cpu_s={r['bench_process_cpu_s']:.3f} (helper + watches, shares the 2 cores)")


async def main_async(args: argparse.Namespace) -> None:
    for nodes in args.nodes:
        report(await run_one(nodes, args.replicas, args.storage, args.timeout, args.timeline, args.profile))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--replicas", type=int, default=1000)
    p.add_argument("--nodes", type=int, nargs="+", default=[0, 100])
    p.add_argument("--storage", default="sqlite")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--timeline", action="store_true", help="print each observed controller write")
    p.add_argument("--profile", action="store_true",
                   help="sample the server with py-spy during the rollout; print CPU seconds per component")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
