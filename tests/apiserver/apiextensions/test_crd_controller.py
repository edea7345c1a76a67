"""The CRD controllers and custom objects through the generic store, in process.

The names table is upstream's (controller/status/naming_controller_test.go TestSync); the rest
drives a server with the controller running: a CRD is established and served at once, custom
objects go through every verb, and a CRD's deletion deletes its objects, then its kind.
"""
from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.apiserver import enablement
from kubeplane.apiserver.apiextensions.controller import (CRDController, calculate_names_and_conditions,
                                                          start_controller, version_priority)
from kubeplane.apiserver.registry import REGISTRY

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = {"content-type": "application/merge-patch+json"}


# --- upstream's naming table ------------------------------------------------------------------

def new_crd(name: str, spec: tuple[str, ...] = (), status: tuple[str, ...] = (), conditions: tuple[dict, ...] = ()) -> dict:
    plural, group = name.split(".", 1)
    obj: dict[str, Any] = {"metadata": {"name": name}, "spec": {"group": group, "names": _names(*spec) if spec else
                                                                {"plural": plural}}}
    obj["status"] = {"acceptedNames": _names(*status)} if status else {}
    if conditions:
        obj["status"]["conditions"] = list(conditions)
    return obj


def _names(plural: str = "", singular: str = "", kind: str = "", list_kind: str = "", *short: str) -> dict:
    names = {"plural": plural, "singular": singular, "kind": kind, "listKind": list_kind}
    if short:
        names["shortNames"] = list(short)
    return names


def _normal(names: dict) -> tuple:
    return (names.get("plural", ""), names.get("singular", ""), names.get("kind", ""), names.get("listKind", ""),
            tuple(names.get("shortNames") or ()))


FULL = ("alfa", "delta-singular", "echo-kind", "foxtrot-listkind", "golf-shortname-1", "hotel-shortname-2")
OTHER = ("zulu", "yankee-singular", "xray-kind", "whiskey-listkind", "victor-shortname-1", "uniform-shortname-2")
ACCEPTED = ("True", "NoConflicts", "no conflicts found")
INSTALLING = ("False", "Installing", "the initial names have been accepted")
NOT_ESTABLISHED = ("False", "NotAccepted", "not all names are accepted")
ACCEPTED_COND = {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}
NOT_ACCEPTED_COND = {"type": "NamesAccepted", "status": "False", "reason": "NotAccepted",
                     "message": "not all names are accepted"}


def conflict(reason: str, name: str) -> tuple[str, str, str]:
    return ("False", reason, f'"{name}" is already in use')


@pytest.mark.parametrize("crd, existing, names, accepted, established", [
    pytest.param(new_crd("alfa.bravo.com"), [], _names("alfa"), ACCEPTED, INSTALLING, id="first resource"),
    pytest.param(new_crd("alfa.bravo.com", FULL), [new_crd("alfa.charlie.com", status=FULL)], _names(*FULL),
                 ACCEPTED, INSTALLING, id="different groups"),
    pytest.param(new_crd("alfa.bravo.com", FULL), [new_crd("india.bravo.com", status=("india", "alfa"))],
                 _names("", *FULL[1:]), conflict("PluralConflict", "alfa"), NOT_ESTABLISHED,
                 id="conflict plural to singular"),
    pytest.param(new_crd("alfa.bravo.com", FULL),
                 [new_crd("india.bravo.com", status=("india", "indias", "", "", "delta-singular"))],
                 _names("alfa", "", *FULL[2:]), conflict("SingularConflict", "delta-singular"), NOT_ESTABLISHED,
                 id="conflict singular to shortName"),
    pytest.param(new_crd("alfa.bravo.com", FULL),
                 [new_crd("india.bravo.com", status=("india", "indias", "", "", "hotel-shortname-2"))],
                 _names(*FULL[:4]), conflict("ShortNamesConflict", "hotel-shortname-2"), NOT_ESTABLISHED,
                 id="conflict on shortName to shortName"),
    pytest.param(new_crd("alfa.bravo.com", FULL), [new_crd("india.bravo.com", status=("india", "indias", "", "echo-kind"))],
                 _names("alfa", "delta-singular", "", *FULL[3:]), conflict("KindConflict", "echo-kind"),
                 NOT_ESTABLISHED, id="conflict on kind to listkind"),
    pytest.param(new_crd("alfa.bravo.com", FULL),
                 [new_crd("india.bravo.com", status=("india", "indias", "foxtrot-listkind", ""))],
                 _names(*FULL[:3], "", *FULL[4:]), conflict("ListKindConflict", "foxtrot-listkind"), NOT_ESTABLISHED,
                 id="conflict on listkind to kind"),
    pytest.param(new_crd("alfa.bravo.com", FULL), [new_crd("india.bravo.com", status=("india", "echo-kind", "", ""))],
                 _names(*FULL), ACCEPTED, INSTALLING, id="no conflict on resource and kind"),
    pytest.param(new_crd("alfa.bravo.com", FULL, OTHER),
                 [new_crd("india.bravo.com", status=("india", "indias", "foxtrot-listkind", "", "delta-singular"))],
                 _names("alfa", "yankee-singular", "echo-kind", "whiskey-listkind", *FULL[4:]),
                 conflict("ListKindConflict", "foxtrot-listkind"), NOT_ESTABLISHED, id="merge on conflicts"),
    pytest.param(new_crd("alfa.bravo.com", FULL, OTHER),
                 [new_crd("india.bravo.com", status=("india", "indias", "foxtrot-listkind", "", "delta-singular",
                                                     "golf-shortname-1"))],
                 _names("alfa", "yankee-singular", "echo-kind", "whiskey-listkind", *OTHER[4:]),
                 conflict("ListKindConflict", "foxtrot-listkind"), NOT_ESTABLISHED,
                 id="merge on conflicts shortNames as one"),
    pytest.param(new_crd("alfa.bravo.com", FULL, FULL), [new_crd("alfa.bravo.com", FULL, FULL)], _names(*FULL),
                 ACCEPTED, INSTALLING, id="no conflicts on self"),
    pytest.param(new_crd("alfa.bravo.com", FULL[:5], FULL), [new_crd("alfa.bravo.com", FULL, FULL)],
                 _names(*FULL[:5]), ACCEPTED, INSTALLING, id="no conflicts on self, remove shortname"),
    pytest.param(new_crd("alfa.bravo.com", conditions=(ACCEPTED_COND,)), [], _names("alfa"), ACCEPTED, INSTALLING,
                 id="installing before with true condition"),
    pytest.param(new_crd("alfa.bravo.com", conditions=(NOT_ACCEPTED_COND,)), [], _names("alfa"), ACCEPTED,
                 INSTALLING, id="not installing before with false condition"),
    pytest.param(new_crd("alfa.bravo.com", FULL, conditions=(ACCEPTED_COND,)),
                 [new_crd("india.bravo.com", status=("india", "alfa"))], _names("", *FULL[1:]),
                 conflict("PluralConflict", "alfa"), NOT_ESTABLISHED, id="conflicting, installing before with true condition"),
    pytest.param(new_crd("alfa.bravo.com", FULL, conditions=(NOT_ACCEPTED_COND,)),
                 [new_crd("india.bravo.com", status=("india", "alfa"))], _names("", *FULL[1:]),
                 conflict("PluralConflict", "alfa"), NOT_ESTABLISHED,
                 id="conflicting, not installing before with false condition"),
])
def test_calculate_names_and_conditions(crd: dict, existing: list[dict], names: dict, accepted: tuple,
                                        established: tuple) -> None:
    got_names, got_accepted, got_established = calculate_names_and_conditions(crd, existing)
    assert _normal(got_names) == _normal(names)
    assert (got_accepted["status"], got_accepted["reason"], got_accepted["message"]) == accepted
    assert (got_established["status"], got_established["reason"], got_established["message"]) == established


@pytest.mark.parametrize("versions, expected", [
    (["v1", "v2", "v1beta1", "v10", "v1alpha1", "foo", "v2beta3", "v11alpha2", "bar"],
     ["v10", "v2", "v1", "v2beta3", "v1beta1", "v11alpha2", "v1alpha1", "bar", "foo"]),
])
def test_version_priority_is_kube_aware(versions: list[str], expected: list[str]) -> None:
    """Upstream: version.CompareKubeAwareVersionStrings' ordering (as in its own test)."""
    assert sorted(versions, key=version_priority) == expected


# --- the controller in a server -----------------------------------------------------------------

def crd_manifest(plural: str = "foos", kind: str = "Foo", group: str = "example.com", *, scope: str = "Namespaced",
                 status: bool = True, versions: tuple[str, ...] = ("v1",), singular: str = "",
                 columns: list[dict] | None = None) -> dict:
    vs = [{"name": name, "served": True, "storage": i == 0,
           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
          for i, name in enumerate(versions)]
    for v in vs:
        if status:
            v["subresources"] = {"status": {}}
        if columns:
            v["additionalPrinterColumns"] = columns
    names = {"plural": plural, "kind": kind, "shortNames": [plural[:2]], "categories": ["all"]}
    if singular:
        names["singular"] = singular
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": names, "versions": vs}}


async def until(check: Callable[[], Any], what: str) -> Any:
    """Let the loop run (the controller's watch and writes) until check() is truthy; no wall clock."""
    for _ in range(2000):
        if (got := await check()):
            return got
        await asyncio.sleep(0)
    raise AssertionError(f"never: {what}")


@pytest.fixture
async def served(api: Any) -> AsyncIterator[Any]:
    """The API fixture with the CRD controller running; its kinds are forgotten afterwards."""
    tasks = await start_controller(api.server)
    yield api
    controller: CRDController = api.server.crd_controller
    for name in list(controller._serving):
        controller.unserve(name)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def established(api: Any, name: str) -> dict:
    async def check() -> Any:
        r = await api.get(f"{CRDS}/{name}")
        conds = {c["type"]: c for c in r.json.get("status", {}).get("conditions", [])}
        return r.json if conds.get("Established", {}).get("status") == "True" else None
    return await until(check, f"{name} established")


async def test_a_crd_is_established_and_served_at_once(served: Any) -> None:
    api = served
    r = await api.create(CRDS, crd_manifest())
    assert r.status == 201, r.json
    crd = await established(api, "foos.example.com")
    assert crd["status"]["acceptedNames"] == {"plural": "foos", "singular": "foo", "shortNames": ["fo"], "kind": "Foo",
                                              "listKind": "FooList", "categories": ["all"]}
    conds = [(c["type"], c["status"], c["reason"], c["message"]) for c in crd["status"]["conditions"]]
    assert conds == [("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
                     ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")]
    assert crd["status"]["storedVersions"] == ["v1"]

    legacy = (await api.get("/apis/example.com/v1")).json
    assert [(r["name"], r["namespaced"], r["kind"], r.get("shortNames"), r.get("categories")) for r in legacy["resources"]] == [
        ("foos", True, "Foo", ["fo"], ["all"]), ("foos/status", True, "Foo", None, None)]
    groups = (await api.get("/apis")).json["groups"]
    assert {"name": "example.com", "versions": [{"groupVersion": "example.com/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "example.com/v1", "version": "v1"}} in groups
    agg = (await api.call("GET", "/apis", headers={
        "accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})).json
    mine = next(g for g in agg["items"] if g["metadata"]["name"] == "example.com")
    assert mine["versions"][0]["resources"][0]["resource"] == "foos"
    index = (await api.get("/openapi/v3")).json
    assert "apis/example.com/v1" in index["paths"]


async def test_custom_objects_through_every_verb(served: Any) -> None:
    api = served
    await api.create(CRDS, crd_manifest(columns=[{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]))
    await established(api, "foos.example.com")
    base = "/apis/example.com/v1/namespaces/default/foos"
    obj = {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "a", "labels": {"app": "x"}},
           "spec": {"size": 1}, "status": {"ignored": True}}
    r = await api.create(base, obj)
    assert r.status == 201, r.json
    assert r.json["metadata"]["generation"] == 1 and "status" not in r.json    # status is a subresource
    assert (await api.get(f"{base}/a")).json["spec"] == {"size": 1}
    await api.create(base, {**obj, "metadata": {"name": "b"}})
    listed = (await api.get(base, {"labelSelector": "app=x"})).json
    assert listed["kind"] == "FooList" and [o["metadata"]["name"] for o in listed["items"]] == ["a"]
    page = (await api.get("/apis/example.com/v1/foos", {"limit": "1"})).json
    assert len(page["items"]) == 1 and page["metadata"]["continue"]
    assert [o["metadata"]["name"] for o in (await api.get(base, {"fieldSelector": "metadata.name=b"})).json["items"]] == ["b"]

    # spec changes bump generation; status changes (through /status) do not
    r = await api.call("PATCH", f"{base}/a", body={"spec": {"size": 2}}, headers=MERGE)
    assert (r.status, r.json["metadata"]["generation"]) == (200, 2)
    r = await api.call("PATCH", f"{base}/a/status", body={"status": {"ready": True}}, headers=MERGE)
    assert (r.status, r.json["status"], r.json["metadata"]["generation"]) == (200, {"ready": True}, 2)
    r = await api.call("PATCH", f"{base}/a", body={"status": {"ready": False}, "metadata": {"labels": {"l": "1"}}},
                       headers=MERGE)
    assert (r.json["status"], r.json["metadata"]["generation"]) == ({"ready": True}, 2)   # main resource: no status
    r = await api.call("PATCH", f"{base}/a", body=[{"op": "replace", "path": "/spec/size", "value": 3}],
                       headers={"content-type": "application/json-patch+json"})
    assert (r.status, r.json["spec"]["size"]) == (200, 3)
    r = await api.call("PATCH", f"{base}/a", body={"spec": {"size": 4}},
                       headers={"content-type": "application/strategic-merge-patch+json"})
    assert r.status == 415 and "application/apply-patch+yaml" in r.json["message"]
    r = await api.call("PATCH", f"{base}/c", {"fieldManager": "m"}, headers={"content-type": "application/apply-patch+yaml"},
                       body="apiVersion: example.com/v1\nkind: Foo\nmetadata:\n  name: c\nspec:\n  size: 9\n")
    assert (r.status, r.json["spec"], r.json["metadata"]["managedFields"][0]["manager"]) == (201, {"size": 9}, "m")
    current = (await api.get(f"{base}/c")).json
    stale = copy.deepcopy(current)
    current["spec"]["size"] = 10
    assert (await api.call("PUT", f"{base}/c", body=current)).status == 200
    stale["spec"]["size"] = 11
    r = await api.call("PUT", f"{base}/c", body=stale)
    assert r.status == 409 and r.json["reason"] == "Conflict"

    table = (await api.call("GET", base, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})).json
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert [row["cells"] for row in table["rows"]] == [["a", 3], ["b", 1], ["c", 10]]

    r = await api.create(base, {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "Bad_Name"}})
    assert r.status == 422 and "metadata.name: Invalid value: \"Bad_Name\"" in r.json["message"]
    r = await api.create("/apis/example.com/v1/foos", {"apiVersion": "example.com/v1", "kind": "Foo",
                                                       "metadata": {"name": "x"}})
    assert r.status == 404                              # namespaced: no cluster-wide create
    assert (await api.call("DELETE", f"{base}/a")).status == 200
    assert (await api.call("DELETE", base)).status == 200
    assert (await api.get(base)).json["items"] == []
    keys = [kv.key for kv in (await api.storage.list("/registry/example.com/foos/"))[0]]
    assert keys == []


async def test_storage_key_is_upstreams(served: Any) -> None:
    api = served
    await api.create(CRDS, crd_manifest("bars", "Bar", scope="Cluster"))
    await established(api, "bars.example.com")
    r = await api.create("/apis/example.com/v1/bars", {"apiVersion": "example.com/v1", "kind": "Bar",
                                                       "metadata": {"name": "one"}})
    assert r.status == 201, r.json
    assert await api.storage.get("/registry/example.com/bars/one") is not None
    assert (await api.create("/apis/example.com/v1/namespaces/default/bars", {})).status == 404


async def test_a_second_version_is_served_from_the_storage_version(served: Any) -> None:
    api = served
    await api.create(CRDS, crd_manifest(versions=("v1", "v2beta1")))
    await established(api, "foos.example.com")
    r = await api.create("/apis/example.com/v2beta1/namespaces/default/foos",
                         {"apiVersion": "example.com/v2beta1", "kind": "Foo", "metadata": {"name": "a"}})
    assert (r.status, r.json["apiVersion"]) == (201, "example.com/v2beta1")
    assert (await api.storage.get("/registry/example.com/foos/default/a")).obj["apiVersion"] == "example.com/v1"
    assert (await api.get("/apis/example.com/v1/namespaces/default/foos/a")).json["apiVersion"] == "example.com/v1"
    versions = [v["version"] for v in (await api.get("/apis/example.com")).json["versions"]]
    assert versions == ["v1", "v2beta1"]


async def test_names_conflict_then_accepted_when_the_holder_goes(served: Any) -> None:
    api = served
    await api.create(CRDS, crd_manifest("widgets", "Widget"))
    await established(api, "widgets.example.com")
    await api.create(CRDS, crd_manifest("gadgets", "Gadget", singular="widgets"))

    async def refused() -> Any:
        crd = (await api.get(f"{CRDS}/gadgets.example.com")).json
        cond = next((c for c in crd.get("status", {}).get("conditions", []) if c["type"] == "NamesAccepted"), {})
        return cond if cond.get("status") == "False" else None
    cond = await until(refused, "a names conflict")
    assert (cond["reason"], cond["message"]) == ("SingularConflict", '"widgets" is already in use')
    assert REGISTRY.lookup("example.com", "v1", "gadgets") is None
    assert (await api.get("/apis/example.com/v1/namespaces/default/gadgets")).status == 404

    assert (await api.call("DELETE", f"{CRDS}/widgets.example.com")).status == 200
    crd = await established(api, "gadgets.example.com")          # the name was freed
    assert crd["status"]["acceptedNames"]["singular"] == "widgets"


async def test_deleting_a_crd_deletes_its_objects_then_its_kind(served: Any) -> None:
    api = served
    await api.create(CRDS, crd_manifest())
    await established(api, "foos.example.com")
    base = "/apis/example.com/v1/namespaces/default/foos"
    await api.create(base, {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "a"}})
    await api.create(base, {"apiVersion": "example.com/v1", "kind": "Foo",
                            "metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    r = await api.call("DELETE", f"{CRDS}/foos.example.com")
    assert r.status == 200
    assert r.json["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    term = next(c for c in r.json["status"]["conditions"] if c["type"] == "Terminating")
    assert (term["status"], term["reason"]) == ("True", "InstanceDeletionPending")

    async def waiting() -> Any:
        crd = (await api.get(f"{CRDS}/foos.example.com")).json
        cond = next((c for c in crd["status"]["conditions"] if c["type"] == "Terminating"), {})
        return cond if cond.get("reason") == "InstanceDeletionCheck" else None
    cond = await until(waiting, "the held object blocks the cleanup")
    assert cond["message"] == "could not confirm zero CustomResources remaining: 1 remaining"
    assert (await api.get(f"{base}/a")).status == 404
    r = await api.create(base, {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "new"}})
    assert (r.status, r.json["reason"], r.json["message"]) == (
        405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating")
    held = (await api.get(f"{base}/held")).json
    assert held["metadata"]["deletionTimestamp"]
    assert (await api.call("PATCH", f"{base}/held", body={"metadata": {"finalizers": None}}, headers=MERGE)).status == 200
    api.clock.step(1)                              # the finalizer's retry

    async def gone() -> bool:
        return (await api.get(f"{CRDS}/foos.example.com")).status == 404
    await until(gone, "the CRD removed")
    await until(lambda: _async(REGISTRY.lookup("example.com", "v1", "foos") is None), "the kind unregistered")
    assert (await api.get("/apis/example.com/v1")).status == 404
    assert not enablement.enabled("example.com", "v1", "foos")
    assert (await api.storage.list("/registry/example.com/"))[0] == []


async def test_a_crd_never_established_is_released_at_once(served: Any) -> None:
    api = served
    await api.create(CRDS, crd_manifest("widgets", "Widget"))
    await established(api, "widgets.example.com")
    await api.create(CRDS, crd_manifest("gadgets", "Gadget", singular="widgets"))
    assert (await api.call("DELETE", f"{CRDS}/gadgets.example.com")).status == 200

    async def gone() -> bool:
        return (await api.get(f"{CRDS}/gadgets.example.com")).status == 404
    await until(gone, "the CRD removed")


async def test_stored_crds_are_served_when_the_controller_starts(api: Any) -> None:
    await api.create(CRDS, crd_manifest())
    crd = (await api.get(f"{CRDS}/foos.example.com")).json
    assert "conditions" not in crd["status"]         # no controller ran yet
    tasks = await start_controller(api.server)
    try:
        controller: CRDController = api.server.crd_controller
        await controller.sync("foos.example.com")    # what the watch would bring: written, then served
        await until(lambda: _async(REGISTRY.lookup("example.com", "v1", "foos") is not None), "served")
        assert (await api.get("/apis/example.com/v1/namespaces/default/foos")).status == 200
    finally:
        for name in list(api.server.crd_controller._serving):
            api.server.crd_controller.unserve(name)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _async(value: Any) -> Any:
    return value


async def test_crd_strategy_generation_status_and_stored_versions(api: Any) -> None:
    """Upstream: customresourcedefinition strategy — status cleared on create and kept on
    update, generation on spec changes only, a new storage version joins storedVersions."""
    manifest = crd_manifest(versions=("v1",))
    manifest["status"] = {"storedVersions": ["v0"], "acceptedNames": {"plural": "x"}}
    r = await api.create(CRDS, manifest)
    assert (r.status, r.json["metadata"]["generation"], r.json["status"]) == (201, 1, {"storedVersions": ["v1"]})
    path = f"{CRDS}/foos.example.com"
    r = await api.call("PATCH", path, body={"metadata": {"labels": {"a": "b"}}, "status": {"storedVersions": ["zz"]}},
                       headers=MERGE)
    assert (r.json["metadata"]["generation"], r.json["status"]["storedVersions"]) == (1, ["v1"])
    versions = r.json["spec"]["versions"]
    versions[0]["storage"] = False
    versions.append({**copy.deepcopy(versions[0]), "name": "v2", "storage": True})
    r = await api.call("PATCH", path, body={"spec": {"versions": versions}}, headers=MERGE)
    assert r.status == 200, r.json
    assert (r.json["metadata"]["generation"], r.json["status"]["storedVersions"]) == (2, ["v1", "v2"])
    r = await api.call("PATCH", path + "/status", body={"spec": {"scope": "Cluster"}, "metadata": {"labels": {"c": "d"}},
                                                        "status": {"storedVersions": ["v1", "v2"],
                                                                   "acceptedNames": {"plural": "foos"}}}, headers=MERGE)
    assert r.status == 200, r.json
    assert (r.json["spec"]["scope"], r.json["metadata"]["labels"], r.json["status"]["acceptedNames"]) == (
        "Namespaced", {"a": "b"}, {"plural": "foos"})
