"""`kubectl drain` of a simulated node running a PodDisruptionBudget-protected Deployment, with the
real kubectl against `kubeplane up --nodes 2`: the evictions respect the budget (kubectl is told
429 and retries), the drain completes once the replacements are ready elsewhere, and the ready
replicas never fall below the budget meanwhile. Plus the eviction edge cases through kubectl.
"""
from __future__ import annotations

import collections
import json
import re
import threading
from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, running, namespace_for_test

NODES = ("kubeplane-node-0", "kubeplane-node-1")
REPLICAS = 6
MIN_AVAILABLE = 5            # one disruption at a time: evictions of a node's pods are refused in turn
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=2)


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.name)


def deployment(name: str, ns: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"terminationGracePeriodSeconds": 1,
                                           "containers": [{"name": "c", "image": "nginx"}]}}}}


def pdb(name: str, ns: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}}, **spec}}


def is_ready(pod: Any) -> bool:
    """Ready and not being deleted: what a budget counts as healthy."""
    if pod.metadata.deletion_timestamp:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


class ReadyWatcher:
    """Samples the Deployment's ready pods (official client, ~20/s) while the drain runs."""

    def __init__(self, cluster: Cluster, ns: str, selector: str) -> None:
        from kubernetes import client
        self.api = client.CoreV1Api(cluster.python_client())
        self.ns, self.selector = ns, selector
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            items = self.api.list_namespaced_pod(self.ns, label_selector=self.selector).items
            self.samples.append(sum(1 for p in items if is_ready(p)))
            self._stop.wait(0.05)

    def __enter__(self) -> ReadyWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def placement(c: Cluster, ns: str, selector: str) -> collections.Counter[str]:
    items = c.get_json("pods", "-n", ns, "-l", selector)["items"]
    return collections.Counter(p["spec"].get("nodeName") for p in items
                               if not p["metadata"].get("deletionTimestamp"))


def budget_status(c: Cluster, ns: str, name: str) -> dict[str, Any]:
    return dict(c.get_json("pdb", name, "-n", ns).get("status") or {})


def test_drain_respects_the_budget_and_completes(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(deployment("web", ns, REPLICAS))
    cluster.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout", "60s", timeout=70)
    cluster.apply_yaml(pdb("web", ns, minAvailable=MIN_AVAILABLE))
    eventually(lambda: budget_status(cluster, ns, "web").get("disruptionsAllowed") == REPLICAS - MIN_AVAILABLE,
               "the disruption controller's status of the budget")
    status = budget_status(cluster, ns, "web")
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (6, 5, 6)
    # Drain the node with the most of the Deployment's pods (the scheduler spreads them).
    node, count = placement(cluster, ns, "app=web").most_common(1)[0]
    assert count >= 2, "two pods on the node: the second eviction must wait for the first's replacement"
    other = next(n for n in NODES if n != node)

    with ReadyWatcher(cluster, ns, "app=web") as watcher:
        res = cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s",
                              check=False, timeout=150)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"node/{node} cordoned" in out and f"node/{node} drained" in out
    # kubectl was refused at least once (429) and retried: "error when evicting pods/... (will retry after 5s)".
    assert VIOLATES in out, out
    assert re.search(r'error when evicting pods/"web-[a-z0-9-]+" -n "%s" \(will retry after 5s\)' % ns, out), out
    assert watcher.samples and min(watcher.samples) >= MIN_AVAILABLE, watcher.samples

    assert cluster.get_json("node", node)["spec"].get("unschedulable") is True
    assert placement(cluster, ns, "app=web") == {other: REPLICAS}
    cluster.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout", "60s", timeout=70)
    eventually(lambda: budget_status(cluster, ns, "web").get("currentHealthy") == REPLICAS,
               "the budget healthy again")
    cluster.kubectl("uncordon", node)


def test_dry_run_drain_evicts_nothing(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(deployment("dry", ns, 2))
    cluster.kubectl("rollout", "status", "deployment/dry", "-n", ns, "--timeout", "60s", timeout=70)
    before = {p["metadata"]["name"] for p in cluster.get_json("pods", "-n", ns)["items"]}
    node = next(iter(placement(cluster, ns, "app=dry")))
    res = cluster.kubectl("drain", node, "--ignore-daemonsets", "--dry-run=server", "--timeout=30s", timeout=60)
    assert "(server dry run)" in res.stdout
    after = cluster.get_json("pods", "-n", ns)["items"]
    assert {p["metadata"]["name"] for p in after} == before
    assert not any(p["metadata"].get("deletionTimestamp") for p in after)
    assert not any(c["type"] == "DisruptionTarget" for p in after for c in p["status"].get("conditions") or [])
    assert not cluster.get_json("node", node)["spec"].get("unschedulable")


def evict(c: Cluster, ns: str, name: str) -> Any:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
    return c.kubectl("create", "--raw", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", "-f", "-",
                     input=json.dumps(body), check=False)


def test_eviction_edge_cases(cluster: Cluster, ns: str) -> None:
    # No pod: 404.
    res = evict(cluster, ns, "nope")
    assert res.returncode != 0 and 'pods "nope" not found' in res.stderr
    # No budget: the pod is deleted, marked as the eviction's target on the way.
    cluster.apply_yaml(deployment("free", ns, 1))
    cluster.kubectl("rollout", "status", "deployment/free", "-n", ns, "--timeout", "60s", timeout=70)
    [pod] = cluster.get_json("pods", "-n", ns, "-l", "app=free")["items"]
    res = evict(cluster, ns, pod["metadata"]["name"])
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "code": 201}
    eventually(lambda: pod["metadata"]["uid"] not in {p["metadata"]["uid"] for p in
                                                      cluster.get_json("pods", "-n", ns)["items"]},
               "the evicted pod gone")
    # A budget allowing no disruption (maxUnavailable 0; observed by the controller or not yet): 429.
    cluster.apply_yaml(deployment("held", ns, 1))
    cluster.kubectl("rollout", "status", "deployment/held", "-n", ns, "--timeout", "60s", timeout=70)
    [held] = cluster.get_json("pods", "-n", ns, "-l", "app=held")["items"]
    cluster.apply_yaml(pdb("held", ns, maxUnavailable=0))
    res = evict(cluster, ns, held["metadata"]["name"])
    assert res.returncode != 0 and VIOLATES in res.stderr, res.stderr
    assert held["metadata"]["name"] in {p["metadata"]["name"] for p in cluster.get_json("pods", "-n", ns)["items"]}


def test_legacy_bindings_collection(cluster: Cluster, ns: str) -> None:
    """`kubectl api-resources` lists bindings (create only) and `kubectl create` of a Binding binds
    the pod it names (POST .../bindings, upstream's LegacyBindingREST)."""
    out = cluster.kubectl("api-resources", "--api-group", "", "-o", "wide").stdout
    lines = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert lines["bindings"][:5] == ["bindings", "v1", "true", "Binding", "create"]
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "manual", "namespace": ns},
                        "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "nginx"}]}})
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "manual", "namespace": ns},
               "target": {"apiVersion": "v1", "kind": "Node", "name": NODES[0]}}
    # --validate=false: Binding has no PATCH operation to show fieldValidation support, so kubectl
    # asks whether it is a CRD, and apiextensions.k8s.io is not served yet (its CRD list 404s).
    res = cluster.kubectl("create", "--validate=false", "-f", "-", input=json.dumps(binding))
    assert res.stdout == "status/<unknown> created\n"      # the answer is a Success Status, as upstream's
    assert cluster.get_json("pod", "manual", "-n", ns)["spec"]["nodeName"] == NODES[0]
    eventually(lambda: any(c["type"] == "Ready" and c["status"] == "True" for c in
                           cluster.get_json("pod", "manual", "-n", ns)["status"].get("conditions") or []),
               "the bound pod running on its node")
