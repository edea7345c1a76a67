"""Structural schema rules: upstream's TestValidateStructuralCompleteness and
TestValidateStructuralMetadataInvariants/TestValidateNestedValueValidationComplete properties
(apiextensions-apiserver pkg/apiserver/schema/validation_test.go), plus the invariants' messages."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.schema import structural_from, validate_structural

P = "spec.versions[0].schema.openAPIV3Schema"


def msgs(schema: dict[str, Any], path: str = "") -> list[str]:
    return [str(e) for e in validate_structural(structural_from(schema), path)]


@pytest.mark.parametrize("name,schema,error", [
    ("disallowed properties valuevalidation, additional properties structure",
     {"additionalProperties": {"type": "object", "properties": {"bar": {"type": "string"}}},
      "allOf": [{"properties": {"foo": {"minLength": 2}}}]},
     "properties[foo]: Required value: because it is defined in allOf[0].properties[foo]"),
    ("allowed property in valuevalidation, and in structure",
     {"properties": {"foo": {"type": "string"}}, "allOf": [{"properties": {"foo": {"minLength": 2}}}]}, ""),
    ("disallowed property in valuevalidation, and in structure",
     {"properties": {"foo": {"type": "string"}}, "allOf": [{"properties": {"notfoo": {"minLength": 2}}}]},
     "properties[notfoo]: Required value: because it is defined in allOf[0].properties[notfoo]"),
    ("allowed items in valuevalidation, and in structure",
     {"type": "array", "items": {"type": "string"}, "allOf": [{"items": {"minLength": 2}}]}, ""),
    ("disallowed items in valuevalidation, and not in structure",
     {"type": "object", "properties": {"foo": {"type": "string"}}, "allOf": [{"items": {"minLength": 2}}]},
     "items: Required value: because it is defined in allOf[0].items"),
])
def test_validate_structural_completeness(name: str, schema: dict[str, Any], error: str) -> None:
    got = msgs(schema)
    if error:
        assert error in got
    else:
        assert not [m for m in got if "because it is defined in" in m]


@pytest.mark.parametrize("type_name", ["object", "array", "number", "integer", "boolean", "string"])
def test_metadata_must_be_object(type_name: str) -> None:
    got = msgs({"type": "object", "properties": {"metadata": {"type": type_name}}})
    assert ('properties[metadata].type: Invalid value: "%s": must be object' % type_name in got) == (type_name != "object")


@pytest.mark.parametrize("prop", ["name", "generateName", "namespace", "labels", "annotations", "uid", "finalizers"])
def test_metadata_only_name_and_generate_name(prop: str) -> None:
    got = msgs({"type": "object", "properties": {"metadata": {"type": "object", "properties": {prop: {"type": "string"}}}}})
    forbidden = ("properties[metadata]: Forbidden: must not specify anything other than name and generateName, "
                 "but metadata is implicitly specified")
    assert (forbidden in got) == (prop not in ("name", "generateName"))


def test_metadata_default_is_not_a_structural_error() -> None:
    """A default on metadata is API validation's ("must not be set in top-level metadata")."""
    assert msgs({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}}) == []


@pytest.mark.parametrize("field,value,message", [
    ("type", "string", "type: Forbidden: must be empty to be structural"),
    ("default", 42, "default: Forbidden: must be undefined to be structural"),
    ("title", "t", "title: Forbidden: must be empty to be structural"),
    ("description", "d", "description: Forbidden: must be empty to be structural"),
    ("nullable", True, "nullable: Forbidden: must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", True,
     "x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural"),
    ("x-kubernetes-embedded-resource", True, "x-kubernetes-embedded-resource: Forbidden: must be false to be structural"),
    ("x-kubernetes-int-or-string", True, "x-kubernetes-int-or-string: Forbidden: must be false to be structural"),
    ("x-kubernetes-list-map-keys", ["a"], "x-kubernetes-list-map-keys: Forbidden: must be empty to be structural"),
    ("x-kubernetes-list-type", "set", "x-kubernetes-list-type: Forbidden: must be undefined to be structural"),
    ("x-kubernetes-map-type", "atomic", "x-kubernetes-map-type: Forbidden: must be undefined to be structural"),
    ("x-kubernetes-validations", [{"rule": "true"}], "x-kubernetes-validations: Forbidden: must be empty to be structural"),
    ("additionalProperties", {"minLength": 1}, "additionalProperties: Forbidden: must be undefined to be structural"),
    ("externalDocs", {"url": "x"}, None),
    ("example", 1, None),
])
def test_nested_value_validation_forbids_skeleton_fields(field: str, value: Any, message: str | None) -> None:
    got = msgs({"type": "object", "properties": {"a": {"type": "object"}}, "anyOf": [{field: value}]}, P)
    nested = [m for m in got if m.startswith(f"{P}.anyOf[0].")]
    assert nested == ([f"{P}.anyOf[0].{message}"] if message else [])


@pytest.mark.parametrize("schema,expected", [
    ({}, ["type: Required value: must not be empty at the root"]),
    ({"type": "string"}, ['type: Invalid value: "string": must be object at the root']),
    ({"type": "object", "properties": {"a": {}}}, ["properties[a].type: Required value: must not be empty for specified object fields"]),
    ({"type": "object", "properties": {"a": {"type": "array"}}}, ["properties[a].items: Required value: must be specified"]),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {}}}},
     ["properties[a].items.type: Required value: must not be empty for specified array items"]),
    ({"type": "object", "additionalProperties": {"type": "string"}},
     ["additionalProperties: Forbidden: must not be used at the root"]),
    ({"type": "object", "properties": {"a": {"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}}},
     ["properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true"]),
    ({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-embedded-resource": True}}},
     ["properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true "
      "without x-kubernetes-preserve-unknown-fields"]),
    ({"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True}}},
     ["properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
      "x-kubernetes-int-or-string is true"]),
    ({"type": "object", "properties": {"kind": {"type": "integer"}}},
     ['properties[kind].type: Invalid value: "integer": must be string']),
    ({"type": "object", "properties": {"a": {"type": "object", "anyOf": [{"properties": {"metadata": {}}}],
                                             "properties": {"metadata": {"type": "object"}}}}},
     ["properties[a].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"]),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
     ['properties[a].pattern: Invalid value: "(": must be a valid regular expression, but isn\'t: '
      "error parsing regexp: missing closing ): `(`"]),
])
def test_invariants(schema: dict[str, Any], expected: list[str]) -> None:
    assert msgs(schema) == expected


def test_int_or_string_patterns_are_structural() -> None:
    """Upstream's two IntOrString exceptions: anyOf [integer, string], and the same as allOf[0]."""
    any_of = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
    all_of = {"x-kubernetes-int-or-string": True,
              "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^a"}]}
    assert msgs({"type": "object", "properties": {"a": any_of, "b": all_of}}) == []
    other = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert msgs({"type": "object", "properties": {"a": other}}) == [
        "properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
        "properties[a].anyOf[1].type: Forbidden: must be empty to be structural"]


def test_conversion_errors_are_reported_not_raised() -> None:
    errs = validate_structural({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, P)
    assert [str(e) for e in errs] == [f"{P}: Invalid value: \"\": OpenAPIV3Schema '$ref' is not supported"]


@pytest.mark.parametrize("garbage", [None, 5, "x", [], {"type": 5, "properties": "x", "items": 3, "required": "a"},
                                     {"properties": {"a": None, "b": [1]}, "allOf": [None, 1], "enum": 7}])
def test_garbage_does_not_crash(garbage: Any) -> None:
    s = structural_from(garbage)
    validate_structural(s, P)
