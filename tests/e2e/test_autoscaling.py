"""`kubectl top` and the Horizontal Pod Autoscaler under real kubectl (`kubeplane up --nodes 2`).

The simulated pods' CPU use is their sim.kubeplane.io/cpu-usage annotation (kubelet/
resource_usage.py); patching the Deployment's template changes the load of its pods. The API
server keeps a node's reading 15 s and the HPA syncs every 15 s, so each step is polled for up
to a few minutes; nothing sleeps.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, namespace_for_test, running

SLOW = 240.0        # metrics resolution + HPA sync period + a rollout, on a loaded machine


@pytest.fixture(scope="module")
def kube() -> Iterator[Cluster]:
    yield from running(nodes=2)


@pytest.fixture
def ns(kube: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(kube, request.node.name)


def deployment(name: str, ns: str, replicas: int, cpu_usage: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name},
                                               "annotations": {"sim.kubeplane.io/cpu-usage": cpu_usage,
                                                               "sim.kubeplane.io/memory-usage": "64Mi"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {
                                      "requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}}


def test_top_nodes_and_pods(kube: Cluster, ns: str) -> None:
    service = kube.get_json("apiservice", "v1beta1.metrics.k8s.io")
    assert service["spec"]["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 443}
    assert [(c["type"], c["status"], c["reason"]) for c in service["status"]["conditions"]] == \
        [("Available", "True", "Passed")]
    kube.apply_yaml(deployment("web", ns, 2, "250m"))
    out = eventually(lambda: (lambda r: r.returncode == 0 and r.stdout.count("web-") == 2 and r.stdout)(
        kube.kubectl("top", "pods", "-n", ns, check=False)), "kubectl top pods", timeout=SLOW)
    lines = out.strip().splitlines()
    assert lines[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert all(line.split()[1:] == ["250m", "64Mi"] for line in lines[1:]), out
    out = kube.kubectl("top", "pods", "-n", ns, "--containers").stdout
    assert out.strip().splitlines()[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert all(line.split()[1:] == ["c", "250m", "64Mi"] for line in out.strip().splitlines()[1:]), out
    nodes = kube.kubectl("top", "nodes").stdout.strip().splitlines()
    assert nodes[0].split()[:3] == ["NAME", "CPU(cores)", "CPU(%)"] and len(nodes) == 3, nodes
    metrics = json.loads(kube.kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods").stdout)
    assert {m["metadata"]["labels"]["app"] for m in metrics["items"]} == {"web"}
    assert all(m["window"] == "15s" for m in metrics["items"])


def test_hpa_scales_a_deployment_up_and_down(kube: Cluster, ns: str) -> None:
    kube.apply_yaml(deployment("load", ns, 1, "20m"))
    kube.apply_yaml({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "load", "namespace": ns},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "load"},
                 "minReplicas": 1, "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                     "type": "Utilization", "averageUtilization": 50}}}],
                 "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}})

    def hpa() -> dict[str, Any]:
        return dict(kube.get_json("hpa", "load", "-n", ns))

    eventually(lambda: any(c["type"] == "ScalingActive" and c["status"] == "True"
                           for c in hpa().get("status", {}).get("conditions") or []), "metrics read", timeout=SLOW)
    # The load rises: 200m of 100m requested is 200%, 4x the target -> the max, 3.
    kube.kubectl("patch", "deployment", "load", "-n", ns, "--type", "merge", "-p", json.dumps(
        {"spec": {"template": {"metadata": {"annotations": {"sim.kubeplane.io/cpu-usage": "200m"}}}}}))
    eventually(lambda: kube.get_json("deployment", "load", "-n", ns)["spec"]["replicas"] == 3, "scaled up to 3",
               timeout=SLOW)
    events = kube.kubectl("get", "events", "-n", ns, "--field-selector", "reason=SuccessfulRescale").stdout
    assert "New size: 3; reason: cpu resource utilization (percentage of request) above target" in events
    # The load falls: 10m is 10% -> the min, 1 (no down window).
    kube.kubectl("patch", "deployment", "load", "-n", ns, "--type", "merge", "-p", json.dumps(
        {"spec": {"template": {"metadata": {"annotations": {"sim.kubeplane.io/cpu-usage": "10m"}}}}}))
    eventually(lambda: kube.get_json("deployment", "load", "-n", ns)["spec"]["replicas"] == 1, "scaled down to 1",
               timeout=SLOW)
    status = hpa()["status"]
    assert status["desiredReplicas"] == 1 and status["lastScaleTime"]


def test_kubectl_autoscale(kube: Cluster, ns: str) -> None:
    kube.apply_yaml(deployment("auto", ns, 1, "20m"))
    kube.kubectl("autoscale", "deployment", "auto", "-n", ns, "--cpu-percent=50", "--min=1", "--max=5")
    h = kube.get_json("hpa.v2.autoscaling", "auto", "-n", ns)
    assert h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50
    assert (h["spec"]["minReplicas"], h["spec"]["maxReplicas"]) == (1, 5)
    # until the metrics are read, currentMetrics holds an empty status (upstream's MetricStatus{})
    status = eventually(lambda: (lambda s: (s.get("currentMetrics") or [{}])[0].get("resource") and s)(
        kube.get_json("hpa.v2.autoscaling", "auto", "-n", ns).get("status") or {}), "status", timeout=SLOW)
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 20
    assert status["currentReplicas"] == 1
