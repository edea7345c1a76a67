"""fieldValidation on patches and server-side apply of custom objects, from upstream's table
(test/integration/apiserver/field_validation_test.go: testFieldValidationPatchCRD,
testFieldValidationApplyCreateCRD/ApplyUpdateCRD, with their bodies and CRD schema).

A patch's own strict errors (duplicate keys, unknown JSON patch op fields) come first, then the
patched object's unknown fields; Warn makes them warnings, Strict one 422 naming the patched
object (upstream: handlers/patch.go). Server-side apply refuses unknown fields whatever
fieldValidation says (the typed patch object), and reports duplicate keys per fieldValidation.
"""
from __future__ import annotations

from typing import Any

import pytest

from .test_crd_controller import CRDS, established, served  # noqa: F401  (its fixture)
from .test_customresource_serving import BASE, crd, schema, warnings

APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# Upstream: crdSchemaBase (its spec; the pattern left out).
SPEC = {"cronSpec": {"type": "string"}, "knownField1": {"type": "string"},
        "ports": {"type": "array", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                  "x-kubernetes-list-type": "map",
                  "items": {"type": "object", "required": ["containerPort", "protocol"], "properties": {
                      "containerPort": {"type": "integer", "format": "int32"}, "hostIP": {"type": "string"},
                      "hostPort": {"type": "integer", "format": "int32"}, "name": {"type": "string"},
                      "protocol": {"type": "string"}}}}}

MERGE_BODY = '''{
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "knownField1": "val1",
    "knownField1": "val2",
      "ports": [{
        "name": "portName",
        "containerPort": 8080,
        "protocol": "TCP",
        "hostPort": 8081,
        "hostPort": 8082,
        "unknownNested": "val"
      }]
  }
}'''
JSON_PATCH_BODY = '''[
  {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo": "bar"},
  {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val2"},
  {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe"},
  {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe2"},
  {"op": "add", "path": "/spec/knownField1", "value": "val1"},
  {"op": "add", "path": "/spec/knownField1", "value": "val2"},
  {"op": "add", "path": "/spec/ports/0/name", "value": "portName"},
  {"op": "add", "path": "/spec/ports/0/containerPort", "value": 8080},
  {"op": "add", "path": "/spec/ports/0/protocol", "value": "TCP"},
  {"op": "add", "path": "/spec/ports/0/hostPort", "value": 8081},
  {"op": "add", "path": "/spec/ports/0/hostPort", "value": 8082},
  {"op": "add", "path": "/spec/ports/0/unknownNested", "value": "val"}
]'''
# Upstream: patchYAMLBody.
CREATE_YAML = '''
apiVersion: example.com/v1
kind: Foo
metadata:
  name: %s
  finalizers:
  - test-finalizer
spec:
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP
'''
MERGE_PROBLEMS = ['duplicate field "unknownDupe"', 'duplicate field "knownField1"', 'duplicate field "hostPort"',
                  'unknown field "spec.ports[0].unknownNested"', 'unknown field "spec.unknown1"',
                  'unknown field "spec.unknownDupe"']
JSON_PATCH_PROBLEMS = ['json patch unknown field "foo"', 'json patch duplicate field "path"',
                       'unknown field "spec.ports[0].unknownNested"', 'unknown field "spec.unknown1"',
                       'unknown field "spec.unknown3"', 'unknown field "spec.unknownDupe"']


def warning_texts(r: Any) -> list[str]:
    return [w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"') for w in warnings(r)]


@pytest.fixture
async def foos(served: Any) -> Any:  # noqa: F811  (the imported fixture)
    await served.create(CRDS, crd(schema=schema(SPEC)))
    await established(served, "foos.example.com")
    return served


CASES = [(patch_type, body, mode, problems)
         for patch_type, body, problems in ((MERGE, MERGE_BODY, MERGE_PROBLEMS),
                                            (JSON_PATCH, JSON_PATCH_BODY, JSON_PATCH_PROBLEMS))
         for mode in ("Strict", "Warn", "Ignore", "")]


@pytest.mark.parametrize(("patch_type", "body", "mode", "problems"), CASES)
async def test_patch_field_validation_is_upstreams(foos: Any, patch_type: str, body: str, mode: str,
                                                   problems: list[str]) -> None:
    api, name = foos, "p"
    r = await api.call("PATCH", f"{BASE}/{name}", {"fieldManager": "apply_test"}, body=CREATE_YAML % name,
                       headers=APPLY)
    assert r.status == 201, r.json
    query = {"fieldValidation": mode} if mode else {}
    r = await api.call("PATCH", f"{BASE}/{name}", query, body=body, headers={"content-type": patch_type})
    if mode == "Strict":
        assert r.status == 422 and r.json["reason"] == "Invalid", r.json
        msg = r.json["message"]
        assert msg.startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"example.com/v1\\",'
                              '\\"kind\\":\\"Foo\\",\\"metadata\\":{'), msg
        assert msg.endswith('}": strict decoding error: ' + ", ".join(problems)), msg
        assert r.json["details"]["causes"][0]["field"] == "patch"
        assert (await api.get(f"{BASE}/{name}")).json["spec"] == {
            "cronSpec": "* * * * */5", "ports": [{"name": "x", "containerPort": 80, "protocol": "TCP"}]}
        return
    assert r.status == 200, r.json
    assert warning_texts(r) == ([] if mode == "Ignore" else problems)
    assert r.json["spec"]["knownField1"] == "val2" and "unknown1" not in r.json["spec"]


async def test_a_strict_patch_of_a_built_in_kind_is_invalid_too(served: Any) -> None:  # noqa: F811
    api = served
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert (await api.create("/api/v1/namespaces/default/configmaps", cm)).status == 201
    r = await api.call("PATCH", "/api/v1/namespaces/default/configmaps/c", {"fieldValidation": "Strict"},
                       body='{"bogus": 1, "data": {"a": "c"}}', headers={"content-type": MERGE})
    assert r.status == 422 and r.json["message"].endswith('": strict decoding error: unknown field "bogus"')
    r = await api.call("PATCH", "/api/v1/namespaces/default/configmaps/c", {"fieldValidation": "Strict"},
                       body='{"bogus": 1}', headers={"content-type": "application/strategic-merge-patch+json"})
    assert (r.status, r.json["message"]) == (
        422, ' "" is invalid: patch: Invalid value: "map[bogus:1]": strict decoding error: unknown field "bogus"')


# Upstream: crdApplyInvalidBody / crdApplyValidBody (JSON sent as apply YAML, from a new line).
APPLY_INVALID = '''
{
  "apiVersion": "example.com/v1",
  "kind": "Foo",
  "metadata": {
    "name": "%s"
  },
  "spec": {
    "knownField1": "val1",
    "knownField1": "val2",
    "ports": [{
      "name": "portName",
      "containerPort": 8080,
      "protocol": "TCP",
      "hostPort": 8081,
      "hostPort": 8082
    }]
  }
}'''
APPLY_VALID = APPLY_INVALID.replace('"knownField1": "val1",\n    ', "").replace('"hostPort": 8081,\n      ', "")


@pytest.mark.parametrize("update", [False, True])
@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore", ""])
async def test_apply_duplicate_fields_per_field_validation(foos: Any, mode: str, update: bool) -> None:
    api, name = foos, f"a{mode.lower()}"
    query = {"fieldManager": "mgr", **({"fieldValidation": mode} if mode else {})}
    if update:
        r = await api.call("PATCH", f"{BASE}/{name}", query, body=APPLY_VALID % name, headers=APPLY)
        assert r.status == 201 and warning_texts(r) == [], r.json
    r = await api.call("PATCH", f"{BASE}/{name}", query, body=APPLY_INVALID % name, headers=APPLY)
    if mode == "Strict":
        assert r.status == 400, r.json
        assert 'key "knownField1" already set in map' in r.json["message"]
        assert 'key "hostPort" already set in map' in r.json["message"]
        return
    assert r.status in (200, 201), r.json
    expected = ['line 10: key "knownField1" already set in map', 'line 16: key "hostPort" already set in map']
    assert warning_texts(r) == ([] if mode == "Ignore" else expected)


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore"])
async def test_apply_refuses_unknown_nested_fields_whatever_field_validation(foos: Any, mode: str) -> None:
    """Upstream's table leaves unknown fields out of apply: "even prior to server-side
    validation, unknown fields were treated as errors in apply-patch"."""
    api = foos
    body = {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "u"},
            "spec": {"knownField1": "a", "bogus": 1, "ports": [{"containerPort": 1, "protocol": "TCP", "x": 2}]}}
    r = await api.call("PATCH", f"{BASE}/u", {"fieldManager": "m", "fieldValidation": mode}, body=body, headers=APPLY)
    assert (r.status, r.json["message"]) == (400, (
        "failed to create typed patch object (/u; example.com/v1, Kind=Foo): errors:\n"
        "  .spec.bogus: field not declared in schema\n"
        '  .spec.ports[containerPort=1,protocol="TCP"].x: field not declared in schema'))
    assert (await api.get(f"{BASE}/u")).status == 404


async def test_apply_keeps_unknown_fields_where_the_schema_preserves_them(served: Any) -> None:  # noqa: F811
    """Upstream's type converter gives a node with x-kubernetes-preserve-unknown-fields a
    deduced element type: undeclared fields under it are applied (and owned), not refused."""
    api = served
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}}
    await api.create(CRDS, crd(schema=schema({"free": free})))
    await established(api, "foos.example.com")
    body = {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"},
            "spec": {"free": {"a": "x", "b": {"c": 1}}}}
    r = await api.call("PATCH", f"{BASE}/f", {"fieldManager": "m", "fieldValidation": "Strict"}, body=body,
                       headers=APPLY)
    assert r.status == 201, r.json
    assert r.json["spec"] == {"free": {"a": "x", "b": {"c": 1}}}
    assert r.json["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:spec": {"f:free": {"f:a": {}, "f:b": {".": {}, "f:c": {}}}}}
    body["spec"]["bogus"] = 1                       # spec itself preserves nothing
    r = await api.call("PATCH", f"{BASE}/f", {"fieldManager": "m"}, body=body, headers=APPLY)
    assert r.status == 400 and ".spec.bogus: field not declared in schema" in r.json["message"]
