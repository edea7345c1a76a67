"""What OpenAPI v3 publishes of a CRD version's schema, from upstream's builder table
(controller/openapi/builder/builder_test.go TestNewBuilder, its v3 rows: the meta fields'
descriptions wiped as there), and in the served document: properties under a root that
preserves unknown fields, the root's required and x-kubernetes-validations, value
validations, and what a structural schema does not keep (example, externalDocs)."""
from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest

from kubeplane.apiserver import openapi
from kubeplane.apiserver.apiextensions.customresource import openapi_v3

from .test_crd_openapi import CRD, GROUP, cs, eventually, v3  # noqa: F401  (its fixture)

META_REF = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
GVK = [{"group": "bar.k8s.io", "kind": "Foo", "version": "v1"}]


def built(schema: str) -> dict[str, Any]:
    """The builder's schema with the meta fields' descriptions wiped (as upstream's test does)."""
    got = openapi_v3("bar.k8s.io", "v1", "Foo", json.loads(schema))
    for f in ("kind", "apiVersion", "metadata"):
        got["properties"][f] = {k: v for k, v in got["properties"][f].items() if k != "description"}
    return got


def wanted(s: str) -> dict[str, Any]:
    return json.loads(s.replace("#/definitions/", "#/$defs/"))


META = '"apiVersion":{"type":"string"},"kind":{"type":"string"},' \
       '"metadata":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}'
GVK_JSON = '"x-kubernetes-group-version-kind":[{"group":"bar.k8s.io","kind":"Foo","version":"v1"}]'


@pytest.mark.parametrize(("schema", "want"), [
    ('{"type":"object","properties":{"spec":{"type":"object"},"status":{"type":"object"}}}',
     '{"type":"object","properties":{' + META + ',"spec":{"type":"object"},"status":{"type":"object"}},'
     + GVK_JSON + '}'),
    ('{"type":"object"}', '{"type":"object","properties":{' + META + '},' + GVK_JSON + '}'),
    ('{"type":"object","x-kubernetes-preserve-unknown-fields":true}',
     '{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{' + META + '},' + GVK_JSON + '}'),
], ids=["with properties", "type only", "preserve unknown at root v3"])
def test_builder_rows(schema: str, want: str) -> None:
    assert built(schema) == wanted(want)


EXTENSIONS = '''{"type":"object", "properties": {
  "int-or-string-1": {"x-kubernetes-int-or-string": true, "anyOf": [{"type":"integer"}, {"type":"string"}]},
  "int-or-string-2": {"x-kubernetes-int-or-string": true,
                      "allOf": [{"anyOf": [{"type":"integer"}, {"type":"string"}]}, {"anyOf": [{"minimum": 42.0}]}]},
  "int-or-string-3": {"x-kubernetes-int-or-string": true, "anyOf": [{"type":"integer"}, {"type":"string"}],
                      "allOf": [{"anyOf": [{"minimum": 42.0}]}]},
  "int-or-string-4": {"x-kubernetes-int-or-string": true, "anyOf": [{"minimum": 42.0}]},
  "int-or-string-5": {"x-kubernetes-int-or-string": true, "anyOf": [{"minimum": 42.0}], "allOf": [{"minimum": 42.0}]},
  "int-or-string-6": {"x-kubernetes-int-or-string": true},
  "preserve-unknown-fields": {"x-kubernetes-preserve-unknown-fields": true},
  "embedded-object": {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                      "type": "object"}}}'''
EXTENSIONS_V3 = '''{"type":"object", "properties": {''' + META + ''',
  "int-or-string-1": {"x-kubernetes-int-or-string": true, "anyOf": [{"type":"integer"}, {"type":"string"}]},
  "int-or-string-2": {"x-kubernetes-int-or-string": true,
                      "allOf": [{"anyOf": [{"type":"integer"}, {"type":"string"}]}, {"anyOf": [{"minimum": 42.0}]}]},
  "int-or-string-3": {"x-kubernetes-int-or-string": true, "anyOf": [{"type":"integer"}, {"type":"string"}],
                      "allOf": [{"anyOf": [{"minimum": 42.0}]}]},
  "int-or-string-4": {"x-kubernetes-int-or-string": true,
                      "allOf": [{"anyOf": [{"type":"integer"}, {"type":"string"}]}], "anyOf": [{"minimum": 42.0}]},
  "int-or-string-5": {"x-kubernetes-int-or-string": true, "anyOf": [{"minimum": 42.0}],
                      "allOf": [{"anyOf": [{"type":"integer"}, {"type":"string"}]}, {"minimum": 42.0}]},
  "int-or-string-6": {"x-kubernetes-int-or-string": true, "anyOf": [{"type":"integer"}, {"type":"string"}]},
  "preserve-unknown-fields": {"x-kubernetes-preserve-unknown-fields": true},
  "embedded-object": {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
    "type": "object", "required":["kind","apiVersion"],
    "properties":{
      "apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},
      "kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},
      "metadata":{"description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata","$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}}},
  ''' + GVK_JSON + '}'


def test_builder_with_extensions_as_v3_schema() -> None:
    assert built(EXTENSIONS) == wanted(EXTENSIONS_V3)


def test_the_structural_schema_keeps_validations_and_drops_the_rest() -> None:
    root = {"type": "object", "required": ["spec"], "description": "d", "example": {"spec": {}},
            "x-kubernetes-validations": [{"rule": "self.spec.a < 10", "message": "small"}],
            "properties": {"spec": {"type": "object", "externalDocs": {"url": "https://x"}, "minProperties": 1,
                                    "properties": {"a": {"type": "integer", "maximum": 5, "default": 1,
                                                         "nullable": True}}}}}
    got = openapi_v3("bar.k8s.io", "v1", "Foo", root)
    assert got["required"] == ["spec"] and got["description"] == "d" and "example" not in got
    assert got["x-kubernetes-validations"] == [{"rule": "self.spec.a < 10", "message": "small"}]
    assert got["properties"]["spec"] == {"type": "object", "minProperties": 1, "properties": {
        "a": {"type": "integer", "maximum": 5, "default": 1, "nullable": True}}}


async def test_the_served_document_publishes_them(cs: Any) -> None:  # noqa: F811
    changed = copy.deepcopy(CRD)
    root = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root.update({"x-kubernetes-preserve-unknown-fields": True, "required": ["spec"],
                 "x-kubernetes-validations": [{"rule": "has(self.spec)", "message": "spec please"}]})
    await cs.apiextensions_v1().customresourcedefinitions().patch(
        f"crontabs.{GROUP}", {"spec": {"versions": changed["spec"]["versions"]}}, "merge")

    def published() -> Any:
        doc = v3()
        obj = doc["components"]["schemas"]["com.example.docs.v1.CronTab"] if doc else {}
        return obj if obj.get("x-kubernetes-preserve-unknown-fields") else None
    obj = await eventually(published, "the changed schema")
    assert obj["required"] == ["spec"]
    assert obj["x-kubernetes-validations"] == [{"rule": "has(self.spec)", "message": "spec please"}]
    assert obj["properties"]["spec"]["properties"]["cronSpec"] == {"type": "string", "description": "When to run."}
    assert obj["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert openapi.openapi_document(f"apis/{GROUP}/v1") == orjson.dumps(v3(), option=orjson.OPT_SORT_KEYS)
