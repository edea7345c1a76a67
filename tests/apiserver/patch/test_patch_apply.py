"""Server-side apply and managedFields bookkeeping (structured-merge-diff semantics)."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.patch import (
    ApplyConflict,
    server_side_apply,
    update_managed_fields,
)
from kubeplane.apiserver.patch.apply import merge
from kubeplane.apiserver.patch.managedfields import fields_v1_to_set, set_to_fields_v1

DEPLOY = "io.k8s.api.apps.v1.Deployment"
T0, T1, T2 = "2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z"


def config(replicas: int = 2, image: str = "nginx:1.24", labels: dict[str, str] | None = None,
           containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "labels": labels or {"app": "nginx"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}},
                     "template": {"metadata": {"labels": {"app": "nginx"}},
                                  "spec": {"containers": containers or [
                                      {"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]}}}}


def apply(live: dict[str, Any] | None, cfg: dict[str, Any], manager: str = "kubectl", force: bool = False,
          now: str = T0) -> dict[str, Any]:
    return server_side_apply(live, cfg, DEPLOY, manager=manager, force=force, api_version="apps/v1", now=now)


def entry(obj: dict[str, Any], manager: str, operation: str = "Apply") -> dict[str, Any]:
    found = [e for e in obj["metadata"].get("managedFields", [])
             if e["manager"] == manager and e["operation"] == operation]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    return found[0]


def test_apply_creates_with_managed_fields_shape() -> None:
    obj = apply(None, config())
    assert obj["spec"]["replicas"] == 2
    e = entry(obj, "kubectl")
    assert {k: v for k, v in e.items() if k != "fieldsV1"} == {
        "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0, "fieldsType": "FieldsV1"}
    assert e["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},  # LabelSelector is x-kubernetes-map-type: atomic
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                    ".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}}


def test_apply_changes_a_field() -> None:
    live = apply(None, config())
    before = copy.deepcopy(live)
    out = apply(live, config(replicas=5, image="nginx:1.25"), now=T1)
    assert out["spec"]["replicas"] == 5
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert entry(out, "kubectl")["time"] == T1
    assert live == before


def test_noop_apply_keeps_time() -> None:
    live = apply(None, config())
    assert entry(apply(live, config(), now=T2), "kubectl")["time"] == T0


def test_apply_removing_owned_field_removes_it() -> None:
    two = [{"name": "nginx", "image": "nginx"}, {"name": "sidecar", "image": "busybox"}]
    live = apply(None, config(labels={"app": "nginx", "tier": "web"}, containers=two))
    out = apply(live, config(labels={"app": "nginx"}, containers=two[:1]), now=T1)
    assert out["metadata"]["labels"] == {"app": "nginx"}
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["nginx"]
    assert 'k:{"name":"sidecar"}' not in entry(out, "kubectl")["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"]


def test_apply_keeps_dropped_field_owned_by_another_manager() -> None:
    live = apply(None, config(labels={"app": "nginx", "tier": "web"}))
    other = {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "nginx", "labels": {"tier": "web"}}}
    live = apply(live, other, manager="labeller", now=T1)  # same value: shared ownership, no conflict
    out = apply(live, config(labels={"app": "nginx"}), now=T2)
    assert out["metadata"]["labels"] == {"app": "nginx", "tier": "web"}


def test_conflict_with_updater() -> None:
    created = config(replicas=2)
    update_managed_fields(None, created, manager="kubectl-client-side-apply", operation="Update",
                          api_version="apps/v1", now=T0)
    with pytest.raises(ApplyConflict) as ei:
        apply(created, config(replicas=3), now=T1)
    err = ei.value
    assert (err.code, err.reason) == (409, "Conflict")
    assert errors.is_conflict(err)
    assert err.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                           'using apps/v1: .spec.replicas')
    assert err.details == {"causes": [{"reason": "FieldManagerConflict",
                                       "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
                                       "field": ".spec.replicas"}]}


def test_conflict_lists_every_field() -> None:
    created = config(replicas=2)
    update_managed_fields(None, created, manager="kubectl-create", operation="Update", api_version="apps/v1",
                          now=T0)
    with pytest.raises(ApplyConflict) as ei:
        apply(created, config(replicas=3, image="nginx:1.25"), now=T1)
    assert ei.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-create" using apps/v1:\n'
        '- .spec.replicas\n'
        '- .spec.template.spec.containers[name="nginx"].image')


def test_force_apply_takes_ownership() -> None:
    created = config(replicas=2)
    update_managed_fields(None, created, manager="kubectl-client-side-apply", operation="Update",
                          api_version="apps/v1", now=T0)
    out = apply(created, config(replicas=3), force=True, now=T1)
    assert out["spec"]["replicas"] == 3
    assert "f:replicas" in entry(out, "kubectl")["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entry(out, "kubectl-client-side-apply", "Update")["fieldsV1"]["f:spec"]


def test_same_value_is_not_a_conflict() -> None:
    created = config(replicas=2)
    update_managed_fields(None, created, manager="kubectl-create", operation="Update", api_version="apps/v1",
                          now=T0)
    out = apply(created, config(replicas=2), now=T1)
    assert "f:replicas" in entry(out, "kubectl")["fieldsV1"]["f:spec"]
    assert "f:replicas" in entry(out, "kubectl-create", "Update")["fieldsV1"]["f:spec"]


def test_update_on_create_records_fields() -> None:
    obj = config()
    update_managed_fields(None, obj, manager="kubectl-create", operation="Update", api_version="apps/v1", now=T0)
    e = entry(obj, "kubectl-create", "Update")
    assert e["time"] == T0 and "subresource" not in e
    spec = e["fieldsV1"]["f:spec"]
    assert "." not in spec and "." not in spec["f:template"]  # embedded by value: never "added"
    assert spec["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']["."] == {}
    assert e["fieldsV1"]["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    assert "f:name" not in e["fieldsV1"]["f:metadata"]  # stripped like stripMetaManager


def test_update_transfers_ownership_from_applier() -> None:
    live = apply(None, config(replicas=2))
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 7
    update_managed_fields(live, new, manager="kubectl-scale", operation="Update", api_version="apps/v1", now=T1)
    assert "f:replicas" not in entry(new, "kubectl")["fieldsV1"]["f:spec"]
    assert entry(new, "kubectl-scale", "Update")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert [e["operation"] for e in new["metadata"]["managedFields"]] == ["Apply", "Update"]


def test_update_without_changes_adds_no_entry() -> None:
    live = apply(None, config())
    new = copy.deepcopy(live)
    update_managed_fields(live, new, manager="someone", operation="Update", api_version="apps/v1", now=T1)
    assert new["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_update_ignores_status_on_main_resource() -> None:
    old = config()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 2}
    update_managed_fields(old, new, manager="m", operation="Update", api_version="apps/v1", now=T0)
    assert "managedFields" not in new["metadata"]
    status_new = copy.deepcopy(new)
    status_new["status"]["replicas"] = 3
    update_managed_fields(new, status_new, manager="deployment-controller", operation="Update",
                          api_version="apps/v1", now=T0, subresource="status")
    e = entry(status_new, "deployment-controller", "Update")
    assert e["subresource"] == "status" and e["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_list_merge_order() -> None:
    shape_node = {"type": "array", "items": {}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["n"]}
    lhs = [{"n": "a"}, {"n": "b"}, {"n": "c"}]
    rhs = [{"n": "c"}, {"n": "d"}, {"n": "a", "v": 1}]
    assert merge(lhs, rhs, shape_node) == [{"n": "b"}, {"n": "c"}, {"n": "d"}, {"n": "a", "v": 1}]


@pytest.mark.parametrize("cfg,message", [
    pytest.param({"apiVersion": "apps/v1beta1", "kind": "Deployment"},
                 "Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, "
                 "expected: apps/v1", id="wrong-version"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"managedFields": []}},
                 "metadata.managedFields must be nil", id="managed-fields-set"),
])
def test_apply_bad_requests(cfg: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.BadRequest) as ei:
        apply(None, cfg)
    assert ei.value.message == message


def test_fields_v1_round_trip() -> None:
    fields = {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
              "f:spec": {"f:containers": {'k:{"name":"x"}': {".": {}, "f:image": {}}}}}
    assert set_to_fields_v1(fields_v1_to_set(fields)) == fields


def test_schema_caches_never_serve_a_dead_nodes_entry() -> None:
    # The caches are keyed by id(node); a dict made after an older one died may get its id
    # (this made test_list_merge_order fail in CI, depending on allocation order). Plant a
    # dead node's entry under a live node's id: it must be recomputed, not served.
    from kubeplane.apiserver.patch import _schema
    node = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["n"]}
    dead = {"type": "array", "x-kubernetes-list-type": "atomic"}
    _schema._shape_cache[id(node)] = (dead, _schema._compute_shape(dead))
    _schema._meta_cache[(id(node), "n")] = (dead, _schema.NO_META)
    shape = _schema.shape_of(node, [])
    assert not shape.atomic and shape.keys == ("n",)
    prop = {"type": "object", "properties": {"n": {"type": "string", "x-kubernetes-patch-strategy": "merge"}}}
    _schema._meta_cache[(id(prop), "n")] = (dead, _schema.NO_META)
    assert _schema.lookup_patch_meta(prop, "n").strategies == ("merge",)


def _client_side_applied(cfg: dict[str, Any]) -> dict[str, Any]:
    """An object as `kubectl apply` (client-side) leaves it: the last-applied annotation and an
    Update entry of kubectl-client-side-apply."""
    live = copy.deepcopy(cfg)
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(cfg)}
    update_managed_fields(None, live, manager="kubectl-client-side-apply", operation="Update",
                          api_version="apps/v1", now=T0)
    return live


def test_kubectl_takes_over_what_client_side_apply_set() -> None:
    """lastAppliedManager: the fields of the last-applied annotation that still hold its values
    are no conflict for kubectl's server-side apply, which takes them over."""
    live = _client_side_applied(config(replicas=2))
    out = apply(live, config(replicas=3, image="nginx:1.25"), now=T1)
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert "f:replicas" in entry(out, "kubectl")["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entry(out, "kubectl-client-side-apply", "Update")["fieldsV1"]["f:spec"]


def test_a_field_changed_since_the_client_side_apply_still_conflicts() -> None:
    live = _client_side_applied(config(replicas=2))
    live["spec"]["replicas"] = 5                       # e.g. `kubectl scale`, as the same manager
    with pytest.raises(ApplyConflict) as ei:           # only the changed field is listed
        apply(live, config(replicas=3, image="nginx:1.25"), now=T1)
    assert ei.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                                'using apps/v1: .spec.replicas')


@pytest.mark.parametrize("manager, annotation", [
    ("my-ssa", None),                                  # another manager opts out
    ("kubectl", "{not json"),                          # an unreadable annotation allows nothing
    ("kubectl", json.dumps({**config(), "apiVersion": "apps/v1beta1"})),   # nor one of another version
])
def test_no_take_over_for_other_managers_or_bad_annotations(manager: str, annotation: str | None) -> None:
    live = _client_side_applied(config(replicas=2))
    if annotation is not None:
        live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = annotation
    with pytest.raises(ApplyConflict):
        apply(live, config(replicas=3), manager=manager, now=T1)


def test_prune_keeps_a_struct_owned_whole_and_removes_its_fields() -> None:
    """After kubectl's upgrade from client-side apply its Apply entry owns `queuing` itself (`.`);
    re-applying `queuing: {}` removes the defaulted fields under it but keeps the struct, which
    defaulting then fills again (upstream: Updater.prune's addBackDanglingItems)."""
    plc = "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration"
    api_version = "flowcontrol.apiserver.k8s.io/v1"
    cfg = {"apiVersion": api_version, "kind": "PriorityLevelConfiguration", "metadata": {"name": "pl"},
           "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}
    live = copy.deepcopy(cfg)
    live["spec"]["limited"]["limitResponse"]["queuing"] = {"queues": 64, "handSize": 8, "queueLengthLimit": 50}
    live["metadata"]["managedFields"] = [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": api_version, "time": T0, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:type": {}, "f:limited": {".": {}, "f:limitResponse": {
            ".": {}, "f:type": {}, "f:queuing": {".": {}, "f:queues": {}, "f:handSize": {}, "f:queueLengthLimit": {}}}}}}}]
    out = server_side_apply(live, cfg, plc, manager="kubectl", force=False, api_version=api_version, now=T1)
    assert out["spec"]["limited"]["limitResponse"] == {"type": "Queue", "queuing": {}}
