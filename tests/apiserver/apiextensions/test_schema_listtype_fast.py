"""listtype.unique_fast, the compiled pass validate runs before the list set/map walk: when it
says an object is fine, the walk finds nothing (generated schemas and objects); the usual
object (a map list keyed by a string) is decided without the walk; anything it cannot decide
goes to the walk, which gives upstream's errors."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.apiserver.apiextensions.schema import listtype, structural_from, validate

NAMES = ["a", "b", "name"]
scalars = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([1.0, 0.5]) | st.sampled_from(["x", "y"])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(NAMES), inner, max_size=3), max_leaves=20)


def _schema(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array"]),
        "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
        "items": inner,
        "additionalProperties": inner,
        "x-kubernetes-list-type": st.sampled_from(["set", "map", "atomic"]),
        "x-kubernetes-list-map-keys": st.sampled_from([["name"], ["a", "b"], []]),
    })


schemas = st.recursive(_schema(st.just({})), _schema, max_leaves=10)


@settings(max_examples=2000, deadline=None)
@given(schemas, values)
def test_fast_true_means_the_walk_finds_nothing(schema: dict[str, Any], obj: Any) -> None:
    s = structural_from(schema)
    if listtype.unique_fast(s)(obj):
        assert listtype.validate_list_sets_and_maps("", s, obj) == []


PORTS = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}}


def test_the_usual_object_is_decided_fast_and_duplicates_keep_their_errors() -> None:
    s = structural_from(PORTS)
    fast = listtype.unique_fast(s)
    assert fast({"spec": {"ports": [{"name": "a"}, {"name": "b"}], "tags": ["x", "y"]}})
    for bad in ({"ports": [{"name": "a"}, {"name": "a"}]}, {"tags": ["x", "x"]}, {"ports": [5]},
                {"ports": [{"name": "a"}, {}]}, {"tags": [1, True]}):
        assert not fast({"spec": bad})
    errs = validate(s, {"spec": {"ports": [{"name": "a"}, {"name": "a"}], "tags": ["x", "x"]}})
    assert [str(e) for e in errs] == ['spec.ports[1]: Duplicate value: {"name":"a"}',
                                      'spec.tags[1]: Duplicate value: "x"']
    assert [str(e) for e in validate(s, {"spec": {"ports": [5]}})][-1] == (
        'spec.ports[0]: Invalid value: 5: must be an object for an array of list-type map')
