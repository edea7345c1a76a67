"""Request-body decoding: µs per `decode.decode_body` (JSON, fieldValidation Warn, the default).

Run:  .venv/bin/python benchmarks/decode_bench.py [-n 20000] [--repeat 7]

Bodies: the pod benchmarks/api_bench.py creates (253 bytes), a Deployment as `kubectl apply`
sends it (~1 KB), and a pod as a kubelet's PUT would send it back, defaulted and with status
(~2.5 KB). Each figure is the best of --repeat timings of -n decodes (the body is parsed,
type-checked, pruned of unknown fields and nulls, as the create handler does). To compare with
another checkout, run with PYTHONPATH=<that checkout>/src.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import timeit
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import api_bench

from kubeplane.api import decode

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
             "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{
                              "name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80, "name": "http"}],
                              "env": [{"name": "MODE", "value": "prod"},
                                      {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                              "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                            "limits": {"cpu": "500m", "memory": "128Mi"}},
                              "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5}}]}}}}

STATUS_POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-5d9c7b8f6-abcde", "namespace": "default", "uid": "0b6f3c52-8d5e-4f7a-9c1d-2e3f4a5b6c7d",
                 "resourceVersion": "1234", "creationTimestamp": "2026-01-01T00:00:00Z",
                 "labels": {"app": "web", "pod-template-hash": "5d9c7b8f6"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c7b8f6",
                                      "uid": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "controller": True,
                                      "blockOwnerDeletion": True}]},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                             "ports": [{"containerPort": 80, "protocol": "TCP"}],
                             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
             "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
             "nodeName": "node-1", "securityContext": {}, "schedulerName": "default-scheduler",
             "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 300},
                             {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 300}],
             "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"},
    "status": {"phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.1", "podIP": "10.244.0.5",
               "startTime": "2026-01-01T00:00:01Z",
               "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:02Z"}
                              for t in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready",
                                        "PodScheduled")],
               "containerStatuses": [{"name": "web", "ready": True, "started": True, "restartCount": 0,
                                      "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:0",
                                      "containerID": "sim://0123456789abcdef",
                                      "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}},
                                      "lastState": {}}]}}

BODIES = {
    "api_bench pod": ("io.k8s.api.core.v1.Pod", "Pod", "v1", api_bench.pod("p-1-1")),
    "kubectl Deployment": ("io.k8s.api.apps.v1.Deployment", "Deployment", "v1", DEPLOYMENT),
    "pod with status": ("io.k8s.api.core.v1.Pod", "Pod", "v1", STATUS_POD),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    for name, (def_name, kind, version, obj) in BODIES.items():
        body = json.dumps(obj).encode()

        def one(body: bytes = body, def_name: str = def_name, kind: str = kind, version: str = version) -> None:
            decode.decode_body(body, def_name, kind=kind, version=version)

        best = min(timeit.repeat(one, number=args.n, repeat=args.repeat)) / args.n
        print(f"{name} ({len(body)} bytes): {best * 1e6:.2f} µs per decode_body")


if __name__ == "__main__":
    main()
