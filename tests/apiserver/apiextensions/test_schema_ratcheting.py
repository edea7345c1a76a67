"""Validation ratcheting on update: upstream's ratcheting_test.go (apiextensions-apiserver
pkg/apiserver/validation) and CorrelatedObject's rules (apiserver pkg/cel/common/equality.go):
an invalid value left unchanged is not reported; properties and map values correlate by key,
map-list items by their keys, other list items not at all."""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.apiextensions.schema import structural_from, validate_update

ZERO = {"type": "number", "minimum": 0, "maximum": 0}
SMALL = {"type": "number", "maximum": 50}
MEDIUM = {"type": "number", "minimum": 50, "maximum": 10000}
LARGE = {"type": "number", "minimum": 10000}
OBJECT = {"type": "object", "properties": {"zero": ZERO, "small": SMALL, "medium": MEDIUM, "large": LARGE}}
OBJECT_OBJECT = {"type": "object", "properties": {"nested": OBJECT}}


def valid(schema: dict[str, Any], new: Any, old: Any) -> bool:
    return not validate_update(structural_from(schema), new, old)


def test_scalar_ratcheting() -> None:
    assert valid(MEDIUM, 1, 1)
    assert not valid(MEDIUM, 1, 2)


def test_object_scalar_fields_ratcheting() -> None:
    assert valid(OBJECT, {"small": 500}, {"small": 500})
    assert valid(OBJECT, {"small": 501}, {"small": 501, "medium": 500})
    assert not valid(OBJECT, {"small": 500}, {"small": 501})


def test_object_object_fields_ratcheting() -> None:
    assert valid(OBJECT_OBJECT, {"nested": {"small": 500}}, {"nested": {"small": 500}})
    assert valid(OBJECT_OBJECT, {"nested": {"small": 501}}, {"nested": {"small": 501, "medium": 500}})
    assert not valid(OBJECT_OBJECT, {"nested": {"small": 500}}, {"nested": {"small": 501}})


def test_numeric_format_ratcheting() -> None:
    schema = {"type": "object", "properties": {"intThirtyTwo": {"type": "integer", "format": "int32"},
                                               "unrelated": {"type": "string"}}}
    big = (1 << 31)
    assert valid(schema, {"intThirtyTwo": big}, {"intThirtyTwo": big})
    assert valid(schema, {"intThirtyTwo": big, "unrelated": "changed"}, {"intThirtyTwo": big, "unrelated": "original"})
    assert not valid(schema, {"intThirtyTwo": big + 1}, {"intThirtyTwo": big})


def test_map_list_items_correlate_by_key_other_lists_do_not() -> None:
    item = {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 10}}}
    maplist = {"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map",
                                                      "x-kubernetes-list-map-keys": ["name"], "items": item}}}
    atomic = {"type": "object", "properties": {"l": {"type": "array", "items": item}}}
    old = {"l": [{"name": "a", "port": 80}, {"name": "b", "port": 1}]}
    new = {"l": [{"name": "b", "port": 2}, {"name": "a", "port": 80}]}    # reordered, b changed
    assert valid(maplist, new, old)
    assert [str(e) for e in validate_update(structural_from(atomic), new, old)] == [
        "l[1].port: Invalid value: 80: l[1].port in body should be less than or equal to 10"]


def test_additional_properties_correlate_by_key() -> None:
    schema = {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": SMALL}}}
    assert valid(schema, {"m": {"a": 100, "b": 1}}, {"m": {"a": 100}})
    assert not valid(schema, {"m": {"a": 100, "b": 100}}, {"m": {"a": 100}})


def test_list_sets_checked_only_when_old_object_had_none_wrong() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "array", "x-kubernetes-list-type": "set",
                                                     "items": {"type": "string"}}}}
    assert valid(schema, {"s": ["a", "a", "b"]}, {"s": ["a", "a"]})
    assert [str(e) for e in validate_update(structural_from(schema), {"s": ["a", "a"]}, {"s": ["a"]})] == [
        's[1]: Duplicate value: "a"']


def test_equality_goes_through_the_schema() -> None:
    """CachedDeepEqual: a reordered map list is unchanged; an object with a key the schema does
    not type (under x-kubernetes-preserve-unknown-fields) never counts as unchanged, so its own
    errors are reported even when nothing moved."""
    item = {"type": "object", "properties": {"name": {"type": "string"}}}
    reorder = {"type": "object", "properties": {"l": {
        "type": "array", "maxItems": 1, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": item}}}
    assert valid(reorder, {"l": [{"name": "b"}, {"name": "a"}]}, {"l": [{"name": "a"}, {"name": "b"}]})
    preserve = {"type": "object", "properties": {"o": {"type": "object", "minProperties": 3,
                                                       "x-kubernetes-preserve-unknown-fields": True}}}
    assert not valid(preserve, {"o": {"x": 1}}, {"o": {"x": 1}})
