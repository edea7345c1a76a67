"""Pruning: upstream's TestPrune table (apiextensions-apiserver pkg/apiserver/schema/pruning/
algorithm_test.go), schemas written as the JSONSchemaProps they come from."""
from __future__ import annotations

import json
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.schema import prune, structural_from

OBJ = {"type": "object"}

NESTED_PRESERVE_JSON = """
{
  "unspecified":"bar", "alpha": "abc", "beta": 42.0, "unspecifiedObject": {"unspecified": "bar"},
  "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
              "pruning": {"unspecified": "bar"}, "apiVersion": "unknown", "preserving": {"unspecified": "bar"}},
  "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {"unspecified": "bar"},
                 "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo":true},{"bar":true}]},
  "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
     "foo": {"specified": {"unspecified":"bar"}, "unspecified": "bar"}},
  "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {"unspecified":"bar"}, "unspecified": "bar"}}
}"""
NESTED_PRESERVE_SCHEMA = {
    "type": "object", "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "alpha": {"type": "string"}, "beta": {"type": "number"},
        "pruning": {"type": "object", "properties": {
            "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "pruning": OBJ}},
        "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": True},
            "pruning": OBJ}},
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "additionalProperties": {"type": "object", "properties": {"specified": OBJ}}},
        "preservingAdditionalPropertiesKeyPruneValues": {
            "type": "object", "additionalProperties": {"type": "object", "properties": {"specified": OBJ}}},
    }}
NESTED_PRESERVE_EXPECTED = """
{
  "unspecified":"bar", "alpha": "abc", "beta": 42.0, "unspecifiedObject": {"unspecified": "bar"},
  "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
  "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {},
                 "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo":true},{"bar":true}]},
  "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
  "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}
}"""

EMBEDDED = {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
            "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {"unspecified": "bar"}}


def _embedded(**extra: Any) -> dict[str, Any]:
    return json.loads(json.dumps({**EMBEDDED, **extra}))


EMBEDDED_JSON = json.dumps({
    "apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"},
    "unspecified": "bar", "pruned": _embedded(), "preserving": _embedded(),
    "nested": _embedded(spec={"unspecified": "bar", "embedded": _embedded()})})
EMBEDDED_SCHEMA = {"type": "object", "properties": {
    "pruned": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": OBJ}},
    "preserving": {"type": "object", "x-kubernetes-embedded-resource": True,
                   "x-kubernetes-preserve-unknown-fields": True},
    "nested": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {
        "type": "object", "properties": {"embedded": {
            "type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": OBJ}}}}}},
}}
PRUNED_EMBEDDED = {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"},
                   "spec": {}}

CASES: list[tuple[str, str, bool, dict[str, Any] | None, str, list[str]]] = [
    ("empty", "null", False, None, "null", []),
    ("scalar", "4", False, {}, "4", []),
    ("scalar array", "[1,2]", False, {"items": {}}, "[1,2]", []),
    ("object array", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', False,
     {"items": {"properties": {"a": {}, "c": {}}}}, '[{"a":1},{},{"a":1,"c":3}]', ["[1].b", "[2].b"]),
    ("object array with nil schema", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', False, None, "[{},{},{}]",
     ["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"]),
    ("object array object",
     '{"array":[{"a":1},{"b":1},{"a":1,"b":2,"c":3}],"unspecified":{"a":1},"specified":{"a":1,"b":2,"c":3}}', False,
     {"properties": {"array": {"items": {"properties": {"a": {}, "c": {}}}},
                     "specified": {"properties": {"a": {}, "c": {}}}}},
     '{"array":[{"a":1},{},{"a":1,"c":3}],"specified":{"a":1,"c":3}}',
     ["array[1].b", "array[2].b", "specified.b", "unspecified"]),
    ("nested x-kubernetes-preserve-unknown-fields", NESTED_PRESERVE_JSON, False, NESTED_PRESERVE_SCHEMA,
     NESTED_PRESERVE_EXPECTED,
     ["preserving.pruning.unspecified", "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
      "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
      "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
      "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
      "pruning.apiVersion", "pruning.pruning.unspecified", "pruning.unspecified", "pruning.unspecifiedObject"]),
    ("additionalProperties with schema", '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1}}}', False,
     {"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}},
     '{"a":1,"c":{"a":1,"b":2,"c":{}}}', ["b", "c.c.a"]),
    ("additionalProperties with bool", '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1, "apiVersion": "unknown"}}}', False,
     {"properties": {"a": {}, "c": {"additionalProperties": False}}},
     '{"a":1,"c":{"a":1,"b":2,"c":{}}}', ["b", "c.c.a", "c.c.apiVersion"]),
    ("x-kubernetes-embedded-resource", EMBEDDED_JSON, False, EMBEDDED_SCHEMA,
     json.dumps({"pruned": PRUNED_EMBEDDED, "preserving": _embedded(),
                 "nested": {**PRUNED_EMBEDDED, "spec": {"embedded": PRUNED_EMBEDDED}}}),
     ["nested.spec.embedded.spec.unspecified", "nested.spec.embedded.unspecified", "nested.spec.unspecified",
      "nested.unspecified", "pruned.spec.unspecified", "pruned.unspecified", "unspecified"]),
    ("x-kubernetes-embedded-resource, with root=true", EMBEDDED_JSON, True, EMBEDDED_SCHEMA,
     json.dumps({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"},
                 "pruned": PRUNED_EMBEDDED, "preserving": _embedded(),
                 "nested": {**PRUNED_EMBEDDED, "spec": {"embedded": PRUNED_EMBEDDED}}}),
     ["nested.spec.embedded.spec.unspecified", "nested.spec.embedded.unspecified", "nested.spec.unspecified",
      "nested.unspecified", "pruned.spec.unspecified", "pruned.unspecified", "unspecified"]),
]


@pytest.mark.parametrize("name,in_json,is_root,schema,expected_json,expected_pruned", CASES, ids=[c[0] for c in CASES])
def test_prune(name: str, in_json: str, is_root: bool, schema: dict[str, Any] | None, expected_json: str,
               expected_pruned: list[str]) -> None:
    obj = json.loads(in_json)
    s = structural_from(schema) if schema is not None else None
    pruned = prune(obj, s, is_root)  # type: ignore[arg-type]
    assert obj == json.loads(expected_json)
    assert pruned == sorted(expected_pruned)


def test_custom_object_root_keeps_type_meta_and_metadata() -> None:
    """At the resource root apiVersion, kind and metadata are never pruned (the registry
    handles metadata), whatever the schema says."""
    s = structural_from({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {}}}}})
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {"a": "b"}},
           "spec": {"a": 1, "b": 2}, "status": {"c": 3}}
    assert prune(obj, s) == ["spec.b", "status"]
    assert obj == {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {"a": 1}}


def test_deeply_nested_unspecified_value() -> None:
    """An unspecified value nested as deep as a JSON decoder allows is pruned without recursion."""
    s = structural_from({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": True}}})
    deep: Any = {"x": 1}
    for _ in range(5000):
        deep = [deep]
    obj = {"m": {"k": deep}}
    prune(obj, s)
    inner = obj["m"]["k"]
    for _ in range(5000):
        inner = inner[0]
    assert inner == {}
