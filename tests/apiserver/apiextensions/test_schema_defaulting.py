"""Defaulting: upstream's TestDefault and TestPruneNonNullableNullsWithoutDefaults tables
(apiextensions-apiserver pkg/apiserver/schema/defaulting/algorithm_test.go, prunenulls_test.go)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.schema import default, prune_non_nullable_nulls_without_defaults, structural_from
from kubeplane.apiserver.apiextensions.schema.openapi import go_deep_equal


def d(v: Any, **kw: Any) -> dict[str, Any]:
    return {"default": v, **kw}


DEFAULT_CASES: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("empty", "null", None, "null"),
    ("scalar", "4", d("foo"), "4"),
    ("scalar array", "[1,2]", {"items": d("foo")}, "[1,2]"),
    ("object array", '[{"a":1},{"b":1},{"c":1}]',
     {"items": {"properties": {"a": d("A"), "b": d("B"), "c": d("C")}}},
     '[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]'),
    ("object array object",
     '{"array":[{"a":1},{"b":2}],"object":{"a":1},"additionalProperties":{"x":{"a":1},"y":{"b":2}}}',
     {"properties": {"array": {"items": {"properties": {"a": d("A"), "b": d("B")}}},
                     "object": {"properties": {"a": d("N"), "b": d("O")}},
                     "additionalProperties": {"additionalProperties": {"properties": {"a": d("alpha"), "b": d("beta")}}},
                     "foo": d("bar")}},
     '{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},'
     '"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}'),
    ("empty and null", '[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]',
     {"items": {"properties": {"a": d("A")}}},
     '[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]'),
    ("null in nullable list", "[null]", {"nullable": True, "items": {"properties": {"a": d("A")}}}, "[null]"),
    ("null in non-nullable list", "[null]", {"items": d("A")}, '["A"]'),
    ("null in nullable object", '{"a": null}', {"properties": {"a": d("A", nullable=True)}}, '{"a": null}'),
    ("null in non-nullable object", '{"a": null}', {"properties": {"a": d("A")}}, '{"a": "A"}'),
    ("null in nullable object with additionalProperties", '{"a": null}',
     {"additionalProperties": d("A", nullable=True)}, '{"a": null}'),
    ("null in non-nullable object with additionalProperties", '{"a": null}',
     {"additionalProperties": d("A")}, '{"a": "A"}'),
    ("null unknown field", '{"a": null}', {"additionalProperties": True}, '{"a": null}'),
]


@pytest.mark.parametrize("name,in_json,schema,expected", DEFAULT_CASES, ids=[c[0] for c in DEFAULT_CASES])
def test_default(name: str, in_json: str, schema: dict[str, Any] | None, expected: str) -> None:
    obj = json.loads(in_json)
    default(obj, structural_from(schema) if schema is not None else None)
    assert go_deep_equal(obj, json.loads(expected))      # types too: 0.0 stays a float


def test_defaults_are_copies() -> None:
    """Two objects defaulted from one schema do not share the default's value."""
    s = structural_from({"properties": {"m": d({"k": ["v"]})}})
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    default(a, s)
    default(b, s)
    a["m"]["k"].append("w")
    assert b == {"m": {"k": ["v"]}}


def test_default_then_nested_defaults() -> None:
    """A default applied is walked too: the defaults inside it are filled in."""
    s = structural_from({"properties": {"spec": d({}, properties={"replicas": d(1), "mode": d("fast")})}})
    obj: dict[str, Any] = {}
    default(obj, s)
    assert obj == {"spec": {"replicas": 1, "mode": "fast"}}


PRUNE_NULLS_CASES: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("empty", "null", None, "null"),
    ("scalar", "4", d("foo"), "4"),
    ("scalar array", "[1,null]", None, "[1,null]"),
    ("object array", '[{"a":null},{"b":null},{"c":null},{"d":null},{"e":null}]',
     {"items": {"properties": {"a": d("A"), "b": {"nullable": True}, "c": d("C", nullable=True), "d": {}}}},
     '[{"a":null},{"b":null},{"c":null},{},{"e":null}]'),
]


@pytest.mark.parametrize("name,in_json,schema,expected", PRUNE_NULLS_CASES, ids=[c[0] for c in PRUNE_NULLS_CASES])
def test_prune_non_nullable_nulls_without_defaults(name: str, in_json: str, schema: dict[str, Any] | None,
                                                   expected: str) -> None:
    obj = json.loads(in_json)
    prune_non_nullable_nulls_without_defaults(obj, structural_from(schema) if schema is not None else None)
    assert obj == json.loads(expected)
