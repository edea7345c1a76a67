"""The ReplicaSet controller and the garbage collector under real kubectl (`kubeplane up --nodes 0`).

Pods are marked Ready through their /status subresource, as upstream's integration tests do.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from .cluster import Cluster, eventually, namespace_for_test





def replica_set(name: str, replicas: int, ns: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def pods(c: Cluster, ns: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["pods", "-n", ns] + (["-l", selector] if selector else [])
    return c.get_json(*args)["items"]


def active(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def mark_ready(c: Cluster, ns: str, name: str) -> None:
    status = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    c.kubectl("patch", "pod", name, "-n", ns, "--subresource", "status", "--type", "merge", "-p", json.dumps(status))


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.name)


def test_replicaset_creates_pods_and_scales_both_ways(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(replica_set("web", 3, ns))
    items = eventually(lambda: len(pods(cluster, ns)) == 3 and pods(cluster, ns), "3 pods")
    for p in items:
        assert p["metadata"]["generateName"] == "web-"
        ref = p["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == \
            ("ReplicaSet", "web", True, True)
    ready = sorted(p["metadata"]["name"] for p in items)[:2]
    for name in ready:
        mark_ready(cluster, ns, name)
    eventually(lambda: cluster.get_json("rs", "web", "-n", ns)["status"].get("readyReplicas") == 2, "2 ready")
    cluster.kubectl("scale", "rs", "web", "-n", ns, "--replicas", "2")
    # The not-ready pod goes first (deletion ranking: not Ready before Ready).
    left = eventually(lambda: (lambda a: len(a) == 2 and a)(active(pods(cluster, ns))), "2 pods left")
    assert sorted(p["metadata"]["name"] for p in left) == ready
    cluster.kubectl("scale", "rs", "web", "-n", ns, "--replicas", "4")
    eventually(lambda: len(active(pods(cluster, ns))) == 4, "4 pods")
    st = eventually(lambda: (lambda s: s.get("replicas") == 4 and s)(cluster.get_json("rs", "web", "-n", ns)["status"]),
                    "status.replicas 4")
    assert st["observedGeneration"] == 3 and st["readyReplicas"] == 2 and st["availableReplicas"] == 2


def test_bare_pod_is_adopted_and_relabeled_pod_released(cluster: Cluster, ns: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "orphan", "namespace": ns, "labels": {"app": "adopt"}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    cluster.apply_yaml(pod)
    cluster.apply_yaml(replica_set("adopt", 1, ns))
    owner = eventually(lambda: cluster.get_json("pod", "orphan", "-n", ns)["metadata"].get("ownerReferences"),
                       "the bare pod to be adopted")
    assert owner[0]["name"] == "adopt" and owner[0]["controller"] is True
    assert [p["metadata"]["name"] for p in pods(cluster, ns)] == ["orphan"]      # adopted, none created
    cluster.kubectl("label", "pod", "orphan", "-n", ns, "app=elsewhere", "--overwrite")
    eventually(lambda: not cluster.get_json("pod", "orphan", "-n", ns)["metadata"].get("ownerReferences"),
               "the relabeled pod to be released")
    eventually(lambda: len(pods(cluster, ns, "app=adopt")) == 1, "a replacement pod")


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_delete_replicaset_cascade_modes(cluster: Cluster, ns: str, cascade: str) -> None:
    cluster.apply_yaml(replica_set("gc", 2, ns))
    eventually(lambda: len(pods(cluster, ns)) == 2, "2 pods")
    cluster.kubectl("delete", "rs", "gc", "-n", ns, f"--cascade={cascade}", timeout=60)
    assert cluster.kubectl("get", "rs", "gc", "-n", ns, check=False).returncode != 0
    if cascade == "orphan":
        left = eventually(lambda: (lambda ps: all(not p["metadata"].get("ownerReferences") for p in ps) and ps)(
            pods(cluster, ns)), "orphaned pods without ownerReferences")
        assert len(left) == 2
    else:
        eventually(lambda: pods(cluster, ns) == [], "pods to be collected")


def test_deleting_a_namespace_empties_it(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "doomed")
    cluster.apply_yaml(replica_set("r", 2, "doomed"))
    cluster.kubectl("create", "configmap", "cm", "-n", "doomed", "--from-literal", "a=b")
    eventually(lambda: len(pods(cluster, "doomed")) == 2, "2 pods")
    cluster.kubectl("delete", "namespace", "doomed", timeout=90)
    res = cluster.kubectl("get", "namespace", "doomed", check=False)
    assert res.returncode != 0 and 'namespaces "doomed" not found' in res.stderr
    raw = json.loads(cluster.kubectl("get", "--raw", "/api/v1/pods").stdout)
    assert [p for p in raw["items"] if p["metadata"]["namespace"] == "doomed"] == []
