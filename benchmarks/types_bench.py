"""Typed objects: decode / encode / deep_copy of 1,000 pods per second, vs orjson dicts.

    .venv/bin/python benchmarks/types_bench.py [--pods 1000] [--rounds 7]

Each figure is pods/s for the best of `rounds` passes over `pods` distinct running pods
(~2.5 KB of JSON each: managedFields, a projected service-account volume, conditions and a
containerStatus, as the API server returns them). Rows:

  decode      bytes -> object    (typed: kubeplane.api.types.decode; dict: orjson.loads)
  encode      object -> bytes    (typed: encode; dict: orjson.dumps)
  deep_copy   object -> copy     (typed: msgpack round-trip = Struct.deep_copy, JSON round-trip,
                                  copy.deepcopy, which Struct routes to deep_copy;
                                  dict: orjson round-trip, copy.deepcopy)
  convert     dict -> object, object -> dict (from_dict / to_dict)
"""
from __future__ import annotations

import argparse
import copy
import pathlib
import sys
import time
from typing import Any, Callable

import orjson

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from kubeplane.api import types as t
from kubeplane.api.types import core_v1


def pod(i: int) -> dict[str, Any]:
    name = f"web-7d4b9c8f6-{i:06d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": f"ns-{i % 20:02d}", "uid": f"3f1c0f7e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(1000 + i), "creationTimestamp": "2025-01-01T00:00:00Z",
            "generateName": "web-7d4b9c8f6-",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6", "tier": "frontend"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6",
                                 "uid": "9a0e-rs", "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}}}}}],
        },
        "spec": {
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "containers": [{
                "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "env": [{"name": "MODE", "value": "production"}],
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "schedulerName": "default-scheduler",
            "nodeName": f"node-{i % 50}", "securityContext": {},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "hostIP": "10.1.0.1", "podIP": f"10.0.{i // 250 % 256}.{i % 250}",
            "podIPs": [{"ip": f"10.0.{i // 250 % 256}.{i % 250}"}], "startTime": "2025-01-01T00:00:01Z",
            "qosClass": "Burstable",
            "conditions": [{"type": c, "status": "True", "lastTransitionTime": "2025-01-01T00:00:02Z"}
                           for c in ("PodReadyToStartContainers", "Initialized", "Ready",
                                     "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0, "started": True,
                                   "image": "nginx:1.27", "imageID": "docker.io/library/nginx@sha256:abc",
                                   "containerID": "containerd://abc",
                                   "state": {"running": {"startedAt": "2025-01-01T00:00:02Z"}}}],
        },
    }


def best_rate(fn: Callable[[], Any], n: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n, r = args.pods, args.rounds

    dicts = [pod(i) for i in range(n)]
    blobs = [orjson.dumps(d) for d in dicts]
    typed = [t.decode(b, core_v1.Pod) for b in blobs]
    assert [orjson.loads(t.encode(p)) for p in typed] == dicts      # the comparison is fair
    dec = t.decode
    rows: list[tuple[str, float, float | None]] = [
        ("decode", best_rate(lambda: [dec(b, core_v1.Pod) for b in blobs], n, r),
         best_rate(lambda: [orjson.loads(b) for b in blobs], n, r)),
        ("encode", best_rate(lambda: [t.encode(p) for p in typed], n, r),
         best_rate(lambda: [orjson.dumps(d) for d in dicts], n, r)),
        ("deep_copy (msgpack, used)", best_rate(lambda: [p.deep_copy() for p in typed], n, r),
         best_rate(lambda: [orjson.loads(orjson.dumps(d)) for d in dicts], n, r)),
        ("deep_copy (json)", best_rate(lambda: [dec(t.encode(p), core_v1.Pod) for p in typed], n, r), None),
        ("copy.deepcopy (-> deep_copy)", best_rate(lambda: [copy.deepcopy(p) for p in typed], n, r),
         best_rate(lambda: [copy.deepcopy(d) for d in dicts], n, r)),
        ("from_dict (dict -> Struct)", best_rate(lambda: [t.from_dict(d, core_v1.Pod) for d in dicts], n, r), None),
        ("to_dict (Struct -> dict)", best_rate(lambda: [t.to_dict(p) for p in typed], n, r), None),
    ]
    print(f"{n} pods, {sum(map(len, blobs)) // n} B JSON each; pods/s, best of {r}")
    print(f"{'operation':30} {'typed Struct':>13} {'orjson dict':>13}")
    for name, typed_rate, dict_rate in rows:
        other = f"{dict_rate:13,.0f}" if dict_rate else f"{'-':>13}"
        print(f"{name:30} {typed_rate:13,.0f} {other}")

if __name__ == "__main__":
    main()
