"""The service and PVC evaluators and the object-count evaluator. Facts from upstream's
services_test.go (TestServiceEvaluatorUsage), persistent_volume_claims_test.go
(TestPersistentVolumeClaimEvaluatorUsage, TestPersistentVolumeClaimEvaluatorMatchingResources)
and generic/evaluator_test.go."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.quota import resources as q
from kubeplane.quota.evaluator.core import IGNORED_RESOURCES, new_registry
from kubeplane.quota.evaluator.core.persistent_volume_claims import PersistentVolumeClaimEvaluator
from kubeplane.quota.evaluator.core.services import ServiceEvaluator, quota_service_type
from kubeplane.quota.generic import ObjectCountEvaluator, UsageStatsOptions


def svc(kind: str = "", ports: int = 1, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"ports": [{"port": 80 + i} for i in range(ports)], **spec}
    if kind:
        s["type"] = kind
    return {"metadata": {"name": "s"}, "spec": s}


BASE = {"services": "1", "count/services": "1"}


@pytest.mark.parametrize("s, expected", [
    pytest.param(svc(), {**BASE, "services.loadbalancers": "0", "services.nodeports": "0"}, id="clusterip"),
    pytest.param(svc("ClusterIP"), {**BASE, "services.loadbalancers": "0", "services.nodeports": "0"}, id="clusterip-typed"),
    pytest.param(svc("NodePort", 1), {**BASE, "services.loadbalancers": "0", "services.nodeports": "1"}, id="nodeports"),
    pytest.param(svc("NodePort", 2), {**BASE, "services.loadbalancers": "0", "services.nodeports": "2"},
                 id="multi-nodeports"),
    pytest.param(svc("LoadBalancer", 1), {**BASE, "services.loadbalancers": "1", "services.nodeports": "1"},
                 id="loadbalancer"),
    pytest.param(svc("LoadBalancer", 2), {**BASE, "services.loadbalancers": "1", "services.nodeports": "2"},
                 id="loadbalancer_2_ports"),
    pytest.param({"metadata": {}, "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": False,
                                           "ports": [{"port": 80}, {"port": 81, "nodePort": 31000}]}},
                 {**BASE, "services.loadbalancers": "1", "services.nodeports": "1"},
                 id="loadbalancer_with_explicit_nodeport_only"),
])
def test_service_usage(s: dict[str, Any], expected: dict[str, str]) -> None:
    assert q.to_json(ServiceEvaluator().usage(s)) == expected


def test_service_matching_resources_and_type() -> None:
    got = ServiceEvaluator().matching_resources(["services", "services.nodeports", "count/services", "pods"])
    assert got == ["count/services", "services", "services.nodeports"]
    assert quota_service_type(svc("NodePort")) == "NodePort" and quota_service_type(svc("ClusterIP")) == ""


def pvc(storage: str | None = "10Gi", storage_class: str = "", annotations: dict[str, str] | None = None,
        allocated: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage} if storage else {}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    p: dict[str, Any] = {"metadata": {"name": "c", "annotations": annotations or {}}, "spec": spec}
    if allocated:
        p["status"] = {"allocatedResources": {"storage": allocated}}
    return p


GOLD = "gold.storageclass.storage.k8s.io/"


@pytest.mark.parametrize("c, expected", [
    pytest.param(pvc(), {"requests.storage": "10Gi", "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1"},
                 id="pvc-usage"),
    pytest.param(pvc(storage_class="gold"),
                 {"requests.storage": "10Gi", "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                  GOLD + "requests.storage": "10Gi", GOLD + "persistentvolumeclaims": "1"}, id="pvc-usage-by-class"),
    pytest.param(pvc(annotations={"volume.beta.kubernetes.io/storage-class": "gold"}, storage_class="silver"),
                 {"requests.storage": "10Gi", "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                  GOLD + "requests.storage": "10Gi", GOLD + "persistentvolumeclaims": "1"},
                 id="beta-annotation-wins"),
    pytest.param(pvc("1m"), {"requests.storage": "1", "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1"},
                 id="pvc-usage-rounded"),
    pytest.param(pvc("10Gi", allocated="20Gi"),
                 {"requests.storage": "20Gi", "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1"},
                 id="pvc-usage-higher-allocated"),
    pytest.param(pvc("10Gi", allocated="5Gi"),
                 {"requests.storage": "10Gi", "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1"},
                 id="pvc-usage-lower-allocated"),
    pytest.param(pvc(None), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1"}, id="no-request"),
])
def test_pvc_usage(c: dict[str, Any], expected: dict[str, str]) -> None:
    assert q.to_json(PersistentVolumeClaimEvaluator().usage(c)) == expected


def test_pvc_matching_resources() -> None:
    names = ["count/persistentvolumeclaims", "requests.storage", "persistentvolumeclaims",
             GOLD + "requests.storage", GOLD + "persistentvolumeclaims", "requests.cpu", GOLD + "cpu", "pods"]
    assert PersistentVolumeClaimEvaluator().matching_resources(names) == names[:5]


@dataclass
class Req:
    operation: str
    subresource: str = ""
    obj: dict[str, Any] | None = None
    old_obj: dict[str, Any] | None = None


def test_handles() -> None:
    pe = new_registry().get("", "pods")
    assert pe is not None
    assert pe.handles(Req("CREATE")) and not pe.handles(Req("UPDATE"))
    assert pe.handles(Req("UPDATE", "resize")) and not pe.handles(Req("CREATE", "binding"))
    assert ServiceEvaluator().handles(Req("UPDATE")) and not ServiceEvaluator().handles(Req("DELETE"))
    pvce = PersistentVolumeClaimEvaluator()
    assert pvce.handles(Req("UPDATE")) and not pvce.handles(Req("UPDATE", "status", pvc(), pvc()))
    assert pvce.handles(Req("UPDATE", "status", pvc(allocated="20Gi"), pvc()))
    oc = ObjectCountEvaluator("apps", "deployments")
    assert oc.handles(Req("CREATE")) and not oc.handles(Req("UPDATE")) and not oc.handles(Req("CREATE", "status"))


def test_object_count_evaluator() -> None:
    oc = ObjectCountEvaluator("", "secrets", "secrets")
    assert q.to_json(oc.usage({})) == {"count/secrets": "1", "secrets": "1"}
    assert oc.matching_resources(["secrets", "count/secrets", "pods"]) == ["count/secrets", "secrets"]
    used = oc.usage_stats(UsageStatsOptions("ns", resources=("count/secrets",)), [{}, {}, {}])
    assert q.to_json(q.mask(used, ["count/secrets"])) == {"count/secrets": "3"}


def test_registry_makes_count_evaluators_on_demand() -> None:
    r = new_registry()
    assert [e.group_resource() for e in r.for_names(["count/deployments.apps", "count/widgets.example.com"])] == [
        ("apps", "deployments"), ("example.com", "widgets")]
    assert r.for_names(["count/events"]) == [] and ("", "events") in IGNORED_RESOURCES
    assert r.get_or_count("batch", "jobs").matching_resources(["count/jobs.batch"]) == ["count/jobs.batch"]
