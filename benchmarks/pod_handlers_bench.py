"""The cost of one pod watch event in kube-controller-manager's pod informer: the cache update
and the twelve controllers' pod handlers, as a rolling update delivers them.

Run:  python benchmarks/pod_handlers_bench.py [--pods 1000] [--repeat 3] [--src DIR ...] [--profile]

One process: an APIServer on memory storage and `run_controllers` (every controller of
`kubeplane up`, on a factory with managedFields stripped), left running until the pod informer
has its twelve handlers. Then the pods' events are delivered straight to the pod informer
(SharedIndexInformer.add/delete, what Reflector._apply calls) without yielding to the loop, so
only the informer and the handlers run; the controllers' workers never see the keys queued.
Per pod, as in density.py's rolling update of a 1,000-pod Deployment whose namespace has no
Service, quota or budget: ADDED (pending, owned by a ReplicaSet that exists), MODIFIED bound,
four MODIFIED status patches (initialized, running with an IP, ready, ...), MODIFIED graceful
delete, MODIFIED terminated, DELETED: 9 events, 7,000 updates + 1,000 adds + 1,000 deletes.

Prints per event kind the CPU microseconds per event (time.process_time, best of --repeat
rounds; each round uses fresh pod names) and with --profile the handlers' cumulative share
(cProfile). --src compares checkouts (each DIR holding src/kubeplane); CPU times on a shared
machine: compare the runs of one invocation, which interleave.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pathlib
import pstats
import subprocess
import sys
import tempfile
import time
from typing import Any

NS = "density"
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))


def pod_states(i: int, rnd: int, rs_name: str, rs_uid: str) -> list[tuple[str, dict[str, Any]]]:
    """The watch events of one pod of a rolling update, as (type, object) with rising resourceVersions."""
    name = f"{rs_name}-r{rnd}-{i:05d}"
    rv = [1_000_000 * (rnd + 1) + 10 * i]
    ts = "2026-01-01T00:00:00Z"

    def nxt() -> str:
        rv[0] += 1
        return str(rv[0])

    meta = {"name": name, "namespace": NS, "uid": f"uid-{rnd}-{i}", "creationTimestamp": ts,
            "labels": {"app": "density", "pod-template-hash": "5d9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs_uid,
                                 "controller": True, "blockOwnerDeletion": True}]}
    spec = {"containers": [{"name": "c", "image": "img:2", "resources": {}}], "restartPolicy": "Always",
            "serviceAccountName": "default", "schedulerName": "default-scheduler", "priority": 0,
            "tolerations": [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300} for k in ("not-ready", "unreachable")]}

    def cond(t: str, s: str) -> dict[str, Any]:
        return {"type": t, "status": s, "lastTransitionTime": ts}

    def pod(status: dict[str, Any], node: str | None = None, deleting: bool = False) -> dict[str, Any]:
        m = {**meta, "resourceVersion": nxt()}
        if deleting:
            m |= {"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": m,
                "spec": {**spec, "nodeName": node} if node else spec, "status": status}

    node = f"node-{i % 100}"
    cs_waiting = [{"name": "c", "image": "img:2", "imageID": "", "ready": False, "restartCount": 0,
                   "state": {"waiting": {"reason": "ContainerCreating"}}}]
    cs_running = [{"name": "c", "image": "img:2", "imageID": "img", "ready": True, "restartCount": 0,
                   "started": True, "state": {"running": {"startedAt": ts}}}]
    ip = {"podIP": f"10.0.{i // 250}.{i % 250}", "podIPs": [{"ip": f"10.0.{i // 250}.{i % 250}"}],
          "hostIP": "10.1.0.1", "hostIPs": [{"ip": "10.1.0.1"}]}
    sched = [cond("PodScheduled", "True")]
    base = {"phase": "Pending", "qosClass": "BestEffort"}
    not_ready = [cond("Initialized", "True"), cond("Ready", "False"), cond("ContainersReady", "False"), *sched]
    ready = [cond("Initialized", "True"), cond("Ready", "True"), cond("ContainersReady", "True"), *sched]
    terminated = [{**cs_running[0], "ready": False, "started": False,
                   "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": ts, "finishedAt": ts}}}]
    return [
        ("ADDED", pod(base)),
        ("MODIFIED", pod({**base, "conditions": sched}, node)),
        ("MODIFIED", pod({**base, "conditions": not_ready, "containerStatuses": cs_waiting, "startTime": ts,
                          "hostIP": "10.1.0.1"}, node)),
        ("MODIFIED", pod({**base, **ip, "phase": "Running", "conditions": not_ready, "containerStatuses": cs_running,
                          "startTime": ts}, node)),
        ("MODIFIED", pod({**base, **ip, "phase": "Running", "conditions": ready, "containerStatuses": cs_running,
                          "startTime": ts}, node)),
        ("MODIFIED", pod({**base, **ip, "phase": "Running", "conditions": ready, "containerStatuses": cs_running,
                          "startTime": ts}, node, deleting=True)),
        ("MODIFIED", pod({**base, **ip, "phase": "Running", "conditions": not_ready, "containerStatuses": terminated,
                          "startTime": ts}, node, deleting=True)),
        ("MODIFIED", pod({**base, **ip, "phase": "Succeeded", "conditions": not_ready,
                          "containerStatuses": terminated, "startTime": ts}, node, deleting=True)),
        ("DELETED", pod({**base, **ip, "phase": "Succeeded", "conditions": not_ready,
                         "containerStatuses": terminated, "startTime": ts}, node, deleting=True)),
    ]


def handler_label(h: Any) -> str:
    """Controller.method of a handler's update function (or of the handler)."""
    fn = getattr(h, "update_func", None) or getattr(h, "delete_func", None) or h
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        return f"{type(owner).__name__}.{fn.__name__}"
    return getattr(fn, "__qualname__", type(fn).__name__)


async def child(args: argparse.Namespace) -> dict[str, Any]:
    from kubeplane.api.types import core_v1, from_dict
    from kubeplane.apiserver.server import APIServer
    from kubeplane.client.informers import SharedInformerFactory
    from kubeplane.client.tools.cache.shared_informer import transform_strip_managed_fields
    from kubeplane.cmd.controller_manager import run_controllers
    from kubeplane.cmd.up import in_process_clientset
    from kubeplane.storage.memory import MemoryStorage

    sys.path.insert(0, BENCH_DIR)
    from instructions import _switch as switch

    api = APIServer(MemoryStorage())
    await api.bootstrap()
    cs = in_process_clientset(api, "bench")
    await cs.core_v1().namespaces().create(from_dict({"metadata": {"name": NS}}, core_v1.Namespace))
    rs = await cs.apps_v1().replicasets(NS).create({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "density-5d9c", "namespace": NS},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "density", "pod-template-hash": "5d9c"}},
                 "template": {"metadata": {"labels": {"app": "density", "pod-template-hash": "5d9c"}},
                              "spec": {"containers": [{"name": "c", "image": "img:2"}]}}}})
    factory = SharedInformerFactory(cs, transform=transform_strip_managed_fields)
    task = asyncio.create_task(run_controllers(cs, factory=factory))
    inf = factory.core_v1().pods().informer()
    rs_inf = factory.apps_v1().replicasets().informer()
    for _ in range(200):
        await asyncio.sleep(0.1)
        if len(inf.handlers) >= 12 and inf.has_synced() and rs_inf.indexer.list():
            break
    await asyncio.sleep(1.0)
    for h in list(inf.handlers):
        if args.without and any(w in handler_label(h) for w in args.without):
            inf.remove_event_handler(h)
    handlers = len(inf.handlers)
    rs_name, rs_uid = rs.metadata.name, rs.metadata.uid

    rounds: list[dict[str, float]] = []
    prof = cProfile.Profile() if args.profile else None
    for rnd in range(args.repeat):
        events = [ev for i in range(args.pods) for ev in pod_states(i, rnd, rs_name, rs_uid)]
        # decoded before timing, as the reflector hands over decoded objects; add/update/delete
        # in the order a rolling update interleaves them: per pod in turn
        objs = [(t, from_dict(o, core_v1.Pod)) for t, o in events]
        by_kind = {"ADDED": 0.0, "MODIFIED": 0.0, "DELETED": 0.0}
        counts = {"ADDED": 0, "MODIFIED": 0, "DELETED": 0}
        pt = time.process_time
        if prof is not None:
            prof.enable()
        if args.callgrind:
            switch(os.getpid(), True)
        for t, o in objs:
            t0 = pt()
            if t == "DELETED":
                inf.delete(o)
            else:
                inf.add(o)
            by_kind[t] += pt() - t0
            counts[t] += 1
        if args.callgrind:
            switch(os.getpid(), False)
        if prof is not None:
            prof.disable()
        rounds.append({k: by_kind[k] / counts[k] * 1e6 for k in by_kind}
                      | {"total_ms": sum(by_kind.values()) * 1e3})
    if args.per_handler:
        out_h = {}
        for rnd2, h in enumerate(list(inf.handlers)):
            events = [ev for i in range(args.pods) for ev in pod_states(i, 100 + rnd2, rs_name, rs_uid)]
            objs = [(t, from_dict(o, core_v1.Pod)) for t, o in events]
            prev: dict[str, Any] = {}
            pt = time.process_time
            t0 = pt()
            for t, o in objs:
                name = o.metadata.name
                if t == "ADDED":
                    h.on_add(o, False)
                elif t == "MODIFIED":
                    h.on_update(prev[name], o)
                else:
                    h.on_delete(o)
                prev[name] = o
            dt = pt() - t0
            out_h[f"{rnd2:2d} {handler_label(h)}"] = dt / len(objs) * 1e6
        rounds_h = out_h
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass
    out: dict[str, Any] = {"handlers": handlers,
                           "best": {k: min(r[k] for r in rounds) for k in rounds[0]}}
    if args.per_handler:
        out["per_handler"] = rounds_h
    if prof is not None:
        out["profile"] = profile_rows(prof, args.tottime, args.top)
    return out


def profile_rows(prof: cProfile.Profile, tottime: bool, top: int) -> list[str]:
    """The top functions of a cProfile run, by cumulative (or own) time, a line each."""
    st = pstats.Stats(prof)
    rows = []
    for (fn, line, name), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append((tt if tottime else ct, nc, f"{os.path.basename(fn)}:{line}({name})"))
    rows.sort(reverse=True)
    return [f"{ct * 1e3:8.1f} ms {nc:7d}  {n}" for ct, nc, n in rows[:top]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--src", action="append", default=[])
    p.add_argument("--profile", action="store_true")
    p.add_argument("--top", type=int, default=60)
    p.add_argument("--tottime", action="store_true", help="--profile: rank by own time, not cumulative")
    p.add_argument("--per-handler", action="store_true",
                   help="also the CPU us per event of each handler alone (the handler called directly)")
    p.add_argument("--callgrind", action="store_true",
                   help="count the instructions of the measured events (valgrind; one round, no --profile)")
    p.add_argument("--without", action="append", default=[],
                   help="leave out the handlers whose label contains this (e.g. ReplicaSetController)")
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    if args.child:
        import logging
        logging.disable(logging.CRITICAL)
        print(json.dumps(asyncio.run(child(args))), flush=True)
        return
    srcs = args.src or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")]
    for src in srcs:
        if args.callgrind:
            with tempfile.TemporaryDirectory() as tmp:
                out = pathlib.Path(tmp)
                cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg.out",
                       sys.executable, os.path.abspath(__file__), "--child", "--callgrind", "--pods", str(args.pods),
                       "--repeat", "1", *[f"--without={w}" for w in args.without]]
                res = json.loads(subprocess.run(cmd, env={**os.environ, "PYTHONPATH": os.path.join(src, "src")},
                                                check=True, capture_output=True, text=True).stdout.splitlines()[-1])
                total = sum(int(line.split()[1]) for f in out.glob("cg.out*")
                            for line in f.read_text(errors="replace").splitlines() if line.startswith("totals:"))
            print(f"{src}: {res['handlers']} handlers; {total / (9 * args.pods):,.0f} instructions per event "
                  f"({args.pods} pods' 9 events each)")
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--pods", str(args.pods),
               "--repeat", str(args.repeat), "--top", str(args.top)] + (["--tottime"] if args.tottime else []) + [f"--without={w}" for w in args.without] + (["--profile"] if args.profile else []) + (["--per-handler"] if args.per_handler else [])
        res = json.loads(subprocess.run(cmd, env={**os.environ, "PYTHONPATH": os.path.join(src, "src")},
                                        check=True, capture_output=True, text=True).stdout)
        b = res["best"]
        print(f"{src}: {res['handlers']} handlers; CPU us/event: ADDED {b['ADDED']:.1f}  MODIFIED {b['MODIFIED']:.1f}"
              f"  DELETED {b['DELETED']:.1f}; all {args.pods} pods' events {b['total_ms']:.1f} ms")
        for k, v in res.get("per_handler", {}).items():
            print(f"    {v:6.2f} us/event  {k}")
        for line in res.get("profile", []):
            print("   ", line)


if __name__ == "__main__":
    main()
