"""ReplicationControllers with the real kubectl: pods made and owned by the RC, status, scale."""
from __future__ import annotations

import pytest

from .cluster import Cluster, eventually, namespace_for_test

RC = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
      "spec": {"replicas": 3, "selector": {"app": "web"},
               "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}


def test_replication_controller_creates_and_scales(cluster: Cluster, request: pytest.FixtureRequest) -> None:
    c = cluster
    ns = namespace_for_test(c, request.node.name)
    c.apply_yaml(RC, "-n", ns)

    def pods() -> list[dict]:
        return [p for p in c.get_json("pods", "-n", ns, "-l", "app=web")["items"]
                if not p["metadata"].get("deletionTimestamp")]
    eventually(lambda: len(pods()) == 3, "three pods")
    rc = c.get_json("rc", "web", "-n", ns)
    for p in pods():
        [ref] = p["metadata"]["ownerReferences"]
        assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == ("v1", "ReplicationController", "web",
                                                                             rc["metadata"]["uid"])
    eventually(lambda: c.get_json("rc", "web", "-n", ns)["status"].get("replicas") == 3, "status.replicas 3")
    c.kubectl("scale", "rc/web", "--replicas=1", "-n", ns)
    eventually(lambda: len(pods()) == 1, "scaled down to one pod")
    events = c.kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.kind=ReplicationController").stdout
    assert "SuccessfulCreate" in events and "SuccessfulDelete" in events, events
