"""In-process write benchmark: the API server's CPU per write as density.py's components make them.

Run:  .venv/bin/python benchmarks/inprocess_writes.py [-n 2000] [--runs 5] [--profile KIND]
                                                     [--authorization-mode Node,RBAC] [--audit-policy FILE]

An APIServer on memory storage and `in_process_clientset` (InProcessTransport -> route_trusted),
as `kubeplane up` wires the controllers, scheduler and kubelets. Per run and per pod, in phases:

  create   a typed pod create with generateName, as the ReplicaSet controller makes it from a
           Deployment's (defaulted) template: labels, one controller ownerReference, one container
  bind     pods/binding to a node, as the scheduler
  status   two /status merge patches shaped like the kubelet status manager's
           ({"metadata":{"uid":…},"status":<merge diff>}): Pending/ContainerCreating, then Running/Ready
  event    a typed core/v1 Event create shaped like the kubelet's "Pulled"

--authorization-mode (default AlwaysAllow, every write by one user) runs the server with those
authorizers and upstream's bootstrap policy, each phase as its component's user as `up` runs
them: create as the replicaset-controller's service account, bind as system:kube-scheduler,
status and event as a kubelet (cmd/identities.py).

The garbage collector is tuned as `kubeplane up` tunes it (utils/gc_tuning.py) and each phase
starts after a full collection. Each phase's CPU time (time.process_time) is divided by its number of writes; the figure
printed is the median over --runs fresh servers. --profile KIND runs cProfile over that phase
of one run and prints the top functions by tottime and by cumulative time.

--node-authz: the status patches and events go out as their node (system:node:node-<i>, `up`'s
node_clientsets) through the Node authorizer (in a union with an allow-all for non-nodes, a
stand-in for RBAC) and NodeRestriction, as `up` with --authorization-mode=Node,RBAC.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import os
import statistics
import tempfile
import time
from typing import Any, Awaitable, Callable

import kubeplane.apiserver.patch  # noqa: F401  (imported lazily by the server: not inside a timed phase)
from kubeplane.api.types import core_v1, decode, from_dict
from kubeplane.apiserver.server import APIServer
from kubeplane.cmd.up import in_process_clientset, node_clientsets
from kubeplane.kubelet.status.status_manager import merge_diff
from kubeplane.storage.memory import MemoryStorage
from kubeplane.utils import gc_tuning

NS = "bench"
AUDIT_MODE = ["batch"]
NODES = 100
KINDS = ("create", "bind", "status", "event")
NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:00:02Z"

# A Deployment's template as stored (defaulted), plus the pod-template-hash the ReplicaSet adds.
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web", "pod-template-hash": "5d9c7b8f6"}},
    "spec": {
        "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "IfNotPresent",
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                        "resources": {}}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler",
    },
}
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c7b8f6",
         "uid": "0b7c5c9e-8f0e-4a6e-9d55-2f5b4c1c8d11", "controller": True, "blockOwnerDeletion": True}


def rs_pod() -> Any:
    """A typed pod as controller_utils.get_pod_from_template builds it (spec shared, not copied)."""
    return from_dict({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"generateName": "web-5d9c7b8f6-", "labels": dict(TEMPLATE["metadata"]["labels"]),
                                   "ownerReferences": [OWNER]},
                      "spec": TEMPLATE["spec"]}, core_v1.Pod)


def pending_status(node_ip: str) -> dict[str, Any]:
    return {"phase": "Pending", "qosClass": "BestEffort",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW},
                {"type": "PodReadyToStartContainers", "status": "False", "lastProbeTime": None,
                 "lastTransitionTime": NOW},
                {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW},
                {"type": "Ready", "status": "False", "lastProbeTime": None, "lastTransitionTime": NOW,
                 "reason": "ContainersNotReady", "message": "containers with unready status: [web]"},
                {"type": "ContainersReady", "status": "False", "lastProbeTime": None, "lastTransitionTime": NOW,
                 "reason": "ContainersNotReady", "message": "containers with unready status: [web]"}],
            "hostIP": node_ip, "hostIPs": [{"ip": node_ip}], "startTime": NOW,
            "containerStatuses": [{"name": "web", "image": "registry.k8s.io/pause:3.10", "imageID": "",
                                   "ready": False, "restartCount": 0, "started": False,
                                   "state": {"waiting": {"reason": "ContainerCreating"}}}]}


def running_status(node_ip: str, pod_ip: str) -> dict[str, Any]:
    s = pending_status(node_ip)
    s["phase"] = "Running"
    for c in s["conditions"]:
        if c["type"] != "PodScheduled":
            c.update(status="True", lastTransitionTime=LATER)
            c.pop("reason", None)
            c.pop("message", None)
    s["podIP"], s["podIPs"] = pod_ip, [{"ip": pod_ip}]
    s["containerStatuses"] = [{"name": "web", "image": "registry.k8s.io/pause:3.10",
                               "imageID": "registry.k8s.io/pause@sha256:ee6521f2", "containerID": "sim://0a1b2c3d",
                               "ready": True, "restartCount": 0, "started": True,
                               "state": {"running": {"startedAt": LATER}}}]
    return s


def pulled_event(pod: dict[str, Any], node: str, seq: int) -> Any:
    meta = pod["metadata"]
    return from_dict({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{0x1800000000000000 + seq:x}", "namespace": NS},
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": meta["name"], "uid": meta["uid"],
                           "apiVersion": "v1", "resourceVersion": meta["resourceVersion"],
                           "fieldPath": "spec.containers{web}"},
        "reason": "Pulled", "message": 'Container image "registry.k8s.io/pause:3.10" already present on machine',
        "source": {"component": "kubelet", "host": node}, "firstTimestamp": NOW, "lastTimestamp": NOW,
        "count": 1, "type": "Normal", "reportingComponent": "kubelet", "reportingInstance": node}, core_v1.Event)


async def timed(n_ops: int, body: Callable[[], Awaitable[None]], profile: bool) -> float:
    """CPU µs per op of body (which makes n_ops writes)."""
    prof = cProfile.Profile() if profile else None
    gc.collect()  # each phase starts with no garbage left from the one before
    t0 = time.process_time()
    if prof:
        prof.enable()
    await body()
    if prof:
        prof.disable()
    us = (time.process_time() - t0) * 1e6 / n_ops
    if prof:
        for key in ("tottime", "cumulative"):
            print(f"--- profile, sorted by {key}")
            pstats.Stats(prof).sort_stats(key).print_stats(35)
    return us


async def one_run(n: int, profile: str = "", modes: tuple[str, ...] = ("AlwaysAllow",),
                  audit_policy: str = "") -> dict[str, float]:
    from kubeplane.apiserver.authentication.user import APISERVER
    from kubeplane.apiserver.options import ServerRunOptions
    api = APIServer(MemoryStorage(), options=ServerRunOptions(authorization_modes=modes))
    if audit_policy:             # --audit-policy: every write audited as the policy says, to a temp file
        from kubeplane.apiserver.audit import options as audit_options
        log = tempfile.NamedTemporaryFile(prefix="audit-", suffix=".log", delete=False).name
        audit_options.configure(api, audit_options.AuditOptions(policy_file=audit_policy, log_path=log,
                                                                log_mode=AUDIT_MODE[0]))
    await api.bootstrap()
    cs = in_process_clientset(api, "bench")
    rs_cs = sched_cs = kubelet_cs = cs
    node_cs = None                # with the Node authorizer: each kubelet writes as its node
    if modes != ("AlwaysAllow",):
        from kubeplane.apiserver.authorization.rbac.reconcile import ensure_objects
        from kubeplane.cmd import identities
        node_authorizer = "Node" in modes
        await ensure_objects(api, identities.kubeadm_policy(node_authorizer=node_authorizer))
        cs = in_process_clientset(api, "bench", APISERVER)
        rs_cs = in_process_clientset(api, "kube-controller-manager", identities.controller_user("replicaset-controller"))
        sched_cs = in_process_clientset(api, "kube-scheduler", identities.KUBE_SCHEDULER)
        kubelet_cs = in_process_clientset(api, "kubelet", identities.KUBELET)
        if node_authorizer:
            for_node = node_clientsets(api)
            node_cs = [for_node(f"node-{k}") for k in range(NODES)]
    await cs.core_v1().namespaces().create(from_dict({"metadata": {"name": NS}}, core_v1.Namespace))
    # the default service account the ServiceAccount admission plugin needs (no controller-manager here)
    await cs.core_v1().serviceaccounts(NS).create({"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": {"name": "default", "namespace": NS}})
    pods = rs_cs.core_v1().pods(NS)
    bindings = sched_cs.core_v1().pods(NS)
    statuses = kubelet_cs.core_v1().pods(NS)
    events = kubelet_cs.core_v1().events(NS)
    created: list[dict[str, Any]] = []
    out: dict[str, float] = {}

    async def create() -> None:
        for _ in range(n):
            p = await pods.create(rs_pod())
            created.append({"metadata": {"name": p.metadata.name, "uid": p.metadata.uid}})

    async def bind() -> None:
        for i, p in enumerate(created):
            await bindings.bind(p["metadata"]["name"], f"node-{i % NODES}", uid=p["metadata"]["uid"])

    async def status() -> None:
        for i, p in enumerate(created):
            node_ip = f"10.0.{i % NODES}.1"
            pending, running = pending_status(node_ip), running_status(node_ip, f"10.244.{i // 250}.{i % 250 + 2}")
            base = {"phase": "Pending", "qosClass": "BestEffort",
                    "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                    "lastTransitionTime": NOW}]}
            uid = p["metadata"]["uid"]
            writer = node_cs[i % NODES].core_v1().pods(NS) if node_cs else statuses
            await writer.patch(p["metadata"]["name"], {"metadata": {"uid": uid}, "status": merge_diff(base, pending)},
                               "merge", subresource="status")
            r = await writer.patch(p["metadata"]["name"],
                                 {"metadata": {"uid": uid}, "status": merge_diff(pending, running)},
                                   "merge", subresource="status")
            p["metadata"]["resourceVersion"] = r.metadata.resource_version

    async def event() -> None:
        evs = [pulled_event(p, f"node-{i % NODES}", i) for i, p in enumerate(created)]
        for i, ev in enumerate(evs):
            await (node_cs[i % NODES].core_v1().events(NS) if node_cs else events).create(ev)

    out["create"] = await timed(n, create, profile == "create")
    out["bind"] = await timed(n, bind, profile == "bind")
    out["status"] = await timed(2 * n, status, profile == "status")
    out["event"] = await timed(n, event, profile == "event")
    # A sanity check that the writes did what the components expect.
    last = decode((await cs.transport.request("GET", f"/api/v1/namespaces/{NS}/pods/"
                                              f"{created[-1]['metadata']['name']}")).body, core_v1.Pod)
    assert last.status.phase == "Running" and last.spec.node_name, last
    if getattr(api, "audit", None) is not None:      # (a checkout before auditing has no attribute)
        api.audit.shutdown()
        os.unlink(log)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=2000, help="pods per run (default 2000)")
    ap.add_argument("--runs", type=int, default=5, help="runs; the median is printed (default 5)")
    ap.add_argument("--profile", choices=KINDS, default="", help="cProfile this phase of one run")
    ap.add_argument("--authorization-mode", default="AlwaysAllow",
                    help="the server's authorizers, e.g. Node,RBAC (default AlwaysAllow)")
    ap.add_argument("--audit-policy", default="", metavar="FILE", help="audit with this policy (the log in a temp file)")
    ap.add_argument("--audit-mode", default="batch", choices=("blocking", "batch"), help="--audit-log-mode")
    args = ap.parse_args()
    AUDIT_MODE[0] = args.audit_mode
    modes = tuple(args.authorization_mode.split(","))
    gc_tuning.tune()  # as `kubeplane up` runs: otherwise one full collection doubles a phase's figure
    if args.profile:
        asyncio.run(one_run(args.n, args.profile, modes, args.audit_policy))
        return
    results = [asyncio.run(one_run(args.n, modes=modes, audit_policy=args.audit_policy)) for _ in range(args.runs)]
    print(f"CPU µs per op, median of {args.runs} runs of {args.n} pods:")
    for kind in KINDS:
        values = [r[kind] for r in results]
        print(f"  {kind:7s} {statistics.median(values):7.1f}   (runs: {' '.join(f'{v:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
