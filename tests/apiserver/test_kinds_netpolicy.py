"""The networking, policy, autoscaling, scheduling and node kinds: identity exactly as upstream's
discovery table, and their table printers (upstream's printers.go)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import upstream_resources as upstream
from kubeplane.apiserver.registry import REGISTRY
from kubeplane.apiserver.tables import autoscaling, networking, policy, scheduling

NOW = 1_700_000_100.0
CREATED = "2023-11-14T22:13:20Z"        # 100 s before NOW

KINDS = [("networking.k8s.io", "v1", "ingresses"), ("networking.k8s.io", "v1", "ingressclasses"),
         ("networking.k8s.io", "v1", "networkpolicies"), ("networking.k8s.io", "v1", "servicecidrs"),
         ("networking.k8s.io", "v1", "ipaddresses"), ("policy", "v1", "poddisruptionbudgets"),
         ("autoscaling", "v2", "horizontalpodautoscalers"), ("autoscaling", "v1", "horizontalpodautoscalers"),
         ("scheduling.k8s.io", "v1", "priorityclasses"), ("node.k8s.io", "v1", "runtimeclasses")]


@pytest.mark.parametrize("key", KINDS, ids=lambda k: f"{k[2]}.{k[0]}/{k[1]}")
def test_identity_is_upstream_s(key: tuple[str, str, str]) -> None:
    d, u = REGISTRY.lookup(*key), upstream.lookup(*key)
    assert d is not None and u is not None
    assert (d.kind, d.singular, d.namespaced, d.definition) == (u.kind, u.singular_name, u.namespaced, u.definition)
    assert (d.short_names, d.categories, d.verbs) == (u.short_names, u.categories, tuple(sorted(u.verbs)))
    assert [(s.name, s.kind, s.verbs) for s in d.subresources] == \
        [(s.name, s.kind, tuple(s.verbs)) for s in u.subresources]


def test_both_hpa_versions_share_one_storage_and_v2_is_preferred() -> None:
    v2 = REGISTRY.lookup("autoscaling", "v2", "horizontalpodautoscalers")
    v1 = REGISTRY.lookup("autoscaling", "v1", "horizontalpodautoscalers")
    assert v2 is not None and v1 is not None and v1.prefix == v2.prefix == "/registry/horizontalpodautoscalers/"
    versions = [v for g, v in REGISTRY.group_versions() if g == "autoscaling"]
    assert versions == ["v2", "v1"] and upstream.preferred_version("autoscaling") == "v2"
    assert v2.to_storage is None and v1.to_storage is not None and v1.from_storage is not None


def meta(name: str = "x") -> dict[str, Any]:
    return {"name": name, "creationTimestamp": CREATED}


def test_ingress_row() -> None:
    ing = {"metadata": meta("web"), "spec": {"rules": [{"host": f"h{i}.com"} for i in range(5)] + [{}],
                                              "tls": [{}]},
           "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example"}, {"ip": "1.2.3.4"}]}}}
    assert networking.print_ingress(ing, NOW)[0] == ["web", "<none>", "h0.com,h1.com,h2.com + 3 more...",
                                                     "1.2.3.4,lb.example", "80, 443", "100s"]
    assert [c["name"] for c in networking.ingress_columns()] == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]


def test_ingress_class_network_policy_service_cidr_ip_address_rows() -> None:
    ic = {"metadata": meta("c"), "spec": {"controller": "a.io/c", "parameters": {"apiGroup": "k.io", "kind": "P",
                                                                                "name": "p"}}}
    assert networking.print_ingress_class(ic, NOW)[0] == ["c", "a.io/c", "P.k.io/p", "100s"]
    np = {"metadata": meta("np"), "spec": {"podSelector": {}}}
    assert networking.print_network_policy(np, NOW)[0] == ["np", "<none>", "100s"]
    sc = {"metadata": meta("s"), "spec": {"cidrs": ["10.0.0.0/24", "fd00::/108"]}}
    assert networking.print_service_cidr(sc, NOW)[0] == ["s", "10.0.0.0/24,fd00::/108", "100s"]
    ip = {"metadata": meta("10.0.0.1"), "spec": {"parentRef": {"group": "", "resource": "services",
                                                                  "namespace": "default", "name": "k"}}}
    assert networking.print_ip_address(ip, NOW)[0] == ["10.0.0.1", "services/default/k", "100s"]


def test_pdb_row() -> None:
    obj = {"metadata": meta("p"), "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 2}}
    assert policy.print_pdb(obj, NOW)[0] == ["p", "N/A", "25%", 2, "100s"]
    assert [c["name"] for c in policy.pdb_columns()] == ["Name", "Min Available", "Max Unavailable",
                                                         "Allowed Disruptions", "Age"]


@pytest.mark.parametrize("metrics, current, targets", [
    ([], None, "<none>"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
     [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}], "cpu: 12%/50%"),
    ([{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
      {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
      {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue",
                                                                            "averageValue": "5"}}}],
     None, "memory: <unknown>/1Gi, <unknown>/10 + 1 more..."),
])
def test_hpa_targets(metrics: list[Any], current: Any, targets: str) -> None:
    obj = {"metadata": meta("h"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                                            "minReplicas": 1, "maxReplicas": 4, "metrics": metrics},
           "status": {"currentReplicas": 2, "currentMetrics": current}}
    assert autoscaling.print_hpa(obj, NOW)[0] == ["h", "Deployment/web", targets, "1", 4, 2, "100s"]


def test_a_v1_hpa_prints_as_its_v2_form() -> None:
    obj = {"apiVersion": "autoscaling/v1", "metadata": meta("h"),
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                    "targetCPUUtilizationPercentage": 30},
           "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 20}}
    assert autoscaling.print_hpa(obj, NOW)[0] == ["h", "Deployment/web", "cpu: 20%/30%", "<unset>", 4, 1, "100s"]


def test_priority_class_and_runtime_class_rows() -> None:
    pc = {"metadata": meta("high"), "value": 1000, "preemptionPolicy": "Never"}
    assert scheduling.print_priority_class(pc, NOW)[0] == ["high", 1000, False, "100s", "Never"]
    assert [c["name"] for c in scheduling.priority_class_columns()] == ["Name", "Value", "Global-Default", "Age",
                                                                         "PreemptionPolicy"]
    rc = {"metadata": meta("gvisor"), "handler": "runsc"}
    assert scheduling.print_runtime_class(rc, NOW)[0] == ["gvisor", "runsc", "100s"]


V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
APPLY = {"content-type": "application/apply-patch+yaml"}


async def test_server_side_apply_through_both_hpa_versions(api: Any) -> None:
    """Field managers of both versions on one stored object: each apply lands, nothing 500s."""
    v2 = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                   "metrics": [{"type": "Resource", "resource": {"name": "memory", "target": {
                       "type": "AverageValue", "averageValue": "1Gi"}}}]}}
    r = await api.call("PATCH", V2 + "/h", {"fieldManager": "a"}, body=v2, headers=APPLY)
    assert r.status == 201, r.json
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 6}}
    r = await api.call("PATCH", V1 + "/h", {"fieldManager": "b", "force": "true"}, body=v1, headers=APPLY)
    assert r.status == 200, r.json
    assert r.json["apiVersion"] == "autoscaling/v1" and r.json["spec"]["maxReplicas"] == 6
    got = (await api.get(V2 + "/h")).json
    assert got["spec"]["maxReplicas"] == 6
    assert got["spec"]["metrics"][0]["resource"]["name"] == "memory"        # v1 could not see it; it stays
    r = await api.call("PATCH", V1 + "/h", body={"spec": {"targetCPUUtilizationPercentage": 40}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200, r.json
    metrics = (await api.get(V2 + "/h")).json["spec"]["metrics"]
    assert [m["resource"]["name"] for m in metrics] == ["memory", "cpu"]
