"""Instructions per MemoryStorage write of a pod's status (its spec dict kept, as the status
strategy keeps it), the watch log's lean step included: the storage part of each of the
kubelet's status patches in density.py's rolling update.

    python benchmarks/storage_write_instructions.py                      # this tree
    python benchmarks/storage_write_instructions.py --src /work/main     # another checkout
    NOLEAN=1 python benchmarks/storage_write_instructions.py             # without the lean step

3,000 pods (~2.8 KB of JSON, ~1.2 KB of it spec, as density.py's with admission's additions),
6,000 writes to warm up (the lean step starts after watch_log.LEAN_LAG), 3,000 counted.
"""
from __future__ import annotations

import argparse
import copy
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PODS, WARM, COUNTED = 3_000, 6_000, 3_000

SPEC: dict[str, Any] = {
    "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}}],
        "defaultMode": 420}}],
    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}},
                    "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": True,
                                      "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent"}],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default", "serviceAccount": "default", "nodeName": "node-17", "securityContext": {},
    "schedulerName": "default-scheduler",
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300}],
    "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"}


def pod(i: int) -> dict[str, Any]:
    t = "2026-01-01T00:00:01Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"web-5d8f7c9b6-{i:05d}", "generateName": "web-5d8f7c9b6-", "namespace": "default",
        "uid": f"0b0c7e5e-1b7a-4b8e-9d0c-{i:012d}", "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7c9b6",
                             "uid": "1b0c7e5e-1b7a-4b8e-9d0c-3f3c2a1b0c9d", "controller": True,
                             "blockOwnerDeletion": True}]},
        "spec": copy.deepcopy(SPEC),
        "status": {"phase": "Running", "conditions": [
            {"type": c, "status": "True", "lastProbeTime": None, "lastTransitionTime": t}
            for c in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "hostIP": "172.18.0.2", "hostIPs": [{"ip": "172.18.0.2"}], "podIP": "10.244.0.2",
            "podIPs": [{"ip": "10.244.0.2"}], "startTime": t, "qosClass": "Burstable",
            "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": t}}, "lastState": {},
                                   "ready": True, "restartCount": 0, "image": "registry.k8s.io/pause:3.9",
                                   "imageID": "x@sha256:" + "5b" * 32, "containerID": f"sim://{i:064x}",
                                   "started": True}]}}


def _run(co: Any) -> Any:
    """Run a coroutine that never suspends (MemoryStorage's methods)."""
    try:
        co.send(None)
    except StopIteration as e:
        return e.value
    raise AssertionError("the store suspended")


def child() -> None:
    import orjson

    from instructions import _switch

    from kubeplane.storage.memory import MemoryStorage
    if os.environ.get("NOLEAN"):
        from kubeplane.storage import watch_log
        watch_log.LEAN_LAG = 1 << 60
    s = MemoryStorage()
    keys = []
    for i in range(PODS):
        p = pod(i)
        keys.append(f"/registry/pods/default/{p['metadata']['name']}")
        try:
            _run(s.create(keys[-1], p, orjson.dumps(p["spec"])))
        except TypeError:               # a checkout before Storage.create took spec_json (pre11)
            _run(s.create(keys[-1], p))
    n = 0

    def write() -> None:
        nonlocal n
        key = keys[n % PODS]
        n += 1
        kv = s._kvs[key]
        status = {**kv.obj["status"], "phase": "Running" if n & 1 else "Pending"}
        _run(s.update(key, {**kv.obj, "status": status}, kv.mod_revision))
    for _ in range(WARM):
        write()
    _switch(os.getpid(), True)
    for _ in range(COUNTED):
        write()
    _switch(os.getpid(), False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=str(HERE.parent), help="the checkout whose sources are measured")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        return child()
    from instructions import _callgrind, _total
    with tempfile.TemporaryDirectory() as d:
        data = pathlib.Path(d)
        env = {**os.environ, "PYTHONPATH": str(pathlib.Path(a.src) / "src")}
        subprocess.run([*_callgrind(data / "cg.out"), sys.executable, __file__, "--child"], check=True,
                       env=env, stderr=subprocess.DEVNULL)
        print(f"{a.src}: {_total(data) / COUNTED:,.0f} instructions per pod status write"
              f"{' (no lean step)' if os.environ.get('NOLEAN') else ''}")


if __name__ == "__main__":
    main()
