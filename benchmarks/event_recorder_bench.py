"""CPU per Event through the recorder: record, correlate, and create it in the API server in process.

Run:  .venv/bin/python benchmarks/event_recorder_bench.py [-n 1000] [--runs 3] [--profile]
                                                         [--instructions] [--src DIR ...]

An APIServer on memory storage set up as `kubeplane up` sets it up (--authorization-mode
Node,RBAC with upstream's bootstrap policy and kubeadm's bindings, the default admission chain),
and the two recorders that make most of a rollout's Events, wired as `up` wires them:

  scheduler  one EventBroadcaster over the scheduler's in-process clientset (system:kube-scheduler),
             recorder "default-scheduler": Scheduled about a typed Pod
  kubelet    one EventBroadcaster over a NodeEventSink (each node's events go out as
             system:node:<name>, node_clientsets), a recorder ("kubelet", node) per node:
             Pulled, Created, Started and Killing about the pod's container (an ObjectReference
             with a fieldPath), as the simulated runtime's stages record them

-n pods (spread over 100 nodes) make 5 Events each. The figure is the CPU time of the whole
recording (time.process_time from the first event() to the end of both broadcasters' flush()),
divided by the number of Events: the recorder's build, the correlator, the client, the in-process
request (authorization, admission, validation, storage, the response) and the client's decode.
The median over --runs fresh servers is printed.

--instructions counts the instructions of one run under callgrind instead (load-independent;
valgrind must be installed), --src DIR [DIR ...] runs that for several checkouts (each DIR
holding src/kubeplane), e.g. /work/wt/s14start and this tree. --profile prints cProfile's top
functions of one run.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pathlib
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
NS = "bench"
NODES = 100
EVENTS_PER_POD = 5


async def _server() -> Any:
    from kubeplane.apiserver.server import APIServer
    from kubeplane.storage.memory import MemoryStorage
    try:
        from kubeplane.apiserver.authorization import modes
    except ImportError:                  # a checkout before issue 12 (pre11): nothing authorized
        api = APIServer(MemoryStorage())
        await api.bootstrap()
        return api
    from kubeplane.apiserver.authorization.rbac.reconcile import ensure_objects
    from kubeplane.apiserver.options import ServerRunOptions
    from kubeplane.cmd import identities
    mode_list = ("Node", "RBAC")
    api = APIServer(MemoryStorage(), options=ServerRunOptions(authorization_modes=mode_list))
    await api.bootstrap()
    await ensure_objects(api, identities.kubeadm_policy(modes.has_node_authorizer(mode_list)))
    await modes.synced(api)
    return api


def _pods(n: int) -> list[Any]:
    from kubeplane.api.types import core_v1, meta_v1
    return [core_v1.Pod(api_version="v1", kind="Pod",
                        metadata=meta_v1.ObjectMeta(name=f"web-5d9c7b8f6-{i:05d}", namespace=NS,
                                                    uid=f"0b7c5c9e-8f0e-4a6e-9d55-{i:012d}",
                                                    resource_version=str(1000 + i)),
                        spec=core_v1.PodSpec(containers=[core_v1.Container(name="web", image="nginx:1.25")],
                                             node_name=f"node-{i % NODES}"))
            for i in range(n)]


async def one_run(n: int, profile: bool = False, switch: Any = None) -> float:
    """CPU µs per Event of one run (see the module docstring)."""
    from kubeplane.api.types import core_v1, meta_v1
    from kubeplane.client.tools.record import EventBroadcaster
    from kubeplane.cmd.up import in_process_clientset

    api = await _server()
    try:
        from kubeplane.apiserver.authentication.user import APISERVER
        from kubeplane.cmd import identities
        from kubeplane.cmd.up import node_clientsets
        from kubeplane.kubelet import NodeEventSink
    except ImportError:                  # pre11: every component one unauthorized user, one kubelet sink
        admin = in_process_clientset(api, "bench")
        sched = EventBroadcaster(in_process_clientset(api, "kube-scheduler"))
        kubelet = EventBroadcaster(in_process_clientset(api, "kubelet"), max_queued_events=1000 * NODES)
    else:
        admin = in_process_clientset(api, "bench", APISERVER)
        sched = EventBroadcaster(in_process_clientset(api, "kube-scheduler", identities.KUBE_SCHEDULER))
        kubelet = EventBroadcaster(admin, sink=NodeEventSink(node_clientsets(api), admin),
                                   max_queued_events=1000 * NODES)
    await admin.core_v1().namespaces().create(core_v1.Namespace(metadata=meta_v1.ObjectMeta(name=NS)))
    sched_rec = sched.new_recorder("default-scheduler")
    node_recs = [kubelet.new_recorder("kubelet", f"node-{k}") for k in range(NODES)]
    sched.start()
    kubelet.start()
    pods = _pods(n)
    refs = [core_v1.ObjectReference(kind="Pod", api_version="v1", name=p.metadata.name, namespace=NS,
                                    uid=p.metadata.uid, resource_version=p.metadata.resource_version,
                                    field_path="spec.containers{web}") for p in pods]

    async def record(pods_range: range) -> None:
        # 100 pods at a time, then both queues drained: the scheduler's broadcaster holds 1,000
        for start in range(pods_range.start, pods_range.stop, 100):
            for i in range(start, min(start + 100, pods_range.stop)):
                p, ref, rec = pods[i], refs[i], node_recs[i % NODES]
                sched_rec.event(p, "Normal", "Scheduled",
                                f"Successfully assigned {NS}/{p.metadata.name} to node-{i % NODES}")
                rec.event(ref, "Normal", "Pulled", 'Container image "nginx:1.25" already present on machine')
                rec.event(ref, "Normal", "Created", "Created container: web")
                rec.event(ref, "Normal", "Started", "Started container web")
                rec.event(ref, "Normal", "Killing", "Stopping container web")
            await sched.flush()
            await kubelet.flush()

    warm = min(50, n)
    await record(range(warm))                       # first-use costs (caches, imports) left out
    gc.collect()
    prof = cProfile.Profile() if profile else None
    t0 = time.process_time()
    if switch:
        switch(True)
    if prof:
        prof.enable()
    await record(range(warm, n))
    if prof:
        prof.disable()
    if switch:
        switch(False)
    us = (time.process_time() - t0) * 1e6 / ((n - warm) * EVENTS_PER_POD)
    listed = await admin.core_v1().events(NS).list()
    assert len(listed.items) == n * EVENTS_PER_POD, len(listed.items)
    await sched.shutdown()
    await kubelet.shutdown()
    if prof:
        for key in ("tottime", "cumulative"):
            print(f"--- profile, sorted by {key}")
            pstats.Stats(prof).sort_stats(key).print_stats(40)
    return us


def _instructions(src: str, n: int) -> int:
    sys.path.insert(0, str(HERE))
    from instructions import _callgrind, _total
    with tempfile.TemporaryDirectory(prefix="events-") as tmp:
        data = pathlib.Path(tmp)
        env = dict(os.environ, PYTHONPATH=f"{src}/src")
        subprocess.run([*_callgrind(data / "cg.out"), sys.executable, __file__, "--child", "-n", str(n)],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _total(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1000, help="pods (5 Events each; default 1000)")
    ap.add_argument("--runs", type=int, default=3, help="runs; the median is printed (default 3)")
    ap.add_argument("--profile", action="store_true", help="cProfile one run")
    ap.add_argument("--instructions", action="store_true", help="callgrind instruction counts instead of CPU time")
    ap.add_argument("--src", nargs="*", default=[str(HERE.parent)], help="checkouts for --instructions")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    from kubeplane.utils import gc_tuning
    gc_tuning.tune()                 # as `kubeplane up` runs
    if args.child:
        sys.path.insert(0, str(HERE))
        from instructions import _switch
        asyncio.run(one_run(args.n, switch=lambda on: _switch(os.getpid(), on)))
        return
    if args.instructions:
        warm = min(50, args.n)
        for src in args.src:
            total = _instructions(src, args.n)
            print(f"{src}: {total:,} instructions, {total / ((args.n - warm) * EVENTS_PER_POD):,.0f} per Event")
        return
    if args.profile:
        asyncio.run(one_run(args.n, profile=True))
        return
    results = [asyncio.run(one_run(args.n)) for _ in range(args.runs)]
    print(f"CPU µs per Event, median of {args.runs} runs of {args.n} pods x {EVENTS_PER_POD} Events: "
          f"{statistics.median(results):.1f}   (runs: {' '.join(f'{v:.1f}' for v in results)})")


if __name__ == "__main__":
    main()
