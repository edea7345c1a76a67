"""The compiled validator's fast checks (openapi._Node._specialize: typed leaves, integer
ranges, bounded strings, lists of items, objects with additionalProperties) give exactly the
errors of the full check (check_full everywhere), on generated schemas and values."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.apiserver.apiextensions.schema import openapi
from kubeplane.apiserver.apiextensions.schema.openapi import SchemaValidator

NAMES = ["a", "b", "c"]
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 64), 2 ** 64)
    | st.sampled_from([-1, 0, 1, 2, 3, 2 ** 31 - 1, 2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, 2 ** 63, "", "a", "ab", "abcd"])
    | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1.0, 2.5]) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES + ["x"]), inner, max_size=4),
    max_leaves=15)
bounds = st.sampled_from([0, 1, 2, -1, 0.5, 2.5, 2 ** 31, 2 ** 63, 1e300])


def _schema(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array", "string", "integer", "number", "boolean"]),
        "format": st.sampled_from(["int32", "int64", "float", "date-time", ""]),
        "minimum": bounds, "maximum": bounds,
        "exclusiveMinimum": st.booleans(), "exclusiveMaximum": st.booleans(),
        "multipleOf": st.sampled_from([2, 0.5]),
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
        "pattern": st.just("^a"),
        "nullable": st.booleans(),
        "enum": st.just([1, "a"]),
        "items": inner,
        "minItems": st.integers(0, 2),
        "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
        "required": st.lists(st.sampled_from(NAMES), max_size=2),
        "additionalProperties": inner | st.booleans(),
        "maxProperties": st.integers(0, 3),
        "x-kubernetes-int-or-string": st.just(True),
    })


integers = st.fixed_dictionaries({"type": st.just("integer")}, optional={
    "format": st.sampled_from(["int32", "int64", "date-time"]), "minimum": bounds, "maximum": bounds,
    "exclusiveMinimum": st.booleans(), "exclusiveMaximum": st.booleans(), "nullable": st.booleans()})
strings = st.fixed_dictionaries({"type": st.just("string")}, optional={
    "format": st.sampled_from(["date-time", "byte", "int32", ""]), "minLength": st.integers(0, 3),
    "maxLength": st.integers(0, 3), "pattern": st.just("^a"), "nullable": st.booleans()})
leaves = integers | strings | _schema(st.just({}))
schemas = st.recursive(leaves, lambda inner: _schema(inner) | st.fixed_dictionaries(
    {"type": st.sampled_from(["object", "array"])}, optional={
        "items": inner, "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
        "additionalProperties": inner, "required": st.lists(st.sampled_from(NAMES), max_size=2)}), max_leaves=10)


@pytest.fixture(scope="module")
def full_only() -> Any:
    def make(schema: dict[str, Any]) -> SchemaValidator:
        with pytest.MonkeyPatch.context() as mp:
            def full(self: openapi._Node) -> Any:
                self.trivial = frozenset()
                return self.check_full
            mp.setattr(openapi._Node, "_specialize", full)
            return SchemaValidator(schema)
    return make


@settings(max_examples=3000, deadline=None)
@given(schema=schemas, value=values)
def test_specialized_checks_are_the_full_checks(full_only: Any, schema: dict[str, Any], value: Any) -> None:
    want = [(str(e), e.type) for e in full_only(schema).validate(value, "spec")]
    assert [(str(e), e.type) for e in SchemaValidator(schema).validate(value, "spec")] == want


LEAVES = [{"type": "integer", **fmt, **lo, **hi}
          for fmt in ({}, {"format": "int32"}, {"format": "int64"})
          for lo in ({}, {"minimum": 0}, {"minimum": 0, "exclusiveMinimum": True}, {"minimum": 0.5}, {"minimum": 2 ** 40})
          for hi in ({}, {"maximum": 3}, {"maximum": 3, "exclusiveMaximum": True}, {"maximum": 1e300})]
LEAVES += [{"type": "string", **lo, **hi, **more}
           for lo in ({}, {"minLength": 1}, {"minLength": 2})
           for hi in ({}, {"maxLength": 2}, {"maxLength": 0})
           for more in ({}, {"pattern": "^a"}, {"format": "date-time"}, {"nullable": True})]
BOUNDARY = [None, True, -1, 0, 1, 2, 3, 4, 2 ** 31 - 1, 2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, 2 ** 63,
            2 ** 40, 0.5, 3.0, "", "a", "ab", "abc", "b", [], {}]


@pytest.mark.parametrize("leaf", LEAVES)
def test_leaf_bounds_at_their_edges(full_only: Any, leaf: dict[str, Any]) -> None:
    for shape in (leaf, {"type": "array", "items": leaf},
                  {"type": "object", "properties": {"a": leaf}, "additionalProperties": leaf}):
        full, fast = full_only(shape), SchemaValidator(shape)
        for v in BOUNDARY:
            for value in (v, [v, v], {"a": v, "b": v}):
                assert [(str(e), e.type) for e in fast.validate(value, "spec")] == \
                    [(str(e), e.type) for e in full.validate(value, "spec")], (shape, value)
