"""The cost of one pod watch event on its way into an in-process informer: the API server's
watch stream (storage event -> event line), the in-process transport, the client's decode
(ResourceClient.watch), the reflector and the informer's cache, and optionally the kubelet's
and the scheduler's pod handlers, as `kubeplane up` runs them on its one shared pod informer.

Run:  python benchmarks/pod_watch_bench.py [--pods 1000] [--handlers kubelet,scheduler]
          [--callgrind] [--src DIR ...] [--profile]

One process: an APIServer on memory storage and the shared pod informer of an in-process
SharedInformerFactory (no transform, as `up`'s), listed and then watching; the pods'
events are written straight to storage (pod_handlers_bench.pod_states: 9 events per pod as a
rolling update makes them, each pod with the projected service account volume, the
tolerations and the priority an admitted density pod has, ~2.5 KB), and then the measured
part: the informer's watch taking them in, --batch events (default 10) at a time, as a live
watch gets a few events per chunk (the writes between the batches are not measured).

--handlers adds a Kubelet (sim runtime, 100 nodes, not running: its informer handler only)
and/or a Scheduler (its pod handlers only) to the informer. --callgrind counts the
instructions (valgrind) of the writes with the watch taking them in, less those of the same
writes without a watch, per event; without it, CPU microseconds per event (time.process_time,
best of --repeat rounds on fresh pods). --src compares checkouts (each DIR holding src/kubeplane).
The kubelet answers as if it had reported each pod's status with its IP (its own status
writes coming back through the watch), so its handler takes the path of a live kubelet.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
NS = "density"
NODES = 100

# What admission and defaulting add to a density pod's spec (a 1,000/100 run's pod, trimmed).
SPEC_EXTRA: dict[str, Any] = {
    "dnsPolicy": "ClusterFirst", "securityContext": {}, "terminationGracePeriodSeconds": 30,
    "enableServiceLinks": True, "serviceAccount": "default", "preemptionPolicy": "PreemptLowerPriority",
    "volumes": [{"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
}
CONTAINER_EXTRA: dict[str, Any] = {
    "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": True,
                      "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
}


def events(pods: int, rnd: int, rs_name: str, rs_uid: str) -> list[tuple[str, dict[str, Any]]]:
    sys.path.insert(0, BENCH_DIR)
    from pod_handlers_bench import pod_states
    out = []
    for i in range(pods):
        for t, o in pod_states(i, rnd, rs_name, rs_uid):
            spec = {**o["spec"], **SPEC_EXTRA}
            spec["containers"] = [{**c, **CONTAINER_EXTRA} for c in spec["containers"]]
            if spec.get("nodeName"):
                spec["nodeName"] = f"node-{i % NODES}"
            out.append((t, {**o, "spec": spec}))
    return out


def reported(uid: str) -> dict[str, Any]:
    """The status the kubelet reported for pod uid-<round>-<i> (pod_states' pod IP)."""
    i = int(uid.rsplit("-", 1)[1])
    return {"podIP": f"10.0.{i // 250}.{i % 250}"}


async def child(args: argparse.Namespace) -> dict[str, Any]:
    import logging

    from kubeplane.api.types import core_v1, from_dict
    from kubeplane.apiserver.server import APIServer
    from kubeplane.client.informers import SharedInformerFactory
    from kubeplane.cmd.up import in_process_clientset
    from kubeplane.storage.memory import MemoryStorage
    logging.disable(logging.CRITICAL)
    sys.path.insert(0, BENCH_DIR)
    from instructions import _switch as switch

    api = APIServer(MemoryStorage())
    await api.bootstrap()
    cs = in_process_clientset(api, "bench")
    await cs.core_v1().namespaces().create(from_dict({"metadata": {"name": NS}}, core_v1.Namespace))
    factory = SharedInformerFactory(cs)
    pods = factory.core_v1().pods()
    inf = pods.informer()
    handlers = [h for h in args.handlers.split(",") if h]
    if "kubelet" in handlers:
        from kubeplane.kubelet.kubelet import Kubelet
        from kubeplane.kubelet.runtime.sim.runtime import SimRuntime
        kubelet = Kubelet(cs, node_names=[f"node-{i}" for i in range(NODES)], runtime=SimRuntime(), factory=factory)
        kubelet.status_manager.get_pod_status = reported         # type: ignore[method-assign]
        inf.add_event_handler(kubelet)
        if hasattr(inf, "share_unchanged_specs"):                  # as Kubelet.run asks for it
            inf.share_unchanged_specs()
    if "scheduler" in handlers:
        from kubeplane.scheduler import Scheduler
        Scheduler(cs, pods, factory.core_v1().nodes(), recorder=None)
    factory.start()
    await factory.wait_for_cache_sync()
    for t in factory.tasks.values():
        t.cancel()
    await asyncio.gather(*factory.tasks.values(), return_exceptions=True)

    done = asyncio.Event()
    target = [""]

    def check(obj: Any) -> None:
        if obj.metadata.resource_version == target[0]:
            done.set()

    class Sentinel:
        def on_add(self, obj: Any, initial: bool) -> None:
            check(obj)

        def on_update(self, old: Any, new: Any) -> None:
            check(new)

        def on_delete(self, obj: Any) -> None:
            check(obj)
    inf.add_event_handler(Sentinel())
    watching = None if args.writes_only else asyncio.ensure_future(inf.reflector.watch_once())
    await asyncio.sleep(0.1)

    rounds = []
    prof = cProfile.Profile() if args.profile else None
    for rnd in range(args.repeat):
        evs = events(args.pods, rnd, "density-5d9c", "rs-uid")
        spent = 0.0
        if args.callgrind:
            switch(os.getpid(), True)
        for start in range(0, len(evs), args.batch):
            for t, o in evs[start:start + args.batch]:
                key = f"/registry/pods/{NS}/{o['metadata']['name']}"
                o = {**o, "metadata": {k: v for k, v in o["metadata"].items() if k != "resourceVersion"}}
                if t == "ADDED":
                    kv = await api.storage.create(key, o)
                elif t == "MODIFIED":
                    kv = await api.storage.update(key, o)
                else:
                    kv = await api.storage.delete(key)
            if watching is None:
                continue
            target[0] = str(kv.mod_revision)
            done.clear()
            if prof is not None:
                prof.enable()
            t0 = time.process_time()
            await done.wait()
            spent += time.process_time() - t0
            if prof is not None:
                prof.disable()
        if args.callgrind:
            switch(os.getpid(), False)
        rounds.append(spent / len(evs) * 1e6)
    if watching is not None:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    out: dict[str, Any] = {"events": 9 * args.pods, "us_per_event": min(rounds), "handlers": len(inf.handlers)}
    if prof is not None:
        from pod_handlers_bench import profile_rows
        out["profile"] = profile_rows(prof, args.tottime, args.top)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch", type=int, default=10, help="events written before the watch takes them (default 10)")
    p.add_argument("--handlers", default="", help="kubelet,scheduler: their pod handlers on the informer too")
    p.add_argument("--src", action="append", default=[])
    p.add_argument("--profile", action="store_true")
    p.add_argument("--tottime", action="store_true", help="--profile: rank by own time")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--callgrind", action="store_true", help="instructions per event (valgrind; one round)")
    p.add_argument("--writes-only", action="store_true", help="(child) the writes without the watch: subtracted")
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args))), flush=True)
        return
    srcs = args.src or [os.path.join(BENCH_DIR, "..")]
    flags = ["--pods", str(args.pods), "--handlers", args.handlers, "--top", str(args.top), "--batch", str(args.batch)]
    for src in srcs:
        env = {**os.environ, "PYTHONPATH": os.path.join(src, "src")}
        if args.callgrind:
            counts = []
            for extra in ([], ["--writes-only"]):
                with tempfile.TemporaryDirectory() as tmp:
                    out = pathlib.Path(tmp)
                    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg.out",
                           sys.executable, os.path.abspath(__file__), "--child", "--callgrind", "--repeat", "1",
                           *flags, *extra]
                    res = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True,
                                                    text=True).stdout.splitlines()[-1])
                    counts.append(sum(int(line.split()[1]) for f in out.glob("cg.out*")
                                      for line in f.read_text(errors="replace").splitlines()
                                      if line.startswith("totals:")))
            print(f"{src}: handlers {args.handlers or 'none'}: {(counts[0] - counts[1]) / res['events']:,.0f} "
                  f"instructions per event ({res['events']} events; writes with the watch "
                  f"{counts[0] / res['events']:,.0f}, without {counts[1] / res['events']:,.0f})")
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--repeat", str(args.repeat), *flags,
               *(["--profile"] if args.profile else []), *(["--tottime"] if args.tottime else [])]
        res = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
        print(f"{src}: handlers {args.handlers or 'none'}: CPU {res['us_per_event']:.1f} us per event "
              f"({res['events']} events, best of {args.repeat})")
        for line in res.get("profile", []):
            print("   ", line)


if __name__ == "__main__":
    main()
