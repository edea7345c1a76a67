"""Strategic merge patch, cases restated from upstream strategicpatch/patch_test.go and the
bodies kubectl sends (shared/spec/client-wire.md)."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import errors
from kubeplane.apiserver.patch import apply_patch, strategic_merge_patch

DEPLOY = "io.k8s.api.apps.v1.Deployment"
POD = "io.k8s.api.core.v1.Pod"


def deployment(**spec: Any) -> dict[str, Any]:
    d = {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "nginx", "labels": {"app": "nginx"}, "finalizers": ["a", "b"]},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                  "template": {"metadata": {"labels": {"app": "nginx"}},
                               "spec": {"containers": [
                                   {"name": "nginx", "image": "nginx:1.24", "ports": [{"containerPort": 80}],
                                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                                   {"name": "sidecar", "image": "busybox"}],
                                   "tolerations": [{"key": "k1", "operator": "Exists"}],
                                   "volumes": [{"name": "data", "emptyDir": {}}]}}}}
    d["spec"].update(spec)
    return d


def pod_spec(d: dict[str, Any]) -> dict[str, Any]:
    return d["spec"]["template"]["spec"]


@pytest.mark.parametrize("patch,check", [
    pytest.param({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}},
                 lambda s: [(c["name"], c["image"]) for c in pod_spec(s)["containers"]]
                 == [("nginx", "nginx:1.25"), ("sidecar", "busybox")]
                 and pod_spec(s)["containers"][0]["ports"] == [{"containerPort": 80}],
                 id="containers-merged-by-name-keep-other-fields"),
    pytest.param({"spec": {"template": {"spec": {"containers": [{"name": "new", "image": "x"}]}}}},
                 lambda s: [c["name"] for c in pod_spec(s)["containers"]] == ["new", "nginx", "sidecar"],
                 id="new-container-goes-first-without-setElementOrder"),
    pytest.param({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}},
                 lambda s: [c["name"] for c in pod_spec(s)["containers"]] == ["nginx"],
                 id="patch-delete-container"),
    pytest.param({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "x"},
                                                                {"$patch": "replace"}]}}}},
                 lambda s: pod_spec(s)["containers"] == [{"name": "only", "image": "x"}],
                 id="patch-replace-list"),
    pytest.param({"spec": {"template": {"spec": {"containers": [
        {"name": "nginx", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}}},
                 lambda s: pod_spec(s)["containers"][0]["env"]
                 == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                 id="env-merged-by-name"),
    pytest.param({"spec": {"template": {"spec": {"containers": [
        {"name": "nginx", "ports": [{"containerPort": 443}]}]}}}},
                 lambda s: pod_spec(s)["containers"][0]["ports"] == [{"containerPort": 443}, {"containerPort": 80}],
                 id="ports-merged-by-containerPort"),
    pytest.param({"spec": {"template": {"spec": {"volumes": [{"name": "cfg", "configMap": {"name": "c"}}]}}}},
                 lambda s: [v["name"] for v in pod_spec(s)["volumes"]] == ["cfg", "data"],
                 id="volumes-merged-by-name"),
    pytest.param({"spec": {"template": {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}}},
                 lambda s: pod_spec(s)["tolerations"] == [{"key": "k2", "operator": "Exists"}],
                 id="tolerations-atomic-replaced"),
    pytest.param({"metadata": {"finalizers": ["c", "a"]}},
                 lambda s: s["metadata"]["finalizers"] == ["c", "a", "b"],
                 id="finalizers-primitive-union-patch-order"),
    pytest.param({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
                 lambda s: s["metadata"]["finalizers"] == ["b"], id="delete-from-primitive-list"),
    pytest.param({"metadata": {"$deleteFromPrimitiveList/ownerFinalizers": ["a"]}},
                 lambda s: "ownerFinalizers" not in s["metadata"], id="delete-from-absent-list-is-noop"),
    pytest.param({"spec": {"paused": None}}, lambda s: "paused" not in s["spec"], id="rollout-resume-null"),
    pytest.param({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
                 lambda s: s["spec"]["strategy"] == {"type": "Recreate"}, id="retainKeys-clears-rollingUpdate"),
    pytest.param({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 3}}}},
                 lambda s: s["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 3, "maxUnavailable": 1},
                 id="retainKeys-field-without-directive-merges"),
    pytest.param({"metadata": {"labels": {"$patch": "replace", "tier": "web"}}},
                 lambda s: s["metadata"]["labels"] == {"tier": "web"}, id="patch-replace-map"),
    pytest.param({"metadata": {"labels": {"$patch": "delete"}}},
                 lambda s: s["metadata"]["labels"] == {}, id="patch-delete-map"),
    pytest.param({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"},
                                                                                 {"name": "nginx"}]}}}},
                 lambda s: [c["name"] for c in pod_spec(s)["containers"]] == ["sidecar", "nginx"],
                 id="setElementOrder-reorders-without-content"),
    pytest.param({"spec": {"template": {"spec": {"affinity": {"nodeAffinity": None, "podAffinity": {}}}}}},
                 lambda s: pod_spec(s)["affinity"] == {"podAffinity": {}}, id="nulls-dropped-in-new-subtree"),
    pytest.param({"spec": {"template": {"spec": {"affinity": {"$patch": "delete"}}}}},
                 lambda s: "affinity" not in pod_spec(s), id="directive-in-absent-subtree-removed"),
    pytest.param({"spec": {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"}}}}},
                 lambda s: s["spec"]["template"]["metadata"]["annotations"]
                 == {"kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"}, id="rollout-restart"),
    pytest.param({"status": {"conditions": [{"type": "Available", "status": "True"}]}},
                 lambda s: s["status"]["conditions"] == [{"type": "Available", "status": "True"}],
                 id="untyped-absent-subtree-taken"),
])
def test_strategic_merge_patch(patch: dict[str, Any], check: Any) -> None:
    original = deployment()
    before = copy.deepcopy(original)
    patch_before = copy.deepcopy(patch)
    result = strategic_merge_patch(original, patch, DEPLOY)
    assert check(result), result
    assert original == before and patch == patch_before  # inputs untouched


def test_kubectl_apply_body() -> None:
    """The exact client-side apply update body from client-wire.md."""
    body = (b'{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},'
            b'"spec":{"replicas":3,"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],'
            b'"containers":[{"image":"nginx:1.25","name":"nginx"}]}}}}')
    original = deployment()
    pod_spec(original)["containers"] = pod_spec(original)["containers"][:1]
    out = apply_patch("application/strategic-merge-patch+json", original, body, DEPLOY)
    assert out["spec"]["replicas"] == 3
    assert pod_spec(out)["containers"][0]["image"] == "nginx:1.25"
    assert pod_spec(out)["containers"][0]["ports"] == [{"containerPort": 80}]
    assert out["metadata"]["annotations"] == {"kubectl.kubernetes.io/last-applied-configuration": "{}"}


def test_set_element_order_with_changed_item_orders_result() -> None:
    """Upstream: "$setElementOrder contains item that is not present in the list to be merged"."""
    original = {"spec": {"containers": [{"name": "1"}, {"name": "3"}]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
                      "containers": [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}]}}
    out = strategic_merge_patch(original, patch, POD)
    assert out["spec"]["containers"] == [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}]


def test_patch_order_kept_for_server_only_items() -> None:
    """Upstream: "preserve the order from the patch in a merging list 2"."""
    original = {"spec": {"containers": [{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}]}}
    patch = {"spec": {"containers": [{"name": "3", "image": "c"}, {"name": "1", "image": "a"}]}}
    out = strategic_merge_patch(original, patch, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["2", "3", "1"]


# Upstream answers the plain errors (400 here) as a 500 without a reason: see
# interpret_strategic_merge_patch_error.
@pytest.mark.parametrize("patch,code,message", [
    pytest.param({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, 400,
                 "map: map[image:x] does not contain declared merge key: name", id="missing-merge-key"),
    pytest.param({"metadata": {"labels": {"$patch": "merge"}}}, 400,
                 "unknown patch type: merge in map: map[$patch:merge]", id="patch-merge-in-map"),
    pytest.param({"spec": {"template": {"spec": {"containers": [{"name": "x", "$patch": "bogus"}]}}}}, 400,
                 "unknown patch type: bogus in map: map[$patch:bogus name:x]", id="unknown-list-directive"),
    pytest.param({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}, 400,
                 "invalid patch format of retainKeys", id="retainKeys-missing-key"),
    pytest.param({"spec": {"strategy": {"$retainKeys": "type"}}}, 400,
                 "invalid patch format of retainKeys", id="retainKeys-not-list"),
    pytest.param({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}, 400,
                 "invalid patch format of primitive list", id="bad-delete-list-key"),
    pytest.param({"metadata": {"finalizers": [["a"]]}}, 400,
                 "list element types are not identical: [[a b] [[a]]]", id="mixed-element-types"),
])
def test_strategic_errors(patch: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(errors.StatusError) as ei:
        strategic_merge_patch(deployment(), patch, DEPLOY)
    assert ei.value.code == code
    assert ei.value.message == message


def test_list_of_lists_is_unprocessable() -> None:
    with pytest.raises(errors.StatusError) as ei:
        strategic_merge_patch({"metadata": {"finalizers": []}}, {"metadata": {"finalizers": [["a"]]}}, DEPLOY)
    assert (ei.value.code, ei.value.reason) == (422, "Invalid")
    assert ei.value.message == "the server rejected our request due to an error in our request"


@pytest.mark.parametrize("body,message", [
    pytest.param(b"{not json", None, id="malformed"),
    pytest.param(b"[1]", "json: cannot unmarshal array into Go value of type map[string]interface {}", id="array"),
])
def test_strategic_body_errors(body: bytes, message: str | None) -> None:
    with pytest.raises(errors.BadRequest) as ei:
        apply_patch("application/strategic-merge-patch+json", deployment(), body, DEPLOY)
    assert ei.value.code == 400
    if message:
        assert ei.value.message == message


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=3), max_leaves=15)


@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(st.text(max_size=6), _json, max_size=5))
def test_empty_patch_is_identity(doc: dict[str, Any]) -> None:
    assert strategic_merge_patch(doc, {}, DEPLOY) == doc


@settings(max_examples=50, deadline=None)
@given(replicas=st.integers(0, 1000), image=st.text(min_size=1, max_size=10))
def test_empty_patch_is_identity_on_deployments(replicas: int, image: str) -> None:
    doc = deployment(replicas=replicas)
    pod_spec(doc)["containers"][0]["image"] = image
    assert strategic_merge_patch(doc, {}, DEPLOY) == doc
