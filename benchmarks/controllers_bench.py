"""The ReplicaSet and Deployment controllers' cost per pod at N pods, without the rest of `up`.

Run:  python benchmarks/controllers_bench.py [--replicas 10000] [--nodes 1000] [--src DIR ...]
                                             [--profile create|rollout|noop] [--noop-syncs 300]

One process: an APIServer on memory storage, the in-process clientset, one shared informer
factory, the ReplicaSet and Deployment controllers as `kubeplane up` runs them (5 workers each),
and a kubelet stand-in instead of the scheduler and kubelets: every new pod is bound to a node
(round robin over --nodes) and marked Running/Ready with one /status patch; a pod marked for
deletion is deleted with grace 0 (what the kubelet does once its containers stopped). So each
pod brings the controllers the watch events it brings them in `up`: ADDED, MODIFIED (bound),
MODIFIED (ready), and MODIFIED (deleting), MODIFIED + DELETED on a scale-down.

Phases: `create` (a Deployment of --replicas is created, until every replica is available) and
`rollout` (the template's image changes, 25 %/25 %, until the rollout is complete). Per phase:
wall seconds, this process's CPU per pod, and the controllers' own share of it: the CPU spent in
ReplicaSet syncs, Deployment syncs and both controllers' pod/ReplicaSet event handlers (measured
around each call with time.process_time), the number of syncs, and the pods the ReplicaSet syncs
passed to claim_pods (upstream: every active pod of the ReplicaSet and the namespace's orphans,
on every sync: the O(pods)-per-sync cost).

--src compares checkouts (each DIR holding src/kubeplane), e.g. /work/wt/s12start and `.`.
The figures are CPU times on a shared machine: compare the controllers' shares and the counts,
which depend little on the load.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pathlib
import pstats
import subprocess
import sys
import time
from typing import Any

NS = "bench"
NAME = "web"
HERE = pathlib.Path(__file__).resolve().parent


def deployment(replicas: int, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": NAME}},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": {"app": NAME}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


class Meter:
    """CPU seconds and calls of wrapped functions, by name."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap_sync(self, name: str, fn: Any) -> Any:
        async def wrapped(*a: Any) -> Any:
            # CPU of the sync's own steps (awaits of API calls included: in process, they are
            # mostly the API server's work on the controller's behalf).
            t0 = time.process_time()
            try:
                return await fn(*a)
            finally:
                self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - t0
                self.calls[name] = self.calls.get(name, 0) + 1
        return wrapped

    def wrap(self, name: str, fn: Any) -> Any:
        def wrapped(*a: Any) -> Any:
            t0 = time.process_time()
            try:
                return fn(*a)
            finally:
                self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - t0
                self.calls[name] = self.calls.get(name, 0) + 1
        return wrapped

    def snapshot(self) -> tuple[dict[str, float], dict[str, int]]:
        return dict(self.cpu), dict(self.calls)


class KubeletStandIn:
    """Binds each new pod, marks it Ready; deletes a pod marked for deletion with grace 0."""

    def __init__(self, cs: Any, nodes: int, rate: float, workers: int = 32) -> None:
        self.pods = cs.core_v1().pods(NS)
        self.nodes = nodes
        self.rate = rate                    # pods started per second at most (0: no limit)
        self.t0 = 0.0
        self.queue: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue()
        self.seen: set[str] = set()
        self.n = 0
        self.workers = workers

    def on_add(self, pod: Any) -> None:
        self.on_update(None, pod)

    def on_update(self, _old: Any, pod: Any) -> None:
        uid = pod.metadata.uid
        if pod.metadata.deletion_timestamp is not None:
            if ("d" + uid) not in self.seen:
                self.seen.add("d" + uid)
                self.queue.put_nowait(("delete", pod.metadata.name, uid))
        elif uid not in self.seen:
            self.seen.add(uid)
            self.queue.put_nowait(("start", pod.metadata.name, uid))

    async def worker(self) -> None:
        from kubeplane.api import errors
        while True:
            op, name, uid = await self.queue.get()
            try:
                if op == "delete":
                    await self.pods.delete(name, grace_period_seconds=0)
                    continue
                self.n += 1
                if self.rate:
                    if self.n == 1 or time.perf_counter() - self.t0 > 1 + self.n / self.rate:
                        self.t0 = time.perf_counter() - self.n / self.rate     # (re)start the pacing
                    await asyncio.sleep(max(0.0, self.t0 + self.n / self.rate - time.perf_counter()))
                await self.pods.bind(name, f"node-{self.n % self.nodes}", uid=uid)
                await self.pods.patch(name, {"metadata": {"uid": uid}, "status": {
                    "phase": "Running", "podIP": f"10.244.{self.n // 250 % 250}.{self.n % 250 + 2}",
                    "conditions": [{"type": "Ready", "status": "True",
                                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}},
                                      "merge", subresource="status")
            except errors.StatusError:
                pass                        # deleted meanwhile


def done(d: Any, image: str) -> bool:
    st, n = d.status, d.spec.replicas
    return (st is not None and d.spec.template.spec.containers[0].image == image
            and (st.observed_generation or 0) >= (d.metadata.generation or 0)
            and (st.updated_replicas or 0) == n and (st.available_replicas or 0) == n
            and (st.replicas or 0) == n)


async def child(args: argparse.Namespace) -> dict[str, Any]:
    from kubeplane.api.types import core_v1, from_dict
    from kubeplane.apiserver.server import APIServer
    from kubeplane.client.informers import SharedInformerFactory
    from kubeplane.client.tools.cache import ResourceEventHandlerFuncs
    from kubeplane.cmd.up import in_process_clientset
    from kubeplane.controller.deployment import DeploymentController
    from kubeplane.controller.replicaset import ReplicaSetController
    from kubeplane.storage.memory import MemoryStorage
    from kubeplane.utils import gc_tuning

    gc_tuning.tune()
    api = APIServer(MemoryStorage())
    await api.bootstrap()
    cs = in_process_clientset(api, "bench")
    await cs.core_v1().namespaces().create(from_dict({"metadata": {"name": NS}}, core_v1.Namespace))
    await cs.core_v1().serviceaccounts(NS).create({"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": {"name": "default", "namespace": NS}})
    factory = SharedInformerFactory(cs)
    meter = Meter()
    rs = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), cs)
    dc = DeploymentController(factory.apps_v1().deployments(), factory.apps_v1().replicasets(),
                              factory.core_v1().pods(), cs)
    rs.sync_handler = meter.wrap_sync("rs_sync", rs.sync_handler)
    dc.sync_handler = meter.wrap_sync("deployment_sync", dc.sync_handler)
    _meter_handlers(factory, meter, rs, dc)
    walked = [0]
    claim_pods = rs.claim_pods

    async def counting_claim(rs_: Any, selector: Any, pods: Any) -> Any:
        walked[0] += len(pods)
        return await claim_pods(rs_, selector, pods)
    rs.claim_pods = counting_claim
    if args.timeline:
        t_start = time.perf_counter()
        last: dict[str, tuple[Any, ...]] = {}

        def on_rs(_old: Any, rs_: Any = None) -> None:
            rs_ = rs_ if rs_ is not None else _old
            st_ = rs_.status
            row = (rs_.spec.replicas, st_.replicas if st_ else None, st_.available_replicas if st_ else None)
            if last.get(rs_.metadata.name) != row:
                last[rs_.metadata.name] = row
                print(f"{time.perf_counter() - t_start:8.3f} rs {rs_.metadata.name[-6:]} spec={row[0]} "
                      f"replicas={row[1]} available={row[2]}", file=sys.stderr)
        factory.apps_v1().replicasets().informer().add_event_handler(ResourceEventHandlerFuncs(on_rs, on_rs))
    writes = {"rs_updates": 0, "deployment_updates": 0}

    def count(kind: str) -> Any:
        def on_update(old: Any, cur: Any) -> None:
            if old.metadata.resource_version != cur.metadata.resource_version:
                writes[kind] += 1
        return on_update
    factory.apps_v1().replicasets().informer().add_event_handler(
        ResourceEventHandlerFuncs(update_func=count("rs_updates")))
    factory.apps_v1().deployments().informer().add_event_handler(
        ResourceEventHandlerFuncs(update_func=count("deployment_updates")))
    stand_in = KubeletStandIn(cs, args.nodes, args.rate)
    factory.core_v1().pods().informer().add_event_handler(
        ResourceEventHandlerFuncs(stand_in.on_add, stand_in.on_update))
    factory.start()
    await factory.wait_for_cache_sync()
    tasks = [asyncio.ensure_future(rs.run()), asyncio.ensure_future(dc.run())]
    tasks += [asyncio.ensure_future(stand_in.worker()) for _ in range(stand_in.workers)]
    ds = cs.apps_v1().deployments(NS)
    out: dict[str, Any] = {}

    async def phase(name: str, start: Any, image: str) -> None:
        gc.collect()
        cpu0, calls0 = meter.snapshot()
        walked0 = walked[0]
        writes0 = dict(writes)
        prof = cProfile.Profile() if args.profile == name else None
        t0, c0 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        rv = (await start()).metadata.resource_version
        async for ev in ds.watch(resource_version=rv, field_selector=f"metadata.name={NAME}"):
            if done(ev.obj, image):
                break
        t1, c1 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.disable()
            for key in ("tottime", "cumulative"):
                print(f"--- {name}, by {key}", file=sys.stderr)
                pstats.Stats(prof, stream=sys.stderr).sort_stats(key).print_stats(30)
        cpu1, calls1 = meter.snapshot()
        n = args.replicas
        res: dict[str, Any] = {"wall_s": round(t1 - t0, 3), "cpu_ms_per_pod": round(1000 * (c1 - c0) / n, 3)}
        for k in sorted(cpu1):
            res[f"{k}_ms_per_pod"] = round(1000 * (cpu1[k] - cpu0.get(k, 0.0)) / n, 3)
            res[f"{k}_calls"] = calls1[k] - calls0.get(k, 0)
        res["rs_sync_pods_claimed"] = walked[0] - walked0
        res |= {k: v - writes0[k] for k, v in writes.items()}
        out[name] = res

    await phase("create", lambda: ds.create(deployment(args.replicas, "nginx:a")), "nginx:a")
    await phase("rollout", lambda: ds.patch(NAME, {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:b"}]}}}}, "strategic"), "nginx:b")
    out["noop"] = await noop_syncs(args, rs, dc, writes)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await factory.shutdown()
    return out


async def noop_syncs(args: argparse.Namespace, rs: Any, dc: Any, writes: dict[str, int]) -> dict[str, Any]:
    """Sync the converged Deployment and its new ReplicaSet --noop-syncs times each, directly
    (not through the queues): microseconds per sync that finds nothing to do, and the writes
    they made (must be none)."""
    from kubeplane.api.types import ObjectName
    from kubeplane.controller.deployment.util.deployment_util import find_new_replica_set

    d_key = ObjectName(NS, NAME)
    d = dc.d_lister.deployments(NS).get(NAME)
    new_rs = find_new_replica_set(d, rs.rs_lister.replicasets(NS).list())
    rs_key = ObjectName(NS, new_rs.metadata.name)
    await asyncio.sleep(0.5)                      # let the last events settle
    writes0 = dict(writes)
    res: dict[str, Any] = {}
    prof = cProfile.Profile() if args.profile == "noop" else None
    for name, sync, key in (("deployment", dc.sync_deployment, d_key), ("rs", rs.sync_replica_set, rs_key)):
        n = args.noop_syncs
        c0 = time.process_time()
        if prof is not None:
            prof.enable()
        for _ in range(n):
            await sync(key)
        if prof is not None:
            prof.disable()
        res[f"{name}_noop_sync_us"] = round(1e6 * (time.process_time() - c0) / max(n, 1), 1)
    if prof is not None:
        for key in ("tottime", "cumulative"):
            print(f"--- noop syncs, by {key}", file=sys.stderr)
            pstats.Stats(prof, stream=sys.stderr).sort_stats(key).print_stats(30)
    await asyncio.sleep(0.2)
    res |= {k: v - writes0[k] for k, v in writes.items()}
    return res


def _meter_handlers(factory: Any, meter: Meter, rs: Any, dc: Any) -> None:
    """Wrap both controllers' event handlers where the shared informers call them."""
    for plural, group in (("pods", ""), ("replicasets", "apps"), ("deployments", "apps")):
        for h in factory.informer_for(group, "v1", plural).informer().handlers:
            for attr in ("add_func", "update_func", "delete_func"):
                fn = getattr(h, attr, None)
                owner = getattr(fn, "__self__", None)
                who = "rs" if owner is rs else "deployment" if owner is dc else None
                if who is not None:
                    object.__setattr__(h, attr, meter.wrap(f"{who}_handlers", fn))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicas", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=500,
                    help="pods the kubelet stand-in starts per second at most, as the scheduler and kubelets "
                         "of `up` pace them (0: as fast as it can; default 500, issue 17's target)")
    ap.add_argument("--src", action="append", help="a checkout holding src/kubeplane (repeatable)")
    ap.add_argument("--noop-syncs", type=int, default=300,
                    help="then sync the converged Deployment and ReplicaSet this many times each (noop phase)")
    ap.add_argument("--profile", choices=("create", "rollout", "noop"), default="", help="cProfile this phase (stderr)")
    ap.add_argument("--timeline", action="store_true", help="print each ReplicaSet change (stderr)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args))))
        return
    for src in args.src or [str(HERE.parent)]:
        env = dict(os.environ, PYTHONPATH=f"{src}/src")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmd = [sys.executable, __file__, "--child", "--replicas", str(args.replicas), "--nodes", str(args.nodes),
               "--rate", str(args.rate), "--noop-syncs", str(args.noop_syncs)]
        if args.profile:
            cmd += ["--profile", args.profile]
        if args.timeline:
            cmd += ["--timeline"]
        res = json.loads(subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout)
        for ph, figures in res.items():
            print(f"{src}: {ph}: " + " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


if __name__ == "__main__":
    main()
