"""Which Services a pod event concerns (pkg/controller/util/endpoint/controller_utils.go).

get_services_to_update_on_pod_change returns nothing at once when the pod's namespace holds no
Service (namespace_has_services: the lister's namespace index), before comparing the pods: the
same empty answer upstream reaches by listing the namespace's Services.
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.resources import lookup
from kubeplane.api.types import ObjectName, core_v1, from_dict
from kubeplane.client.listers import ServiceLister
from kubeplane.client.tools.cache import Indexer
from kubeplane.client.tools.cache.store import NAMESPACE_INDEX, meta_namespace_index_func
from kubeplane.controller.endpoint import util as eu


def lister(*services: tuple[str, str, dict[str, str] | None]) -> ServiceLister:
    indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    for ns, name, selector in services:
        indexer.add(from_dict({"metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}},
                              core_v1.Service))
    ri = lookup("", "v1", "services")
    assert ri is not None
    return ServiceLister(indexer, ri)


def pod(rv: str = "1", labels: dict[str, str] | None = None, ready: bool = False, ips: list[str] | None = None,
        deleting: bool = False, ns: str = "ns") -> core_v1.Pod:
    meta: dict[str, Any] = {"name": "p", "namespace": ns, "resourceVersion": rv, "labels": labels or {"app": "a"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return from_dict({"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]},
                      "status": {"phase": "Running", "podIPs": [{"ip": ip} for ip in ips or []],
                                 "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}},
                     core_v1.Pod)


A = ObjectName("ns", "svc-a")
B = ObjectName("ns", "svc-b")


# (name, old, new, Services whose key is expected): upstream's Test_podChanged cases (readiness,
# IPs, deletion, labels) seen through GetServicesToUpdateOnPodChange with svc-a (app=a) and
# svc-b (app=b) in the namespace.
CASES = [
    ("resync: same resourceVersion", pod("1", ready=False), pod("1", ready=True), set()),
    ("no changes", pod("1"), pod("2"), set()),
    ("change readiness", pod("1"), pod("2", ready=True), {A}),
    ("add primary IP", pod("1"), pod("2", ips=["1.2.3.4"]), {A}),
    ("modify secondary IP", pod("1", ips=["1.2.3.4", "fd00::1"]), pod("2", ips=["1.2.3.4", "fd00::2"]), {A}),
    ("mark for deletion", pod("1"), pod("2", deleting=True), {A}),
    ("labels only: the memberships' difference", pod("1"), pod("2", labels={"app": "b"}), {A, B}),
    ("labels and readiness: both memberships", pod("1", labels={"app": "b"}), pod("2", ready=True), {A, B}),
    ("labels changed, same membership", pod("1"), pod("2", labels={"app": "a", "x": "y"}), set()),
]


@pytest.mark.parametrize("name,old,new,want", CASES, ids=[c[0] for c in CASES])
def test_services_to_update_on_pod_change(name: str, old: core_v1.Pod, new: core_v1.Pod,
                                          want: set[ObjectName]) -> None:
    services = lister(("ns", "svc-a", {"app": "a"}), ("ns", "svc-b", {"app": "b"}), ("other", "svc-a", {"app": "a"}),
                      ("ns", "headless", None))
    assert eu.get_services_to_update_on_pod_change(services, old, new) == want


@pytest.mark.parametrize("name,old,new,want", CASES, ids=[c[0] for c in CASES])
def test_no_service_in_the_namespace_concerns_nothing(name: str, old: core_v1.Pod, new: core_v1.Pod,
                                                      want: set[ObjectName], monkeypatch: pytest.MonkeyPatch) -> None:
    """Services elsewhere only: nothing, and the pods are not even compared."""
    services = lister(("other", "svc-a", {"app": "a"}), ("other", "svc-b", {"app": "b"}))
    monkeypatch.setattr(eu, "pod_endpoints_changed", lambda *a: pytest.fail("pods compared"))
    assert eu.get_services_to_update_on_pod_change(services, old, new) == set()
    assert eu.get_pod_service_memberships(services, new) == set()


def test_namespace_has_services_follows_adds_and_deletes() -> None:
    services = lister(("ns", "svc-a", {"app": "a"}))
    assert eu.namespace_has_services(services, "ns") and not eu.namespace_has_services(services, "other")
    services.indexer.delete("ns/svc-a")
    assert not eu.namespace_has_services(services, "ns")
    assert eu.get_pod_service_memberships(services, pod()) == set()
