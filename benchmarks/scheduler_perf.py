"""The scheduler alone, shaped like upstream's scheduler_perf (test/integration/scheduler_perf).

    PYTHONPATH=src python benchmarks/scheduler_perf.py [--workload all|SchedulingBasic|...]
        [--nodes 5000] [--init-pods 1000] [--measure-pods 1000] [--runs 1] [--json]

Workloads (upstream's performance-config.yaml; templates pod-default, node-default,
pod-with-topology-spreading, pod-with-pod-anti-affinity):
- SchedulingBasic: pods asking 100m / 500Mi on nodes of 4 CPUs / 32Gi / 110 pods.
- TopologySpreading: nodes labelled topology.kubernetes.io/zone moon-1..3; the measured pods
  (color=blue) carry maxSkew 5 on the zone, DoNotSchedule.
- DefaultTopologySpreading: the measured pods (app=web, one Deployment-like label set) carry
  what upstream's system default constraints give a pod owned by a workload: hostname
  maxSkew 3 and zone maxSkew 5, ScheduleAnyway, written on the pod (kept so figures compare
  with checkouts that had no default spreading; ServiceDefaultSpreading and
  ReplicaSetDefaultSpreading have the scheduler derive them).
- SchedulingPodAntiAffinity: every pod (color=green; initial ones in sched-0, measured in
  sched-1) repels color=green pods of both namespaces on kubernetes.io/hostname.
- ServiceDefaultSpreading (ours): zone-labelled nodes; the measured pods (app=web) declare no
  constraints and a Service selects them: the scheduler's system default constraints apply,
  with the Service's selector (what DefaultTopologySpreading writes out by hand).
- ReplicaSetDefaultSpreading (ours): the same, the pods owned by a ReplicaSet (controller
  ownerReference, app=web + pod-template-hash) and no Service: the density run's pods. Use
  `--nodes 1000 --init-pods 0 --measure-pods 10000` for the 10,000 pods on 1,000 nodes shape.
- RollingUpdate (ours): the density run's rolling update. The initial pods belong to the old
  ReplicaSet, the measured ones to the new; once a new pod is bound, its two status writes
  and an old pod's graceful delete, status write and final delete follow as informer events
  (Cluster.churn), so the cycles see the changed nodes a rolling update gives them. Use
  `--nodes 100 --init-pods 1000 --measure-pods 1000` for the density run's shape.
- RollingUpdateNoZones (ours): the same on nodes without a zone label, as the density run's
  nodes are (the zone constraint then scores no node).
Every node is labelled kubernetes.io/hostname, as a kubelet labels its node.

What runs: the real Scheduler (queue, cache, snapshot, every default plugin, the binding
cycle), fed by its own informer event handlers. What does not: an API server. The Bind
plugin is replaced by one that, as the API server and the watch would, hands the bound pod
back to the pod event handler on the next loop turn (the informer's update). So the figures
are the scheduler's own cost; upstream's run includes an in-process API server and etcd
(its CPU goes to other cores there). Initial pods are scheduled by the same scheduler first
(not measured), as upstream's createPods without collectMetrics.

Reported per workload, on the measured pods only:
- SchedulingThroughput as upstream's throughputCollector computes it: scheduled pods (seen
  by the informer) sampled every second, the first sample skipped, Average and Perc50/90/99
  of the per-interval rates (few samples with 1,000 pods: use --measure-pods 10000 as
  upstream's `performance` workloads do);
- pods/s by wall time from the first measured pod queued to the last one bound;
- CPU per pod: this process's CPU time (time.process_time) over the measured phase divided
  by the pods, and the rate it implies (pods per CPU second): the figure that does not
  depend on what else runs on the machine.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

import msgspec

from kubeplane.api import types
from kubeplane.api.types.core_v1 import Node, Pod, PodStatus
from kubeplane.scheduler import Scheduler, SchedulerOptions
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.plugins import DEFAULT_PLUGINS, DefaultBinder
from kubeplane.scheduler.framework.runtime import Framework, PluginSpec

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("moon-1", "moon-2", "moon-3")
SAMPLE_INTERVAL = 1.0              # Upstream: throughputSampleInterval


# --- objects (upstream's templates) ------------------------------------------------------------

def node_dict(i: int, zones: bool) -> dict[str, Any]:
    """Upstream: templates/node-default.yaml (+ labelNodePrepareStrategy for the zones)."""
    name = f"scheduler-perf-{i}"
    lbls = {HOSTNAME: name}
    if zones:
        lbls[ZONE] = ZONES[i % len(ZONES)]
    res = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lbls, "resourceVersion": "1"},
            "spec": {}, "status": {"capacity": res, "allocatable": res,
                                   "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"}}


def pod_dict(name: str, ns: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """Upstream: templates/pod-default.yaml, plus what a template adds (labels, spec fields)."""
    res = {"cpu": "100m", "memory": "500Mi"}
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "resourceVersion": "1"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"limits": res, "requests": res}}],
                     "schedulerName": "default-scheduler", **spec},
            "status": {"phase": "Pending"}}


def spreading_pod(name: str, ns: str) -> dict[str, Any]:
    """Upstream: templates/pod-with-topology-spreading.yaml"""
    sel = {"matchLabels": {"color": "blue"}}
    return pod_dict(name, ns, {"color": "blue"}, topologySpreadConstraints=[
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}])


def default_spreading_pod(name: str, ns: str) -> dict[str, Any]:
    """A workload's pod with the system default constraints written out.

    Upstream: podtopologyspread.systemDefaultConstraints (hostname 3, zone 5, ScheduleAnyway)
    """
    sel = {"matchLabels": {"app": "web"}}
    return pod_dict(name, ns, {"app": "web"}, topologySpreadConstraints=[
        {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel},
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}])


def anti_affinity_pod(name: str, ns: str) -> dict[str, Any]:
    """Upstream: templates/pod-with-pod-anti-affinity.yaml"""
    return pod_dict(name, ns, {"color": "green"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME,
             "namespaces": ["sched-0", "sched-1"]}]}})


def default_pod(name: str, ns: str) -> dict[str, Any]:
    return pod_dict(name, ns)


def service_pod(name: str, ns: str) -> dict[str, Any]:
    """A pod of the Service `web` (SERVICE): no constraints of its own."""
    return pod_dict(name, ns, {"app": "web"})


RS_LABELS = {"app": "web", "pod-template-hash": "5d8f9c7b6"}


def _owned_pod(name: str, ns: str, labels: dict[str, str], uid: str) -> dict[str, Any]:
    """A pod of the ReplicaSet `web-<pod-template-hash>`, as its controller creates it."""
    rs = f"web-{labels['pod-template-hash']}"
    d = pod_dict(f"{rs}-{name}", ns, dict(labels))
    d["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                         "uid": uid, "controller": True, "blockOwnerDeletion": True}]
    return d


def replicaset_pod(name: str, ns: str) -> dict[str, Any]:
    """A pod of the ReplicaSet `web-5d8f9c7b6` (REPLICA_SET)."""
    return _owned_pod(name, ns, RS_LABELS, "uid-rs-web")


OLD_RS_LABELS = {"app": "web", "pod-template-hash": "7c6b5f9d4"}


def old_replicaset_pod(name: str, ns: str) -> dict[str, Any]:
    """A pod of the ReplicaSet a rolling update replaces (`web-7c6b5f9d4`, OLD_REPLICA_SET)."""
    return _owned_pod(name, ns, OLD_RS_LABELS, "uid-rs-web-old")


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "service-ns"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
REPLICA_SET = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "web-5d8f9c7b6", "namespace": "default", "uid": "uid-rs-web"},
               "spec": {"selector": {"matchLabels": RS_LABELS}, "template": {"metadata": {"labels": RS_LABELS}}}}
OLD_REPLICA_SET = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "web-7c6b5f9d4", "namespace": "default", "uid": "uid-rs-web-old"},
                   "spec": {"selector": {"matchLabels": OLD_RS_LABELS},
                            "template": {"metadata": {"labels": OLD_RS_LABELS}}}}


# name -> (zone labels on nodes, initial pod template + namespace, measured pod template + namespace)
WORKLOADS: dict[str, tuple[bool, Any, str, Any, str]] = {
    "SchedulingBasic": (False, default_pod, "default", default_pod, "default"),
    "TopologySpreading": (True, default_pod, "default", spreading_pod, "default"),
    "DefaultTopologySpreading": (True, default_pod, "default", default_spreading_pod, "service-ns"),
    "SchedulingPodAntiAffinity": (False, anti_affinity_pod, "sched-0", anti_affinity_pod, "sched-1"),
    "ServiceDefaultSpreading": (True, default_pod, "default", service_pod, "service-ns"),
    "ReplicaSetDefaultSpreading": (True, default_pod, "default", replicaset_pod, "default"),
    "RollingUpdate": (True, old_replicaset_pod, "default", replicaset_pod, "default"),
    "RollingUpdateNoZones": (False, old_replicaset_pod, "default", replicaset_pod, "default"),
}
# Workloads whose measured pods each bring what a rolling update's kubelet and controllers
# write to the pods (Cluster.churn).
CHURN = {"RollingUpdate", "RollingUpdateNoZones"}
# What the listers of default spreading hold (the scheduler's Service/ReplicaSet informers).
WORKLOAD_OBJECTS: dict[str, list[dict[str, Any]]] = {
    "ServiceDefaultSpreading": [SERVICE], "ReplicaSetDefaultSpreading": [REPLICA_SET],
    "RollingUpdate": [REPLICA_SET, OLD_REPLICA_SET], "RollingUpdateNoZones": [REPLICA_SET, OLD_REPLICA_SET]}


# --- the scheduler without an API server ---------------------------------------------------------

class _Indexer:
    def __init__(self) -> None:
        self.objs: dict[str, Any] = {}

    def get_by_key(self, key: str) -> Any:
        return self.objs.get(key)


class _Informer:
    """What Scheduler needs of a ResourceInformer: handlers and an indexer (its lister)."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []
        self.indexer = _Indexer()
        self.share_specs = False

    def informer(self) -> _Informer:
        return self

    def share_unchanged_specs(self) -> None:
        """SharedIndexInformer.share_unchanged_specs: updates keep an unchanged spec as is."""
        self.share_specs = True

    def add_event_handler(self, h: Any) -> None:
        self.handlers.append(h)

    async def wait_synced(self) -> None:
        pass

    def add(self, key: str, obj: Any) -> None:
        self.indexer.objs[key] = obj
        for h in self.handlers:
            h.on_add(obj, False)

    def update(self, key: str, obj: Any) -> None:
        old = self.indexer.objs[key]
        if self.share_specs and obj.spec == old.spec:
            obj.spec = old.spec        # as the watch decode shares an unchanged spec (client/rest.py _SpecSharing)
        self.indexer.objs[key] = obj
        for h in self.handlers:
            h.on_update(old, obj)

    def delete(self, key: str) -> None:
        old = self.indexer.objs.pop(key)
        for h in self.handlers:
            h.on_delete(old)


class _NoTransport:
    """The clientset of an informer factory never started: its listers are filled by hand."""

    transport = None


def give_listers(fwk: Framework, objs: list[dict[str, Any]]) -> None:
    """Fill the listers default spreading reads (Services, ReplicaSets) with objs. Without
    an API server the informers never start, so the plugin gets them directly (and the
    scheduler waits for none). A checkout without default spreading ignores them."""
    from kubeplane.api.types import apps_v1, core_v1
    from kubeplane.client.informers import SharedInformerFactory
    factory = SharedInformerFactory(_NoTransport())  # type: ignore[arg-type]
    for pl in fwk.plugins:
        if hasattr(pl, "set_listers"):
            pl.set_listers(factory)
    for d in objs:
        kind = {"Service": (factory.core_v1().services(), core_v1.Service),
                "ReplicaSet": (factory.apps_v1().replicasets(), apps_v1.ReplicaSet)}[d["kind"]]
        kind[0].informer().get_indexer().add(types.from_dict(d, kind[1]))


class _NullRecorder:
    def event(self, *args: Any) -> None:
        pass


class _NullClient:
    """Takes the PodScheduled=False patch of a pod that fits nowhere (and drops it)."""

    def core_v1(self) -> _NullClient:
        return self

    def pods(self, namespace: str | None = None) -> _NullClient:
        return self

    async def patch(self, *args: Any, **kwargs: Any) -> None:
        return None


class Cluster:
    """The scheduler and the informers it would have; bound pods counted as the informer sees them."""

    def __init__(self, seed: int, objs: list[dict[str, Any]] | None = None) -> None:
        self.pods, self.nodes = _Informer(), _Informer()
        self.bound = 0
        self.rv = 1
        self.old_pods: list[str] = []       # keys of the pods churn deletes, the last first
        loop = asyncio.get_running_loop()
        cluster = self

        class WatchBinder(DefaultBinder):
            """Binds by handing the bound pod to the informer on the next loop turn."""

            async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
                loop.call_soon(cluster.confirm, pod)
                return None

        specs = [PluginSpec(WatchBinder if cls is DefaultBinder else cls, w) for cls, w in DEFAULT_PLUGINS]
        fwk = Framework(specs)
        give_listers(fwk, objs or [])
        self.sched = Scheduler(_NullClient(), self.pods, self.nodes, recorder=_NullRecorder(),  # type: ignore[arg-type]
                               options=SchedulerOptions(seed=seed), framework=fwk)

    def confirm(self, assumed: Pod) -> None:
        """The watch event of the binding: the pod with spec.nodeName and a new resourceVersion."""
        self.rv += 1
        meta = assumed.metadata
        bound = msgspec.structs.replace(assumed, metadata=msgspec.structs.replace(meta, resource_version=str(self.rv)))
        self.pods.update(f"{meta.namespace}/{meta.name}", bound)
        self.bound += 1
        if self.old_pods:
            self.churn(f"{meta.namespace}/{meta.name}", self.old_pods.pop())

    def churn(self, new_key: str, old_key: str) -> None:
        """What the density run's rolling update writes per new pod once it is bound, each an
        informer event on its own loop turn: two status writes of the new pod (Running,
        Ready), and for an old pod the graceful delete (deletionTimestamp), its status write
        and the final delete."""
        writes = [(new_key, "status"), (old_key, "terminate"), (new_key, "status"), (old_key, "status"),
                  (old_key, "delete")]
        asyncio.get_running_loop().call_soon(self._write, writes)

    def _write(self, writes: list[tuple[str, str]]) -> None:
        """The first of writes; the rest on the next loop turns (an order that does not depend
        on timing, so that --instructions counts the same work every run)."""
        key, how = writes[0]
        if writes[1:]:
            asyncio.get_running_loop().call_soon(self._write, writes[1:])
        if how == "delete":
            self.pods.delete(key)
            return
        self.rv += 1
        pod = self.pods.indexer.objs[key]
        meta = msgspec.structs.replace(pod.metadata, resource_version=str(self.rv))
        if how == "terminate":
            meta = msgspec.structs.replace(meta, deletion_timestamp="2026-01-01T00:00:00Z")
            pod = msgspec.structs.replace(pod, metadata=meta)
        else:
            status = msgspec.structs.replace(pod.status or PodStatus(), phase="Running", message=str(self.rv))
            pod = msgspec.structs.replace(pod, metadata=meta, status=status)
        self.pods.update(key, pod)

    def add_nodes(self, nodes: list[Node]) -> None:
        for n in nodes:
            self.nodes.add(n.metadata.name, n)

    def add_pods(self, pods: list[Pod]) -> None:
        for p in pods:
            self.pods.add(f"{p.metadata.namespace}/{p.metadata.name}", p)

    async def wait_bound(self, n: int, task: asyncio.Future[None]) -> None:
        """Until n pods are bound; an error if none is bound for 30 s (pods that fit nowhere)."""
        last, since = self.bound, time.monotonic()
        while self.bound < n:
            if task.done():
                task.result()
                raise RuntimeError("the scheduler stopped")
            if self.bound != last:
                last, since = self.bound, time.monotonic()
            elif time.monotonic() - since > 30:
                raise RuntimeError(f"{n - self.bound} pods not scheduled in 30 s: more pods than the nodes take?")
            await asyncio.sleep(0.005)


# --- the throughput collector ------------------------------------------------------------------

class ThroughputCollector:
    """Upstream: throughputCollector (scheduler_perf/util.go): a sample a second, the first skipped."""

    def __init__(self, count: Any) -> None:
        self.count = count
        self.samples: list[float] = []

    async def run(self) -> None:
        last_count, last_time, started = self.count(), time.perf_counter(), False
        while True:
            await asyncio.sleep(SAMPLE_INTERVAL - ((time.perf_counter() - last_time) % SAMPLE_INTERVAL))
            now, scheduled = time.perf_counter(), self.count()
            if scheduled == 0:
                continue
            if not started:
                started, last_count, last_time = True, scheduled, now
                continue
            self.samples.append((scheduled - last_count) / (now - last_time))
            last_count, last_time = scheduled, now

    def collect(self) -> dict[str, float]:
        """Upstream: throughputCollector.collect"""
        s = sorted(self.samples)
        if not s:
            return {}
        n = len(s)
        return {"Average": sum(s) / n, **{f"Perc{p}": s[math.ceil(n * p / 100) - 1] for p in (50, 90, 95, 99)}}


# --- a run ---------------------------------------------------------------------------------------

async def run_workload(name: str, n_nodes: int, n_init: int, n_measure: int, seed: int) -> dict[str, Any]:
    zones, init_tmpl, init_ns, measure_tmpl, measure_ns = WORKLOADS[name]
    cluster = Cluster(seed, WORKLOAD_OBJECTS.get(name))
    nodes = [types.from_dict(node_dict(i, zones), Node) for i in range(n_nodes)]
    init_pods = [types.from_dict(init_tmpl(f"init-{i}", init_ns), Pod) for i in range(n_init)]
    measure_pods = [types.from_dict(measure_tmpl(f"pod-{i}", measure_ns), Pod) for i in range(n_measure)]
    task = asyncio.ensure_future(cluster.sched.run())
    cluster.add_nodes(nodes)
    cluster.add_pods(init_pods)
    await cluster.wait_bound(n_init, task)
    if name in CHURN:
        cluster.old_pods = [f"{init_ns}/{p.metadata.name}" for p in reversed(init_pods[:n_measure])]
    gc.collect()
    collector = ThroughputCollector(lambda: cluster.bound - n_init)
    ctask = asyncio.ensure_future(collector.run())
    if INSTRUMENT:
        _switch(True)
    t0, c0 = time.perf_counter(), time.process_time()
    cluster.add_pods(measure_pods)
    await cluster.wait_bound(n_init + n_measure, task)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if INSTRUMENT:
        _switch(False)
    for t in (ctask, task):
        t.cancel()
    await asyncio.gather(ctask, task, return_exceptions=True)
    sched = cluster.sched
    on_nodes = sum(len(ni.pods) for ni in sched.cache.nodes.values())
    if name not in CHURN:
        assert on_nodes == n_init + n_measure, on_nodes
    return {"workload": name, "nodes": n_nodes, "init_pods": n_init, "measure_pods": n_measure,
            "SchedulingThroughput": collector.collect(), "pods_per_s_wall": n_measure / wall,
            "cpu_ms_per_pod": 1000 * cpu / n_measure, "pods_per_cpu_s": n_measure / cpu}


INSTRUMENT = False       # --instructions' child: callgrind counts only the measured phase


def _switch(on: bool) -> None:
    """callgrind_control -i on|off for this process (instructions.py's _switch)."""
    child = os.posix_spawnp("callgrind_control", ["callgrind_control", "-i", "on" if on else "off",
                                                  str(os.getpid())],
                            os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    os.waitpid(child, 0)


def instructions(a: argparse.Namespace, name: str) -> int:
    """Instructions of the measured phase of one run, this script re-run under callgrind
    (init pods, set-up and the final checks not counted): a figure the machine's load does not
    move, to compare checkouts with (run each under its own PYTHONPATH)."""
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out / 'cg.out'}",
                        sys.executable, __file__, "--child", "--workload", name, "--nodes", str(a.nodes),
                        "--init-pods", str(a.init_pods), "--measure-pods", str(a.measure_pods), "--seed", str(a.seed),
                        "--json"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return sum(int(line.split()[1]) for f in out.glob("cg.out*")
                   for line in f.read_text(errors="replace").splitlines() if line.startswith("totals:"))


def fmt(r: dict[str, Any]) -> str:
    st = r["SchedulingThroughput"]
    thr = (f"avg {st['Average']:,.0f} p50 {st['Perc50']:,.0f} p90 {st['Perc90']:,.0f} p99 {st['Perc99']:,.0f}"
           if st else "no full 1 s sample")
    return (f"{r['workload']:<26} {r['nodes']:>6} nodes {r['init_pods']:>6} init {r['measure_pods']:>6} measured: "
            f"SchedulingThroughput {thr} pods/s; wall {r['pods_per_s_wall']:,.0f} pods/s; "
            f"CPU {r['cpu_ms_per_pod']:.3f} ms/pod ({r['pods_per_cpu_s']:,.0f} pods per CPU s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="all", choices=["all", *WORKLOADS])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init-pods", type=int, default=1000)
    ap.add_argument("--measure-pods", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="one JSON object per run instead of text")
    ap.add_argument("--instructions", action="store_true",
                    help="instructions per measured pod under callgrind (slow: ~50x) instead of the timings")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    names = list(WORKLOADS) if a.workload == "all" else [a.workload]
    if a.child:
        global INSTRUMENT
        INSTRUMENT = True
    elif a.instructions:
        for name in names:
            for _ in range(a.runs):
                n = instructions(a, name)
                r = {"workload": name, "nodes": a.nodes, "init_pods": a.init_pods, "measure_pods": a.measure_pods,
                     "instructions_per_pod": n // a.measure_pods}
                print(json.dumps(r) if a.json else f"{name:<26} {a.nodes:>6} nodes {a.init_pods:>6} init "
                      f"{a.measure_pods:>6} measured: {n // a.measure_pods:,} instructions per pod", flush=True)
        return
    for name in names:
        for run in range(a.runs):
            r = asyncio.run(run_workload(name, a.nodes, a.init_pods, a.measure_pods, a.seed + run))
            print(json.dumps(r) if a.json else fmt(r), flush=True)


if __name__ == "__main__":
    main()
