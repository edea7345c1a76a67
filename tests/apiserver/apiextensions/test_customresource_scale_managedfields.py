"""The replicas' ownership between a custom object and its /scale (upstream's
managedfields.ScaleHandler and its table, scalehandler_test.go, with a CRD's group), and
server-side apply of a Scale: conflicts with the object's managers, force, and back."""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.apiextensions.scale import REPLICAS_IN_SCALE, to_parent, to_subresource
from kubeplane.apiserver.patch.managedfields import Entry

from .test_crd_controller import CRDS, established, served  # noqa: F401  (its fixture)
from .test_customresource_serving import BASE, SCALED, crd

GV = "example.com/v1"
PATH = ("f:spec", "f:replicas")
APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = {"content-type": "application/merge-patch+json"}
T = "2013-02-03T00:00:00Z"


def e(manager: str, fields: set[tuple[str, ...]], *, op: str = "Apply", av: str = GV, sub: str = "",
      time: str | None = None) -> Entry:
    return Entry(manager, op, av, time, sub, fields)


# --- upstream's table --------------------------------------------------------------------------

def test_to_subresource_filters_and_transforms() -> None:
    parent = [e("manager-1", {("f:spec", "f:another-field")}), e("manager-2", {PATH}, time=T),
              e("manager-3", {PATH}, sub="scale"), e("manager-4", {PATH}, av="other.example.com/v1")]
    assert to_subresource(parent, "example.com", PATH) == [
        e("manager-2", {REPLICAS_IN_SCALE}, av="autoscaling/v1", time=T),
        e("manager-3", {REPLICAS_IN_SCALE}, av="autoscaling/v1", sub="scale")]


def test_to_parent_steals_keeps_and_adds() -> None:
    other = ("f:spec", "f:other")
    parent = [e("stolen", {PATH, other}, time=T), e("kept", {PATH}, time=T), e("untouched", {other}),
              e("gone", {PATH}), e("unknown-version", {other}, av="elsewhere.io/v1")]
    scale = [e("kept", {REPLICAS_IN_SCALE}, av="autoscaling/v1"), e("new", {REPLICAS_IN_SCALE}, sub="scale",
                                                                    av="autoscaling/v1", time=T)]
    assert to_parent(parent, scale, GV, PATH) == [
        e("stolen", {other}, time=T), e("kept", {PATH}, time=T), e("untouched", {other}),
        e("new", {PATH}, sub="scale")]      # a Scale manager new to the object: no time, as upstream


def test_to_parent_maps_to_the_crds_replicas_path() -> None:
    path = ("f:spec", "f:size", "f:count")
    assert to_parent([], [e("m", {REPLICAS_IN_SCALE}, av="autoscaling/v1", sub="scale")], GV, path) == [
        e("m", {path}, sub="scale")]


# --- through the server ------------------------------------------------------------------------

def managed(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(m["manager"], m["operation"], m["apiVersion"], m.get("subresource", ""), "time" in m, m["fieldsV1"])
            for m in obj["metadata"].get("managedFields") or []]


async def test_scale_writes_move_the_replicas_between_managers(served: Any) -> None:  # noqa: F811
    api = served
    await api.create(CRDS, crd(**SCALED))
    await established(api, "foos.example.com")
    obj = {"apiVersion": GV, "kind": "Foo", "metadata": {"name": "a"}, "spec": {"replicas": 1, "size": 2}}
    r = await api.call("PATCH", f"{BASE}/a", {"fieldManager": "mgr"}, body=obj, headers=APPLY)
    assert r.status == 201, r.json

    r = await api.call("PATCH", f"{BASE}/a/scale", {"fieldManager": "kubectl-scale"},
                       body={"spec": {"replicas": 3}}, headers=MERGE)
    assert r.status == 200 and r.json["spec"] == {"replicas": 3}, r.json
    assert "managedFields" not in r.json["metadata"]
    cr = (await api.get(f"{BASE}/a")).json
    assert managed(cr) == [
        ("mgr", "Apply", GV, "", True, {"f:spec": {"f:size": {}}}),
        ("kubectl-scale", "Update", GV, "scale", False, {"f:spec": {"f:replicas": {}}})]

    # server-side apply of a Scale: the replicas are kubectl-scale's now
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "a"}, "spec": {"replicas": 5}}
    r = await api.call("PATCH", f"{BASE}/a/scale", {"fieldManager": "scaler"}, body=scale, headers=APPLY)
    assert (r.status, r.json["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "kubectl-scale" with subresource "scale" using '
             'autoscaling/v1: .spec.replicas'), r.json
    r = await api.call("PATCH", f"{BASE}/a/scale", {"fieldManager": "scaler", "force": "true"}, body=scale,
                       headers=APPLY)
    assert r.status == 200 and r.json["spec"] == {"replicas": 5}, r.json
    cr = (await api.get(f"{BASE}/a")).json
    assert cr["spec"] == {"replicas": 5, "size": 2}
    assert managed(cr) == [      # upstream's order: Apply first, then by time (none first)
        ("scaler", "Apply", GV, "scale", False, {"f:spec": {"f:replicas": {}}}),
        ("mgr", "Apply", GV, "", True, {"f:spec": {"f:size": {}}})]

    # the object's applier now conflicts with the Scale's
    r = await api.call("PATCH", f"{BASE}/a", {"fieldManager": "mgr"}, body=obj, headers=APPLY)
    assert (r.status, r.json["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "scaler" with subresource "scale": .spec.replicas')
    # applying the same value again is no conflict, and keeps the entry
    r = await api.call("PATCH", f"{BASE}/a/scale", {"fieldManager": "scaler"}, body=scale, headers=APPLY)
    assert r.status == 200, r.json
    assert managed((await api.get(f"{BASE}/a")).json)[0][:4] == ("scaler", "Apply", GV, "scale")


async def test_scale_apply_is_refused_where_a_scale_cannot_be(served: Any) -> None:  # noqa: F811
    api = served
    await api.create(CRDS, crd(**SCALED))
    await established(api, "foos.example.com")
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "nope"}, "spec": {"replicas": 1}}
    r = await api.call("PATCH", f"{BASE}/nope/scale", {"fieldManager": "m"}, body=scale, headers=APPLY)
    assert r.status == 404
    assert (await api.create(BASE, {"apiVersion": GV, "kind": "Foo", "metadata": {"name": "b"},
                                    "spec": {"replicas": 1}})).status == 201
    r = await api.call("PATCH", f"{BASE}/b/scale", {"fieldManager": "m"},
                       body={**scale, "apiVersion": "autoscaling/v2"}, headers=APPLY)
    assert r.status == 400 and 'for version "autoscaling/v2"' in r.json["message"], r.json
    r = await api.call("PATCH", f"{BASE}/b/scale", {"fieldManager": "m"},
                       body={**scale, "metadata": {"name": "b"}, "spec": {"replicas": 1, "bogus": 1}}, headers=APPLY)
    assert r.status == 400 and "field not declared in schema" in r.json["message"], r.json


def test_the_core_groups_entries_are_its_own() -> None:
    """A ReplicationController's entries (apiVersion "v1", the core group) map both ways, as
    upstream's ScaleHandler maps them for replicasPathInReplicationController."""
    other = ("f:spec", "f:selector")
    parent = [e("kubectl-client-side-apply", {PATH, other}, op="Update", av="v1", time=T)]
    assert to_subresource(parent, "", PATH) == [
        e("kubectl-client-side-apply", {REPLICAS_IN_SCALE}, op="Update", av="autoscaling/v1", time=T)]
    scale = [e("kubectl", {REPLICAS_IN_SCALE}, op="Update", av="autoscaling/v1", sub="scale", time=T)]
    assert to_parent(parent, scale, "v1", PATH) == [
        e("kubectl-client-side-apply", {other}, op="Update", av="v1", time=T),
        e("kubectl", {PATH}, op="Update", av="v1", sub="scale")]
