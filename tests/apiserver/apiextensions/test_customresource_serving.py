"""Custom objects as upstream's customresource handler serves them: the scale subresource at the
CRD's paths, fieldValidation of unknown nested fields, per-version schemas (pruning, defaulting
on write and on read, deprecation warnings) and selectableFields.

Upstream: apiextensions-apiserver pkg/registry/customresource (etcd.go ScaleREST, validator.go,
strategy.go selectableFields), pkg/apiserver/customresource_handler.go (schemaCoercingDecoder)
and its integration tests (test/integration/scale_test.go, fieldselector_test.go).
"""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.scale import ScalePaths, scale_from_custom_resource, validate_scale_spec

from .test_crd_controller import CRDS, MERGE, crd_manifest, established, served  # noqa: F401  (its fixture)


@pytest.fixture
def crd_api(served: Any) -> Any:  # noqa: F811  (the imported fixture)
    """The API fixture with the CRD controller running (test_crd_controller's `served`)."""
    return served

BASE = "/apis/example.com/v1/namespaces/default/foos"
JSON_PATCH = {"content-type": "application/json-patch+json"}


def schema(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec},
        "status": {"type": "object", "properties": status or {"replicas": {"type": "integer"},
                                                              "selector": {"type": "string"}}}}}}


def crd(**version: Any) -> dict[str, Any]:
    m = crd_manifest()
    m["spec"]["versions"][0].update(version)
    return m


SCALED = {"subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                   "statusReplicasPath": ".status.replicas",
                                                   "labelSelectorPath": ".status.selector"}},
          "schema": schema({"replicas": {"type": "integer"}, "size": {"type": "integer"}})}


def foo(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": name}, "spec": spec}


def warnings(r: Any) -> list[str]:
    return [v for k, v in r.headers if k == "warning"]


# --- scale ------------------------------------------------------------------------------------

def test_scale_from_custom_resource_reads_the_paths() -> None:
    paths = ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")
    cr = {"metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7"},
          "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=x"}}
    assert scale_from_custom_resource(cr, paths) == ({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7"},
        "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=x"}}, True)
    scale, found = scale_from_custom_resource({"metadata": {"name": "a"}}, paths)
    assert not found and scale["spec"] == {} and scale["status"] == {"replicas": 0}


def test_scale_spec_validation_is_upstreams() -> None:
    paths = ScalePaths(".spec.replicas", ".status.replicas")
    assert [str(e) for e in validate_scale_spec({"spec": {"replicas": -1}}, paths)] == [
        ".spec.replicas: Invalid value: -1: should be a non-negative integer"]
    assert [str(e) for e in validate_scale_spec({"spec": {"replicas": 2**31}}, paths)] == [
        ".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"]
    assert [e.detail for e in validate_scale_spec({"spec": {"replicas": "x"}}, paths)] == [
        ".spec.replicas accessor error: x is of the type string, expected int64"]
    assert validate_scale_spec({"spec": {}}, paths) == [] and validate_scale_spec({}, None) == []


async def test_scale_subresource_reads_and_writes_the_crd_paths(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, crd(**SCALED))
    await established(api, "foos.example.com")
    legacy = (await api.get("/apis/example.com/v1")).json
    scale_res = next(r for r in legacy["resources"] if r["name"] == "foos/scale")
    assert (scale_res["group"], scale_res["version"], scale_res["kind"]) == ("autoscaling", "v1", "Scale")

    assert (await api.create(BASE, foo("a", replicas=2))).status == 201
    r = await api.call("PATCH", f"{BASE}/a/status", body={"status": {"replicas": 1, "selector": "app=a"}}, headers=MERGE)
    assert r.status == 200, r.json
    r = await api.get(f"{BASE}/a/scale")
    assert r.status == 200, r.json
    assert (r.json["kind"], r.json["apiVersion"], r.json["spec"], r.json["status"]) == (
        "Scale", "autoscaling/v1", {"replicas": 2}, {"replicas": 1, "selector": "app=a"})

    scale = copy.deepcopy(r.json)
    scale["spec"]["replicas"] = 5
    r = await api.call("PUT", f"{BASE}/a/scale", body=scale)
    assert (r.status, r.json["spec"]) == (200, {"replicas": 5}), r.json
    obj = (await api.get(f"{BASE}/a")).json
    assert (obj["spec"], obj["metadata"]["generation"]) == ({"replicas": 5}, 2)

    r = await api.call("PATCH", f"{BASE}/a/scale", body={"spec": {"replicas": 3}}, headers=MERGE)
    assert (r.status, r.json["spec"]["replicas"]) == (200, 3), r.json
    r = await api.call("PATCH", f"{BASE}/a/scale", body=[{"op": "replace", "path": "/spec/replicas", "value": 4}],
                       headers=JSON_PATCH)
    assert (r.status, (await api.get(f"{BASE}/a")).json["spec"]["replicas"]) == (200, 4)

    # a stale Scale is a conflict; a negative count is the custom resource's 422
    r = await api.call("PUT", f"{BASE}/a/scale", body=scale)
    assert r.status == 409, r.json
    r = await api.call("PATCH", f"{BASE}/a/scale", body={"spec": {"replicas": -1}}, headers=MERGE)
    assert r.status == 422 and r.json["message"] == (
        'Foo.example.com "a" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer'), r.json
    r = await api.call("PATCH", f"{BASE}/a/scale", body={"spec": {"replicas": 3}},
                       headers={"content-type": "application/strategic-merge-patch+json"})
    assert r.status == 415
    assert (await api.get(f"{BASE}/nope/scale")).status == 404
    r = await api.call("PATCH", f"{BASE}/nope/scale", body={"spec": {"replicas": 3}}, headers=MERGE)
    assert r.status == 404


async def test_scale_of_an_object_without_replicas(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, crd(**SCALED))
    await established(api, "foos.example.com")
    await api.create(BASE, foo("b"))
    r = await api.get(f"{BASE}/b/scale")
    assert (r.status, r.json["message"]) == (
        500, 'Internal error occurred: the spec replicas field ".spec.replicas" does not exist')
    r = await api.call("PATCH", f"{BASE}/b/scale", body={"metadata": {"labels": {"a": "b"}}}, headers=MERGE)
    assert (r.status, r.json["message"]) == (400, 'the spec replicas field ".spec.replicas" cannot be empty')
    r = await api.call("PATCH", f"{BASE}/b/scale", body={"spec": {"replicas": 2}}, headers=MERGE)
    assert r.status == 200 and (await api.get(f"{BASE}/b")).json["spec"] == {"replicas": 2}


async def test_no_scale_subresource_is_a_404(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, crd_manifest())
    await established(api, "foos.example.com")
    await api.create(BASE, foo("a", replicas=1))
    assert (await api.get(f"{BASE}/a/scale")).status == 404


# --- fieldValidation --------------------------------------------------------------------------

async def test_unknown_nested_fields_per_field_validation(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, crd(schema=schema({"size": {"type": "integer"},
                                              "inner": {"type": "object", "properties": {"a": {"type": "string"}}}})))
    await established(api, "foos.example.com")
    body = foo("a", size=1, bogus=True, inner={"a": "x", "b": "y"})

    r = await api.create(BASE, body, {"fieldValidation": "Strict"})
    assert (r.status, r.json["message"]) == (400, 'Foo in version "v1" cannot be handled as a Foo: strict decoding '
                                                  'error: unknown field "spec.bogus", unknown field "spec.inner.b"')
    r = await api.create(BASE, {**body, "bogus": 1}, {"fieldValidation": "Strict"})
    assert r.status == 400 and r.json["message"].endswith(
        'strict decoding error: unknown field "bogus", unknown field "spec.bogus", unknown field "spec.inner.b"')
    r = await api.create(BASE, body)                    # Warn, the default
    assert r.status == 201 and warnings(r) == ['299 - "unknown field \\"spec.bogus\\""',
                                               '299 - "unknown field \\"spec.inner.b\\""']
    assert r.json["spec"] == {"size": 1, "inner": {"a": "x"}}
    r = await api.create(BASE, {**body, "metadata": {"name": "b"}}, {"fieldValidation": "Ignore"})
    assert r.status == 201 and warnings(r) == [] and r.json["spec"] == {"size": 1, "inner": {"a": "x"}}

    r = await api.call("PATCH", f"{BASE}/a", {"fieldValidation": "Strict"}, body={"spec": {"other": 1}}, headers=MERGE)
    assert r.status == 422 and r.json["message"].endswith('": strict decoding error: unknown field "spec.other"')
    r = await api.call("PATCH", f"{BASE}/a", body={"spec": {"other": 1, "size": 2}}, headers=MERGE)
    assert r.status == 200 and warnings(r) == ['299 - "unknown field \\"spec.other\\""']
    assert r.json["spec"] == {"size": 2, "inner": {"a": "x"}}
    current = r.json
    current["spec"]["nope"] = 1
    r = await api.call("PUT", f"{BASE}/a", {"fieldValidation": "Strict"}, body=current)
    assert r.status == 400 and 'unknown field "spec.nope"' in r.json["message"]


# --- versions ---------------------------------------------------------------------------------

def two_versions() -> dict[str, Any]:
    m = crd_manifest(versions=("v1", "v2"))
    v1, v2 = m["spec"]["versions"]
    v1["schema"] = schema({"size": {"type": "integer"}, "old": {"type": "string"},
                           "shape": {"type": "string", "default": "round"}, "count": {"type": "integer"}})
    v2["schema"] = schema({"size": {"type": "integer", "default": 5}, "color": {"type": "string", "default": "red"},
                           "count": {"type": "integer", "maximum": 3}})
    v2["deprecated"] = True
    return m


async def test_each_version_prunes_and_defaults_with_its_own_schema(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, two_versions())
    await established(api, "foos.example.com")
    v2 = "/apis/example.com/v2/namespaces/default/foos"

    r = await api.create(v2, {"apiVersion": "example.com/v2", "kind": "Foo", "metadata": {"name": "a"},
                              "spec": {"old": "x"}})
    assert r.status == 201, r.json
    assert warnings(r) == ['299 - "example.com/v2 Foo is deprecated"', '299 - "unknown field \\"spec.old\\""']
    # v2's defaults on the way in; stored in v1 (v1's fields, its defaults left to reads, as
    # upstream's encoder stores them); read back as v2
    assert (r.json["apiVersion"], r.json["spec"]) == ("example.com/v2", {"size": 5})
    stored = (await api.storage.get("/registry/example.com/foos/default/a")).obj
    assert (stored["apiVersion"], stored["spec"]) == ("example.com/v1", {"size": 5})
    assert (await api.get(f"{BASE}/a")).json["spec"] == {"size": 5, "shape": "round"}

    r = await api.create(BASE, foo("b", old="y"))
    assert r.status == 201 and warnings(r) == [] and r.json["spec"] == {"old": "y", "shape": "round"}
    assert (await api.get(f"{v2}/b")).json["spec"] == {}
    crd_status = (await api.get(f"{CRDS}/foos.example.com")).json["status"]
    assert crd_status["storedVersions"] == ["v1"]

    # validated with the schema of the version it is sent in
    r = await api.create(v2, {"apiVersion": "example.com/v2", "kind": "Foo", "metadata": {"name": "c"},
                              "spec": {"count": 5}})
    assert (r.status, r.json["message"]) == (
        422, 'Foo.example.com "c" is invalid: spec.count: Invalid value: 5: spec.count in body should be less than '
             'or equal to 3'), r.json
    assert (await api.create(BASE, foo("c", count=5))).status == 201
    r = await api.call("PATCH", f"{v2}/c", body={"metadata": {"labels": {"a": "b"}}}, headers=MERGE)
    assert r.status == 200, r.json                      # ratcheting: the unchanged value stays
    r = await api.call("PATCH", f"{v2}/c", body={"spec": {"count": 6}}, headers=MERGE)
    assert r.status == 422 and "should be less than or equal to 3" in r.json["message"]


async def test_stored_objects_are_defaulted_on_read(crd_api: Any) -> None:
    """An object stored before its schema had a default reads with it (upstream's storage codec
    defaults what it decodes), in every version; the stored bytes stay as they were."""
    api = crd_api
    await api.create(CRDS, two_versions())
    await established(api, "foos.example.com")
    key = "/registry/example.com/foos/default/old"
    await api.storage.create(key, {**foo("old", size=1), "metadata": {
        "name": "old", "namespace": "default", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z"}})
    assert (await api.get(f"{BASE}/old")).json["spec"] == {"size": 1, "shape": "round"}
    assert [o["spec"] for o in (await api.get(BASE)).json["items"]] == [{"size": 1, "shape": "round"}]
    r = await api.get("/apis/example.com/v2/namespaces/default/foos/old")
    assert (r.json["apiVersion"], r.json["spec"]) == ("example.com/v2", {"size": 1})
    assert (await api.storage.get(key)).obj["spec"] == {"size": 1}


async def test_deprecation_warning_text_is_the_crds(crd_api: Any) -> None:
    api = crd_api
    m = two_versions()
    m["spec"]["versions"][1]["deprecationWarning"] = "use v1"
    await api.create(CRDS, m)
    await established(api, "foos.example.com")
    r = await api.get("/apis/example.com/v2/namespaces/default/foos")
    assert warnings(r) == ['299 - "use v1"']
    assert warnings(await api.get(BASE)) == []


# --- selectableFields -------------------------------------------------------------------------

async def test_selectable_fields_filter_lists(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, crd(schema=schema({"color": {"type": "string"}, "size": {"type": "integer"},
                                              "on": {"type": "boolean"}}),
                               selectableFields=[{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"},
                                                 {"jsonPath": ".spec.on"}]))
    await established(api, "foos.example.com")
    await api.create(BASE, foo("a", color="red", size=1, on=True))
    await api.create(BASE, foo("b", color="blue", size=2))
    await api.create(BASE, foo("c"))

    async def names(selector: str) -> Any:
        r = await api.get(BASE, {"fieldSelector": selector})
        return [o["metadata"]["name"] for o in r.json["items"]] if r.status == 200 else (r.status, r.json["message"])
    assert await names("spec.color=red") == ["a"]
    assert await names("spec.color!=red") == ["b", "c"]
    assert await names("spec.size=2,metadata.name=b") == ["b"]
    assert await names("spec.on=true") == ["a"]
    assert await names("spec.color=") == ["c"]
    assert await names("metadata.namespace=default") == ["a", "b", "c"]
    assert await names("spec.other=x") == (400, "field label not supported: spec.other")


async def test_cluster_scoped_kinds_have_no_namespace_field(crd_api: Any) -> None:
    api = crd_api
    await api.create(CRDS, crd_manifest("bars", "Bar", scope="Cluster"))
    await established(api, "bars.example.com")
    r = await api.get("/apis/example.com/v1/bars", {"fieldSelector": "metadata.namespace=x"})
    assert (r.status, r.json["message"]) == (400, "field label not supported: metadata.namespace")
    r = await api.get("/apis/example.com/v1/bars", {"fieldSelector": "metadata.name=x"})
    assert (r.status, r.json["items"]) == (200, [])


SF_SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {
    "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
    "spec": {"type": "object", "properties": {
        "color": {"type": "string"}, "size": {"type": "integer"}, "on": {"type": "boolean"},
        "ratio": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}
P = "spec.versions[0].selectableFields"


@pytest.mark.parametrize("paths, expected", [
    ([".spec.color", ".spec.size", ".spec.on"], []),
    ([""], [f"{P}[0].jsonPath: Required value"]),
    ([".spec.nope"], [f'{P}[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field']),
    (['.spec.labels["a"]'], [f"{P}[0].jsonPath: Invalid value: \".spec.labels[\\\"a\\\"]\": is an invalid path: "
                             "array notation is not allowed"]),
    ([".spec.ratio"], [f'{P}[0].jsonPath: Invalid value: ".spec.ratio": must point to a field of type string, boolean '
                       'or integer. Enum string fields and strings with formats are allowed.']),
    ([".metadata.name"], [f'{P}[0].jsonPath: Invalid value: ".metadata.name": must not point to fields in metadata']),
    ([".spec.color", ".spec.color"], [f'{P}[1].jsonPath: Duplicate value: ".spec.color"']),
])
def test_selectable_fields_validation_is_upstreams(paths: list[str], expected: list[str]) -> None:
    from kubeplane.api.validation.apiextensions import validate_custom_resource_definition
    from kubeplane.apiserver.apiextensions import schema as crd_schema
    m = crd_manifest()
    m["spec"]["versions"][0]["schema"] = SF_SCHEMA
    m["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": p} if p else {} for p in paths]
    errs = validate_custom_resource_definition(m, crd_schema.validate_crd_schema)
    assert [str(e) for e in errs if ".selectableFields" in e.field] == expected


def test_at_most_eight_selectable_fields() -> None:
    from kubeplane.apiserver.apiextensions.selectable import validate_selectable_fields
    props = {f"f{i}": {"type": "string"} for i in range(9)}
    v = {"schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}},
         "selectableFields": [{"jsonPath": f".spec.f{i}"} for i in range(9)]}
    assert [str(e) for e in validate_selectable_fields(v, "v")] == [
        "v.selectableFields: Too many: 9: must have at most 8 items"]
