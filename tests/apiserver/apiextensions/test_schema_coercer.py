"""The compiled one-walk coercer (schema/coercer.py) against the reference walks it fuses:
pruning.prune, then prune_non_nullable_nulls_without_defaults (and defaulting.default first,
for default_and_coerce) — the same object, key order included, and the same dropped paths, on
generated schemas and objects."""
from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.apiserver.apiextensions.schema import (default, prune, prune_non_nullable_nulls_without_defaults,
                                                      structural_from)
from kubeplane.apiserver.apiextensions.schema.coercer import coerce, default_and_coerce

NAMES = ["a", "b", "c", "metadata", "kind", "apiVersion"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
    | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(NAMES + ["x", "y"]), inner, max_size=5),
    max_leaves=25)


def _schema(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array", "string", "integer"]),
        "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=4),
        "items": inner,
        "additionalProperties": inner | st.booleans(),
        "nullable": st.booleans(),
        "default": json_values,
        "x-kubernetes-preserve-unknown-fields": st.just(True),
        "x-kubernetes-embedded-resource": st.booleans(),
    })


schemas = st.recursive(_schema(st.just({})), _schema, max_leaves=12)


def _reference(obj: Any, schema: dict[str, Any], defaults: bool) -> tuple[Any, list[str]]:
    s = structural_from(schema)
    if defaults:
        default(obj, s)
    dropped = prune(obj, s)
    prune_non_nullable_nulls_without_defaults(obj, s)
    return obj, dropped


@settings(max_examples=1500, deadline=None)
@given(schemas, json_values)
def test_coerce_is_prune_then_nulls(schema: dict[str, Any], obj: Any) -> None:
    want, want_dropped = _reference(copy.deepcopy(obj), schema, False)
    got = copy.deepcopy(obj)
    got_dropped = coerce(got, structural_from(schema))
    assert json.dumps(got) == json.dumps(want)          # key order too: the stored bytes
    assert got_dropped == want_dropped


@settings(max_examples=1500, deadline=None)
@given(schemas, json_values)
def test_default_and_coerce_is_default_prune_nulls(schema: dict[str, Any], obj: Any) -> None:
    want, _ = _reference(copy.deepcopy(obj), schema, True)
    got = copy.deepcopy(obj)
    default_and_coerce(got, structural_from(schema))
    assert json.dumps(got) == json.dumps(want)


def test_compiled_once_per_schema() -> None:
    s = structural_from({"type": "object", "properties": {"spec": {"type": "object"}}})
    coerce({"spec": {"x": 1}}, s)
    walks = dict(s._coercer)
    coerce({"spec": {"y": 1}, "z": 2}, s)
    assert s._coercer == walks and set(walks) == {False}


def test_dropped_paths_and_defaults_inside_items() -> None:
    s = structural_from({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}}}}}})
    obj = {"apiVersion": "v", "kind": "K", "metadata": {"name": "n", "x": 1},
           "spec": {"ports": [{"name": "a", "extra": 1}, {"name": "b", "protocol": None}], "other": {"deep": 1}}}
    assert coerce(copy.deepcopy(obj), s) == ["spec.other", "spec.ports[0].extra"]
    default_and_coerce(obj, s)
    assert obj == {"apiVersion": "v", "kind": "K", "metadata": {"name": "n", "x": 1},
                   "spec": {"ports": [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "TCP"}]}}
