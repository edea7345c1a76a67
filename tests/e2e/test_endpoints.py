"""Services' endpoints with the real kubectl: EndpointSlices and Endpoints follow pod readiness
(sim profile readiness-delay: a probed container turns ready 5-15 s after it starts), named
ports resolve per pod, and publishNotReadyAddresses."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, namespace_for_test, running


@pytest.fixture(scope="module")
def slow_ready() -> Iterator[Cluster]:
    yield from running(nodes=1, extra_args=("--profile", "readiness-delay"))


def pods_and_service(ns: str, *, publish_not_ready: bool = False) -> list[dict[str, Any]]:
    container = {"name": "web", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}],
                 "readinessProbe": {"httpGet": {"path": "/", "port": "http"}}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}", "namespace": ns,
                                                            "labels": {"app": "web"}},
             "spec": {"containers": [container]}} for i in range(2)]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns, "labels": {"tier": "x"}},
           "spec": {"selector": {"app": "web"}, "publishNotReadyAddresses": publish_not_ready,
                    "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}
    return [*pods, svc]


def slice_endpoints(c: Cluster, ns: str) -> dict[str, dict[str, Any]]:
    slices = c.get_json("endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=web")["items"]
    return {ep["targetRef"]["name"]: {**ep["conditions"], "port": [p["port"] for p in s.get("ports") or []]}
            for s in slices for ep in s.get("endpoints") or []}


def test_endpoint_slices_follow_readiness(slow_ready: Cluster, request: pytest.FixtureRequest) -> None:
    c = slow_ready
    ns = namespace_for_test(c, request.node.name)
    c.apply_yaml({"apiVersion": "v1", "kind": "List", "items": pods_and_service(ns)})
    # First the pods run, not yet ready: in the slice, neither ready nor serving.
    eventually(lambda: len(slice_endpoints(c, ns)) == 2, "two endpoints in the slice")
    first = slice_endpoints(c, ns)
    assert all(ep["port"] == [8080] for ep in first.values()), first
    [s] = c.get_json("endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=web")["items"]
    assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert s["metadata"]["labels"]["tier"] == "x"
    assert s["metadata"]["ownerReferences"][0]["kind"] == "Service"
    # Then readiness passes: both ready.
    eventually(lambda: all(ep["ready"] and ep["serving"] for ep in slice_endpoints(c, ns).values())
               and len(slice_endpoints(c, ns)) == 2, "both endpoints ready", timeout=60)
    ep = c.get_json("endpoints", "web", "-n", ns)
    [subset] = ep["subsets"]
    assert sorted(a["targetRef"]["name"] for a in subset["addresses"]) == ["web-0", "web-1"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]
    # A deleted pod leaves both.
    c.kubectl("delete", "pod", "web-0", "-n", ns, "--wait=false")
    eventually(lambda: list(slice_endpoints(c, ns)) == ["web-1"], "web-0 gone from the slice", timeout=60)
    eventually(lambda: [a["targetRef"]["name"] for a in
                        c.get_json("endpoints", "web", "-n", ns)["subsets"][0].get("addresses", [])] == ["web-1"],
               "web-0 gone from the Endpoints")
    # The Service goes: its Endpoints with it (the slices go with the garbage collector).
    c.kubectl("delete", "service", "web", "-n", ns)
    eventually(lambda: c.kubectl("get", "endpoints", "web", "-n", ns, check=False).returncode != 0,
               "the Endpoints deleted")


def test_publish_not_ready_addresses(slow_ready: Cluster, request: pytest.FixtureRequest) -> None:
    c = slow_ready
    ns = namespace_for_test(c, request.node.name)
    c.apply_yaml({"apiVersion": "v1", "kind": "List", "items": pods_and_service(ns, publish_not_ready=True)})
    eps = eventually(lambda: (e := slice_endpoints(c, ns)) and len(e) == 2 and e, "two endpoints")
    assert all(ep["ready"] for ep in eps.values()), eps


def test_kubernetes_service_endpoints(slow_ready: Cluster) -> None:
    """default/kubernetes: the API server's own address, kept by the API server (not by the
    controllers: the Service has no selector)."""
    ep = slow_ready.get_json("endpoints", "kubernetes", "-n", "default")
    assert ep["subsets"][0]["ports"][0]["name"] == "https"
    [s] = slow_ready.get_json("endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes")["items"]
    assert s["endpoints"][0]["addresses"] == [ep["subsets"][0]["addresses"][0]["ip"]]


def test_custom_endpoints_mirrored(slow_ready: Cluster, request: pytest.FixtureRequest) -> None:
    """A Service without a selector and the Endpoints its user writes: the mirroring controller
    makes the slice; labelled skip-mirror, the slice goes."""
    c = slow_ready
    ns = namespace_for_test(c, request.node.name)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": ns},
           "spec": {"ports": [{"name": "db", "port": 5432}]}}
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ext", "namespace": ns},
          "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "notReadyAddresses": [{"ip": "192.0.2.11"}],
                       "ports": [{"name": "db", "port": 5432}]}]}
    c.apply_yaml({"apiVersion": "v1", "kind": "List", "items": [svc, ep]})

    def mirrored() -> list[dict[str, Any]]:
        return c.get_json("endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=ext")["items"]
    [s] = eventually(mirrored, "the mirrored slice")
    assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
        "endpointslicemirroring-controller.k8s.io"
    assert s["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
    assert sorted((e["addresses"][0], e["conditions"]["ready"]) for e in s["endpoints"]) == [
        ("192.0.2.10", True), ("192.0.2.11", False)]
    assert s["ports"] == [{"name": "db", "port": 5432, "protocol": "TCP"}]
    c.kubectl("label", "endpoints", "ext", "-n", ns, "endpointslice.kubernetes.io/skip-mirror=true")
    eventually(lambda: not mirrored(), "the mirrored slice deleted")
