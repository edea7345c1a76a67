"""The pod garbage collector under `kubeplane up --terminated-pod-gc-threshold 2` with real
kubectl: finished pods beyond the threshold go, oldest first; a pod bound to a node that was
deleted is force-deleted once the node has stayed gone through its quarantine (upstream's 40 s,
on upstream's 20 s GC period: these tests wait in real time, up to a few passes).
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .cluster import Cluster, eventually, running

GC_PASSES = 150          # seconds: a quarantine and a few 20 s passes, on a loaded machine


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=1, extra_args=("--terminated-pod-gc-threshold", "2"))


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}], **spec}}


def phases(c: Cluster) -> dict[str, str]:
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in c.get_json("pods")["items"]}


def force_deleted(c: Cluster, reason: str) -> float:
    text = c.kubectl("get", "--raw", "/metrics").stdout
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "pod_gc_collector_force_delete_pods_total" and s.labels == {"namespace": "default",
                                                                                      "reason": reason}:
                return float(s.value)
    return 0.0


def test_finished_pods_beyond_the_threshold_are_collected_oldest_first(cluster: Cluster) -> None:
    c = cluster
    for name in ("old-0", "old-1"):
        c.apply_yaml(pod(name))
    eventually(lambda: all(phases(c).get(n) == "Succeeded" for n in ("old-0", "old-1")), "the old pods finish",
               timeout=60)
    # created after the old ones finished: at least a second younger, as creation times go
    for name in ("new-0", "new-1"):
        c.apply_yaml(pod(name))
    eventually(lambda: {n for n, ph in phases(c).items() if ph in ("Succeeded", "Failed")} == {"new-0", "new-1"},
               "the two oldest finished pods collected, the threshold's two kept", timeout=GC_PASSES)
    assert force_deleted(c, "terminated") >= 2


def test_a_deleted_nodes_pods_are_force_deleted(cluster: Cluster) -> None:
    c = cluster
    c.apply_yaml({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "ghost"}})
    c.apply_yaml(pod("orphan", nodeName="ghost", restartPolicy="Always",
                     tolerations=[{"operator": "Exists"}]))       # the node has no kubelet: never ready
    assert "orphan" in phases(c)
    c.kubectl("delete", "node", "ghost")
    eventually(lambda: "orphan" not in phases(c), "the orphaned pod force-deleted", timeout=GC_PASSES)
    assert force_deleted(c, "orphaned") == 1
    assert c.kubectl("get", "pod", "orphan", check=False).stderr == 'Error from server (NotFound): pods "orphan" not found\n'
