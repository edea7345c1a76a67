"""ResourceQuota through a real cluster and the real kubectl: admission refuses what is over the
quota with upstream's messages, the ReplicaSet reports ReplicaFailure/FailedCreate, `kubectl
describe quota` prints Used/Hard, and status.used follows creates, deletes and a raised quota.

Upstream: the ResourceQuota admission plugin (plugin/pkg/admission/resourcequota), the resource
quota controller (pkg/controller/resourcequota), the ReplicaSet controller's FailedCreate
(pkg/controller/replicaset) and kubectl's ResourceQuotaDescriber.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually

NS = "quota"


def quota(pods: int, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": NS},
            "spec": {"hard": {"pods": str(pods), "requests.cpu": cpu, "limits.memory": memory}}}


def pod(name: str, *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}]}}


SMALL = {"requests": {"cpu": "100m"}, "limits": {"memory": "64Mi"}}


def used(cluster: Cluster) -> dict[str, str]:
    return cluster.get_json("resourcequota", "compute", "-n", NS).get("status", {}).get("used", {})


def used_is(cluster: Cluster, want: dict[str, str]) -> Any:
    return eventually(lambda: used(cluster) == want, f"status.used == {want}")


@pytest.fixture(scope="module")
def q(cluster: Cluster) -> Iterator[Cluster]:
    cluster.kubectl("create", "namespace", NS)
    cluster.apply_yaml(quota(pods=2))
    used_is(cluster, {"pods": "0", "requests.cpu": "0", "limits.memory": "0"})
    yield cluster


def test_pod_without_the_quotad_compute_resources_is_refused(q: Cluster) -> None:
    res = q.kubectl("apply", "-f", "-", input=_yaml(pod("bare")), check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == ('Error from server (Forbidden): error when creating "STDIN": pods "bare" is '
                                  "forbidden: failed quota: compute: must specify limits.memory for: app; "
                                  "requests.cpu for: app")


def test_pods_over_the_quota_are_refused_with_upstreams_message(q: Cluster) -> None:
    q.kubectl("apply", "-f", "-", input=_yaml(pod("p1", **SMALL)))
    q.kubectl("run", "p2", "-n", NS, "--image=nginx", "--overrides",
              '{"spec":{"containers":[{"name":"p2","image":"nginx","resources":'
              '{"requests":{"cpu":"100m"},"limits":{"memory":"64Mi"}}}]}}')
    used_is(q, {"pods": "2", "requests.cpu": "200m", "limits.memory": "128Mi"})
    res = q.kubectl("run", "p3", "-n", NS, "--image=nginx", "--overrides",
                    '{"spec":{"containers":[{"name":"p3","image":"nginx","resources":'
                    '{"requests":{"cpu":"100m"},"limits":{"memory":"64Mi"}}}]}}', check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == ('Error from server (Forbidden): pods "p3" is forbidden: exceeded quota: compute, '
                                  "requested: pods=1, used: pods=2, limited: pods=2")


def test_describe_quota_prints_used_and_hard(q: Cluster) -> None:
    out = q.kubectl("describe", "quota", "compute", "-n", NS).stdout
    rows = [line.split() for line in out.splitlines()]
    assert ["Name:", "compute"] in rows and ["Namespace:", NS] in rows
    assert ["Resource", "Used", "Hard"] in rows
    body = rows[rows.index(["Resource", "Used", "Hard"]) + 2:]
    assert body == [["limits.memory", "128Mi", "1Gi"], ["pods", "2", "2"], ["requests.cpu", "200m", "1"]]


def test_deployment_over_the_quota_reports_replica_failure_then_recovers(q: Cluster) -> None:
    q.kubectl("delete", "pod", "p1", "p2", "-n", NS, "--wait=false")
    used_is(q, {"pods": "0", "requests.cpu": "0", "limits.memory": "0"})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
                  "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "app", "image": "nginx",
                                                                 "resources": SMALL}]}}}}
    q.apply_yaml(deployment)

    def failing_rs() -> Any:
        for rs in q.get_json("replicasets", "-n", NS, "-l", "app=web")["items"]:
            for c in rs.get("status", {}).get("conditions", []):
                if c["type"] == "ReplicaFailure":
                    return rs, c
        return None

    rs, cond = eventually(failing_rs, "the ReplicaSet's ReplicaFailure condition")
    name = rs["metadata"]["name"]
    assert cond["status"] == "True" and cond["reason"] == "FailedCreate"
    # ResourceQuota validates after the store generated the name (BeforeCreate, then createValidation).
    assert re.fullmatch(rf'pods "{name}-[a-z0-9]{{5}}" is forbidden: exceeded quota: compute, requested: pods=1, '
                        r"used: pods=2, limited: pods=2", cond["message"]), cond["message"]
    assert len(q.get_json("pods", "-n", NS, "-l", "app=web")["items"]) == 2
    used_is(q, {"pods": "2", "requests.cpu": "200m", "limits.memory": "128Mi"})

    events = q.get_json("events", "-n", NS, "--field-selector", f"involvedObject.name={name},reason=FailedCreate")
    assert events["items"], "a FailedCreate event on the ReplicaSet"
    ev = events["items"][0]
    assert ev["type"] == "Warning" and ev["source"]["component"] == "replicaset-controller"
    assert re.fullmatch(rf'Error creating: pods "{name}-[a-z0-9]{{5}}" is forbidden: exceeded quota: compute, requested: '
                        r"pods=1, used: pods=2, limited: pods=2", ev["message"]), ev["message"]

    q.apply_yaml(quota(pods=10))
    eventually(lambda: q.get_json("resourcequota", "compute", "-n", NS)["status"].get("hard") ==
               {"pods": "10", "requests.cpu": "1", "limits.memory": "1Gi"}, "status.hard following spec.hard")
    eventually(lambda: len(q.get_json("pods", "-n", NS, "-l", "app=web")["items"]) == 4,
               "the ReplicaSet creating the rest once the quota allows")
    eventually(lambda: not failing_rs(), "the ReplicaFailure condition removed")
    used_is(q, {"pods": "4", "requests.cpu": "400m", "limits.memory": "256Mi"})

    q.kubectl("scale", "deployment", "web", "-n", NS, "--replicas=1")
    used_is(q, {"pods": "1", "requests.cpu": "100m", "limits.memory": "64Mi"})
    q.kubectl("delete", "deployment", "web", "-n", NS)
    used_is(q, {"pods": "0", "requests.cpu": "0", "limits.memory": "0"})


def _yaml(doc: dict[str, Any]) -> str:
    import yaml
    return yaml.safe_dump(doc)


def test_object_count_and_service_quotas(q: Cluster) -> None:
    q.kubectl("create", "namespace", "counts")
    q.kubectl("create", "quota", "objects", "-n", "counts",
              "--hard=count/deployments.apps=1,services=2,services.nodeports=1,configmaps=3,secrets=10")
    eventually(lambda: q.get_json("resourcequota", "objects", "-n", "counts").get("status", {}).get("used"),
               "the controller's first status")
    q.kubectl("create", "deployment", "a", "--image=nginx", "-n", "counts")
    res = q.kubectl("create", "deployment", "b", "--image=nginx", "-n", "counts", check=False)
    assert res.returncode == 1 and res.stderr.strip() == (
        'error: failed to create deployment: deployments.apps "b" is forbidden: exceeded quota: objects, '
        "requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1")
    q.kubectl("create", "service", "nodeport", "np1", "--tcp=80:80", "-n", "counts")
    res = q.kubectl("create", "service", "nodeport", "np2", "--tcp=80:80", "-n", "counts", check=False)
    assert res.returncode == 1 and res.stderr.strip() == (
        'error: failed to create NodePort service: services "np2" is forbidden: exceeded quota: objects, '
        "requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1")
    q.kubectl("create", "service", "clusterip", "c1", "--tcp=80:80", "-n", "counts")
    eventually(lambda: q.get_json("resourcequota", "objects", "-n", "counts")["status"]["used"] == {
        "count/deployments.apps": "1", "services": "2", "services.nodeports": "1", "configmaps": "1",
        "secrets": "0"}, "object counts in status.used (configmaps: kube-root-ca.crt)")


def test_scoped_quota_counts_only_its_scope(q: Cluster) -> None:
    q.kubectl("create", "namespace", "scoped")
    q.kubectl("create", "quota", "besteffort", "-n", "scoped", "--hard=pods=1", "--scopes=BestEffort")
    eventually(lambda: q.get_json("resourcequota", "besteffort", "-n", "scoped").get("status", {}).get("used"),
               "the controller's first status")
    q.kubectl("run", "be1", "--image=nginx", "-n", "scoped")
    res = q.kubectl("run", "be2", "--image=nginx", "-n", "scoped", check=False)
    assert res.returncode == 1 and res.stderr.strip() == (
        'Error from server (Forbidden): pods "be2" is forbidden: exceeded quota: besteffort, '
        "requested: pods=1, used: pods=1, limited: pods=1")
    q.kubectl("run", "burstable", "--image=nginx", "-n", "scoped", "--overrides",
              '{"spec":{"containers":[{"name":"burstable","image":"nginx","resources":{"requests":{"cpu":"10m"}}}]}}')
    out = q.kubectl("describe", "quota", "besteffort", "-n", "scoped").stdout
    assert "Scopes:     BestEffort" in out
    assert " * Matches all pods that do not have resource requirements set. These pods have a best effort " \
           "quality of service." in out
