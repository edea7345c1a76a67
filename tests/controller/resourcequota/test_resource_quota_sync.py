"""The resource quota controller's decisions as tables: which queue a quota goes to, the status a
recalculation writes, which quotas a give-back replenishes, which updates give usage back, and
the usage calculation over listed objects. Facts from upstream's
resource_quota_controller_test.go (TestSyncResourceQuota, TestAddQuota) and update_filter."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.controller.resourcequota.resource_quota_monitor import update_gives_back
from kubeplane.controller.resourcequota.sync import needs_usage_calculation, quota_status, quotas_to_replenish
from kubeplane.quota import resources as q
from kubeplane.quota.evaluator.core import new_registry
from kubeplane.quota.usage import calculate_usage
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


def rq(spec_hard: dict[str, str] | None, hard: dict[str, str] | None = None, used: dict[str, str] | None = None,
       **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if hard is not None:
        status["hard"] = hard
    if used is not None:
        status["used"] = used
    return {"metadata": {"name": "quota", "namespace": "testing"}, "spec": {"hard": spec_hard or {}, **spec},
            "status": status}


@pytest.mark.parametrize("quota, priority", [
    pytest.param(rq({"cpu": "4"}, {"cpu": "4"}, {"cpu": "0"}), False, id="no status changes"),
    pytest.param(rq({"cpu": "4"}, None, None), True, id="no status"),
    pytest.param(rq({"cpu": "4", "memory": "1Gi"}, {"cpu": "4"}, {"cpu": "0"}), True, id="new hard limit"),
    pytest.param(rq({"cpu": "4000m"}, {"cpu": "4"}, {"cpu": "0"}), False, id="same hard numerically"),
    pytest.param(rq({"cpu": "4", "pods": "5"}, {"cpu": "4", "pods": "5"}, {"cpu": "0"}), True,
                 id="usage missing for a tracked resource"),
    pytest.param(rq({"foo.example.com/bar": "5"}, {"foo.example.com/bar": "5"}, {}), False,
                 id="usage missing for something nobody measures"),
    pytest.param(rq({"count/deployments.apps": "5"}, {"count/deployments.apps": "5"}, {}), True,
                 id="usage missing for an object count"),
])
def test_add_quota_queue(quota: dict[str, Any], priority: bool) -> None:
    assert needs_usage_calculation(quota, new_registry()) is priority


@pytest.mark.parametrize("quota, observed, status, dirty", [
    pytest.param(rq({"cpu": "3", "memory": "100Gi", "pods": "5"}), {"cpu": "200m", "memory": "2Gi", "pods": "2"},
                 {"hard": {"cpu": "3", "memory": "100Gi", "pods": "5"}, "used": {"cpu": "200m", "memory": "2Gi", "pods": "2"}},
                 True, id="first sync"),
    pytest.param(rq({"cpu": "3"}, {"cpu": "3"}, {"cpu": "200m"}), {"cpu": "200m"},
                 {"hard": {"cpu": "3"}, "used": {"cpu": "200m"}}, False, id="nothing changed"),
    pytest.param(rq({"cpu": "3"}, {"cpu": "3"}, {"cpu": "0.2"}), {"cpu": "200m"},
                 {"hard": {"cpu": "3"}, "used": {"cpu": "200m"}}, False, id="same usage numerically"),
    pytest.param(rq({"cpu": "4"}, {"cpu": "3"}, {"cpu": "200m"}), {"cpu": "200m"},
                 {"hard": {"cpu": "4"}, "used": {"cpu": "200m"}}, True, id="hard changed"),
    pytest.param(rq({"pods": "5"}, {"pods": "5", "cpu": "1"}, {"pods": "1", "cpu": "0"}), {"pods": "0"},
                 {"hard": {"pods": "5"}, "used": {"pods": "0"}}, True, id="resource dropped from hard"),
    pytest.param(rq({"pods": "5", "cpu": "1"}, {"pods": "5", "cpu": "1"}, {"pods": "1", "cpu": "500m"}), {"pods": "3"},
                 {"hard": {"pods": "5", "cpu": "1"}, "used": {"pods": "3", "cpu": "500m"}}, True,
                 id="a resource not observed keeps its value"),
])
def test_quota_status(quota: dict[str, Any], observed: dict[str, str], status: dict[str, Any], dirty: bool) -> None:
    hard = q.parse_list(quota["spec"]["hard"])
    assert quota_status(quota, hard, q.parse_list(observed)) == (status, dirty)


def test_quotas_to_replenish() -> None:
    pods = new_registry().get("", "pods")
    assert pods is not None
    quotas = [rq({}, {"pods": "1"}, {}) | {"metadata": {"name": "a"}},
              rq({}, {"services": "1"}, {}) | {"metadata": {"name": "b"}},
              rq({}, {"requests.cpu": "1"}, {}) | {"metadata": {"name": "c"}},
              rq({"pods": "1"}, None, None) | {"metadata": {"name": "d"}}]
    assert [x["metadata"]["name"] for x in quotas_to_replenish(quotas, pods)] == ["a", "c"]


def typed_pod(phase: str = "Running", deleted: float | None = None, grace: int | None = None) -> core_v1.Pod:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if deleted is not None:
        meta["deletionTimestamp"] = rfc3339(deleted)
        meta["deletionGracePeriodSeconds"] = grace
    return types.from_dict({"metadata": meta, "spec": {"containers": [{"name": "c", "image": "x"}]},
                            "status": {"phase": phase}}, core_v1.Pod)


def typed_svc(kind: str) -> core_v1.Service:
    return types.from_dict({"metadata": {"name": "s", "namespace": "ns"}, "spec": {"type": kind}}, core_v1.Service)


def typed_pvc(allocated: str | None) -> core_v1.PersistentVolumeClaim:
    status = {"allocatedResources": {"storage": allocated}} if allocated else {}
    return types.from_dict({"metadata": {"name": "c", "namespace": "ns"}, "spec": {}, "status": status},
                           core_v1.PersistentVolumeClaim)


@pytest.mark.parametrize("resource, old, new, gives_back", [
    pytest.param("pods", typed_pod("Running"), typed_pod("Succeeded"), True, id="pod finished"),
    pytest.param("pods", typed_pod("Running"), typed_pod("Failed"), True, id="pod failed"),
    pytest.param("pods", typed_pod("Pending"), typed_pod("Running"), False, id="pod started"),
    pytest.param("pods", typed_pod("Running"), typed_pod("Running"), False, id="status heartbeat"),
    pytest.param("pods", typed_pod("Running"), typed_pod("Running", NOW - 100, 30), True, id="pod past its grace"),
    pytest.param("pods", typed_pod("Running"), typed_pod("Running", NOW, 30), False, id="pod within its grace"),
    pytest.param("pods", typed_pod("Succeeded"), typed_pod("Succeeded", NOW - 100, 0), False, id="already given back"),
    pytest.param("services", typed_svc("NodePort"), typed_svc("ClusterIP"), True, id="no longer a node port"),
    pytest.param("services", typed_svc("ClusterIP"), typed_svc("ClusterIP"), False, id="service unchanged"),
    pytest.param("persistentvolumeclaims", typed_pvc("10Gi"), typed_pvc("20Gi"), True, id="pvc resized"),
    pytest.param("persistentvolumeclaims", typed_pvc("10Gi"), typed_pvc("10Gi"), False, id="pvc unchanged"),
    pytest.param("configmaps", None, None, False, id="counts only change on delete"),
])
def test_update_gives_back(resource: str, old: Any, new: Any, gives_back: bool) -> None:
    assert update_gives_back(resource, old, new, NOW) is gives_back
    # the monitor passes its clock's now function: read only for a pod whose phase or deletion changed
    reads: list[float] = []

    def now() -> float:
        reads.append(NOW)
        return NOW
    assert update_gives_back(resource, old, new, now) is gives_back
    if resource != "pods" or (old.status.phase == new.status.phase
                              and old.metadata.deletion_timestamp == new.metadata.deletion_timestamp):
        assert reads == []


def pod(name: str, cpu: str, phase: str = "Running", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "testing"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu},
                                                                            "limits": {"cpu": cpu}}}], **spec},
            "status": {"phase": phase}}


async def test_calculate_usage_over_listed_objects() -> None:
    """TestSyncResourceQuota's "pods" case: running pods charged, a finished one only counted."""
    objects = {("", "pods"): [pod("a", "100m"), pod("b", "1"), pod("c", "2", phase="Succeeded")],
               ("", "services"): [{"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 1}]}}],
               ("apps", "deployments"): [{}, {}]}
    listed: list[tuple[str, str, str]] = []

    async def list_items(group: str, resource: str, ns: str) -> list[dict[str, Any]]:
        listed.append((group, resource, ns))
        return objects.get((group, resource), [])

    hard = q.parse_list({"cpu": "3", "limits.cpu": "10", "pods": "5", "count/pods": "10", "services.nodeports": "1",
                         "count/deployments.apps": "3", "example.com/unknown": "1"})
    usage, errs = await calculate_usage("testing", None, hard, new_registry(FakeClock(NOW)), None, list_items)
    assert errs == []
    assert q.to_json(usage) == {"cpu": "1100m", "limits.cpu": "1100m", "pods": "2", "count/pods": "3",
                                "services.nodeports": "1", "count/deployments.apps": "2"}
    assert sorted(listed) == [("", "pods", "testing"), ("", "services", "testing"), ("apps", "deployments", "testing")]


async def test_calculate_usage_with_scopes_and_a_failed_list() -> None:
    async def list_items(group: str, resource: str, ns: str) -> list[dict[str, Any]]:
        if resource == "services":
            raise RuntimeError("boom")
        return [pod("a", "100m"), pod("t", "1", activeDeadlineSeconds=5)]

    hard = q.parse_list({"pods": "5", "services": "5"})
    usage, errs = await calculate_usage("testing", ["Terminating"], hard, new_registry(FakeClock(NOW)), None, list_items)
    assert q.to_json(usage) == {"pods": "1"}                     # services left out, not zeroed
    assert [str(e) for e in errs] == ["boom"]
