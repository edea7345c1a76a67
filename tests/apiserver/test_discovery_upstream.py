"""Discovery answers against upstream's checked-in documents (kubernetes/kubernetes api/discovery/):
apis__apps__v1.json (legacy) and aggregated_v2.json (aggregated), for the kinds served."""
from __future__ import annotations

from typing import Any

import orjson

from kubeplane.api import upstream_resources as upstream
from kubeplane.apiserver import discovery

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]

# api/discovery/apis__apps__v1.json @ 7c66d0f8 (that copy lists verbs without "watch"; the
# generator adds it back, see upstream_resources.json's source), served resources only.
UPSTREAM_APPS_V1 = [
    {"categories": ["all"], "kind": "Deployment", "name": "deployments", "namespaced": True, "shortNames": ["deploy"],
     "singularName": "deployment", "storageVersionHash": "8aSe+NMegvE=", "verbs": VERBS},
    {"group": "autoscaling", "kind": "Scale", "name": "deployments/scale", "namespaced": True, "singularName": "",
     "verbs": SUB_VERBS, "version": "v1"},
    {"kind": "Deployment", "name": "deployments/status", "namespaced": True, "singularName": "", "verbs": SUB_VERBS},
    {"categories": ["all"], "kind": "ReplicaSet", "name": "replicasets", "namespaced": True, "shortNames": ["rs"],
     "singularName": "replicaset", "storageVersionHash": "P1RzHs8/mWQ=", "verbs": VERBS},
    {"group": "autoscaling", "kind": "Scale", "name": "replicasets/scale", "namespaced": True, "singularName": "",
     "verbs": SUB_VERBS, "version": "v1"},
    {"kind": "ReplicaSet", "name": "replicasets/status", "namespaced": True, "singularName": "", "verbs": SUB_VERBS},
]


def _aggregated_workload(kind: str, plural: str, short: str) -> dict[str, Any]:
    return {"categories": ["all"], "resource": plural, "responseKind": {"group": "", "kind": kind, "version": ""},
            "scope": "Namespaced", "shortNames": [short], "singularResource": plural[:-1],
            "subresources": [
                {"responseKind": {"group": "autoscaling", "kind": "Scale", "version": "v1"}, "subresource": "scale",
                 "verbs": SUB_VERBS},
                {"responseKind": {"group": "", "kind": kind, "version": ""}, "subresource": "status",
                 "verbs": SUB_VERBS}],
            "verbs": VERBS}


# api/discovery/aggregated_v2.json @ 0209a4cb, the apps and events.k8s.io items (served resources).
UPSTREAM_AGGREGATED = {
    "apps": {"versions": [{"freshness": "Current", "version": "v1", "resources": [
        _aggregated_workload("Deployment", "deployments", "deploy"),
        _aggregated_workload("ReplicaSet", "replicasets", "rs")]}]},
    "events.k8s.io": {"versions": [{"freshness": "Current", "version": "v1", "resources": [
        {"resource": "events", "responseKind": {"group": "", "kind": "Event", "version": ""}, "scope": "Namespaced",
         "shortNames": ["ev"], "singularResource": "event", "verbs": VERBS}]}]},
}


def test_legacy_apps_v1_is_upstreams() -> None:
    doc = orjson.loads(discovery.api_resource_list("apps", "v1") or b"")
    assert list(doc) == ["kind", "apiVersion", "groupVersion", "resources"]
    fixture = {r["name"] for r in UPSTREAM_APPS_V1}       # the resources the fixture holds
    assert [r for r in doc["resources"] if r["name"] in fixture] == UPSTREAM_APPS_V1
    # Go's field order (APIResource), not the sorted order of the checked-in file
    by_name = {r["name"]: r for r in doc["resources"]}
    assert list(by_name["deployments"]) == ["name", "singularName", "namespaced", "kind", "verbs", "shortNames",
                                            "categories", "storageVersionHash"]
    assert list(by_name["deployments/scale"]) == ["name", "singularName", "namespaced", "group", "version", "kind",
                                                  "verbs"]


def test_legacy_core_v1_sorted_by_name_with_storage_hashes() -> None:
    doc = orjson.loads(discovery.api_resource_list("", "v1") or b"")
    names = [r["name"] for r in doc["resources"]]
    assert names == sorted(names)
    assert {"namespaces/finalize", "pods/binding", "pods/log", "pods/status"} <= set(names)
    finalize = next(r for r in doc["resources"] if r["name"] == "namespaces/finalize")
    assert finalize == {"name": "namespaces/finalize", "singularName": "", "namespaced": False, "kind": "Namespace",
                        "verbs": ["update"]}
    for r in doc["resources"]:
        want = upstream.lookup("", "v1", r["name"]) if "/" not in r["name"] else None
        assert r.get("storageVersionHash") == ((want.storage_version_hash or None) if want else None), r["name"]


def test_aggregated_items_are_upstreams() -> None:
    doc = orjson.loads(discovery.aggregated(False))
    items = {i["metadata"]["name"]: i for i in doc["items"]}
    for group, want in UPSTREAM_AGGREGATED.items():
        assert items[group]["metadata"] == {"name": group}       # creationTimestamp: omitzero since 1.35
        got = orjson.loads(orjson.dumps(items[group]["versions"], option=orjson.OPT_SORT_KEYS))
        for g, w in zip(got, want["versions"], strict=True):     # the resources the fixture holds
            names = {r["resource"] for r in w["resources"]}
            assert {**g, "resources": [r for r in g["resources"] if r["resource"] in names]} == w
    core = orjson.loads(discovery.aggregated(True))["items"]
    assert [i["metadata"] for i in core] == [{}]
    pods = next(r for r in core[0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert [s["subresource"] for s in pods["subresources"]] == ["attach", "binding", "ephemeralcontainers", "eviction",
                                                                "exec", "log", "portforward", "proxy", "resize",
                                                                "status"]
    subs = {s["subresource"]: s for s in pods["subresources"]}
    assert subs["binding"]["responseKind"] == {"group": "", "version": "", "kind": "Binding"}
    assert subs["eviction"]["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert subs["exec"]["responseKind"] == {"group": "", "version": "", "kind": "PodExecOptions"}
    assert subs["exec"]["verbs"] == ["create", "get"]
    sa = next(r for r in core[0]["versions"][0]["resources"] if r["resource"] == "serviceaccounts")
    assert sa["subresources"] == [{"subresource": "token", "verbs": ["create"], "responseKind": {
        "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}}]


def test_groups_in_upstreams_priority_order() -> None:
    order = {g: i for i, (g, _) in enumerate(upstream.group_versions())}
    served = discovery.groups()
    assert served[0] == "" and {"apps", "events.k8s.io", "coordination.k8s.io"} <= set(served)
    # groups upstream's kube-apiserver lacks (metrics-server's metrics.k8s.io) go last
    assert list(served) == sorted(served, key=lambda g: order.get(g, len(order)))
    names = [g["name"] for g in orjson.loads(discovery.api_group_list())["groups"]]
    assert names == list(served[1:])
    assert [i["metadata"]["name"] for i in orjson.loads(discovery.aggregated(False))["items"]] == names
