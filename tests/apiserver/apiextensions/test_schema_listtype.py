"""x-kubernetes-list-type set/map: upstream's TestValidateListSetsAndMaps table
(apiextensions-apiserver pkg/apiserver/schema/listtype/validation_test.go), matched as upstream
does on (path, error type)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.apiextensions.schema import structural_from, validate
from kubeplane.apiserver.apiextensions.schema.listtype import validate_list_sets_and_maps


def dup(path: str) -> tuple[str, tuple[str, str]]:
    return path, errors.DUPLICATE


def inv(path: str) -> tuple[str, tuple[str, str]]:
    return path, errors.INVALID


def setlist(items: dict[str, Any] | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "array", "x-kubernetes-list-type": "set"}
    if items is not None:
        s["items"] = items
    return s


def maplist(*keys: str) -> dict[str, Any]:
    return {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys),
            "items": {"type": "object", "properties": {k: {"type": "string"} for k in ("a", "b", "c")}}}


def props(**p: Any) -> dict[str, Any]:
    return {"type": "object", "properties": p}


STR = {"type": "string"}
CASES: list[tuple[str, dict[str, Any] | None, Any, list[tuple[str, tuple[str, str]]]]] = [
    ("nil", None, None, []),
    ("no schema", None, {}, []),
    ("no object", {}, None, []),
    ("list without items", props(array={"type": "array"}), {"array": ["a", "b", "a"]}, []),
    ("set list with one item", props(array=setlist()), {"array": ["a"]}, []),
    ("set list with two equal items", props(array=setlist()), {"array": ["a", "a"]}, [dup("root.array[1]")]),
    ("set list with two different items", props(array=setlist()), {"array": ["a", "b"]}, []),
    ("set list with multiple duplicated items", props(array=setlist()), {"array": ["a", "a", "b", "c", "d", "c"]},
     [dup("root.array[1]"), dup("root.array[5]")]),
    ("normal list with items", props(array={"type": "array", "items": STR}), {"array": ["a", "b", "a"]}, []),
    ("set list with items", props(array=setlist(STR)), {"array": ["a", "b", "a"]}, [dup("root.array[2]")]),
    ("set list with items under additionalProperties", {"type": "object", "additionalProperties": setlist(STR)},
     {"array": ["a", "b", "a"]}, [dup("root[array][2]")]),
    ("set list with items under items", props(array={"type": "array", "items": setlist(STR)}),
     {"array": [["a", "b", "a"], ["b", "b", "a"]]}, [dup("root.array[0][2]"), dup("root.array[1][1]")]),
    ("nested set lists", props(array=setlist(setlist(STR))),
     {"array": ["a", "b", "a", ["b", "b", "a"]]}, [dup("root.array[2]"), dup("root.array[3][1]")]),
    ("set list with compound map items",
     props(**{k: setlist() for k in ("strings", "integers", "booleans", "float64", "nil", "empty maps", "map values",
                                     "nil values", "array", "nil array", "multiple duplicates")}),
     {"strings": ["a", "b", "a"], "integers": [1, 2, 1], "booleans": [False, True, True], "float64": [1.0, 2.0, 2.0],
      "nil": ["a", None, None], "empty maps": [{"a": "b"}, {}, {}], "map values": [{"a": "b"}, {"a": "c"}, {"a": "b"}],
      "nil values": [{"a": None}, {"b": "c", "a": None}], "array": [[], ["a"], ["b"], ["a"]],
      "nil array": [[], [None], [None, None], [None], ["a"]],
      "multiple duplicates": [{"a": "b"}, {"a": "c"}, {"a": "b"}, {"a": "c"}, {"a": "c"}]},
     [dup("root.strings[2]"), dup("root.integers[2]"), dup("root.booleans[2]"), dup("root.float64[2]"),
      dup("root.nil[2]"), dup("root.empty maps[2]"), dup("root.map values[2]"), dup("root.array[3]"),
      dup("root.nil array[3]"), dup("root.multiple duplicates[2]"), dup("root.multiple duplicates[3]")]),
    ("set list with compound array items", props(array=setlist()), {"array": [[], ["a"], ["a"]]},
     [dup("root.array[2]")]),
    ("map list with compound map items",
     props(**{"strings": maplist("a"), "integers": maplist("a"), "booleans": maplist("a"), "float64": maplist("a"),
              "nil": maplist("a"), "array": maplist("a"), "one key": maplist("a"), "two keys": maplist("a", "b"),
              "undefined key": maplist("a", "b"), "compound key": maplist("a"), "nil key": maplist("a"),
              "nil item": maplist("a"), "nil item multiple keys": maplist("a", "b"),
              "multiple duplicates": maplist("a")}),
     {"strings": ["a"], "integers": [1], "booleans": [False], "float64": [1.0], "nil": [None], "array": [["a"]],
      "one key": [{"a": "0", "c": "2"}, {"a": "1", "c": "1"}, {"a": "1", "c": "2"}, {}],
      "two keys": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "b": "2", "c": "2"}, {"a": "1", "b": "2", "c": "3"}, {}],
      "undefined key": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "c": "2"}, {"a": "1", "c": "3"}, {}],
      "compound key": [{"a": [], "c": "1"}, {"a": None, "c": "1"}, {"a": ["a"], "c": "1"}, {"a": ["a", 42], "c": "2"},
                       {"a": ["a", 42], "c": ["3"]}],
      "nil key": [{"a": [], "c": "1"}, {"a": None, "c": "1"}, {"c": "1"}, {"a": None}],
      "nil item": [None, {"a": "0", "c": "1"}, {"a": None}, {"c": "1"}],
      "nil item multiple keys": [None, {"b": "0", "c": "1"}, {"a": None}, {"c": "1"}],
      "multiple duplicates": [{"a": [], "c": "1"}, {"a": None, "c": "1"}, {"a": ["a"], "c": "1"},
                              {"a": ["a", 42], "c": "2"}, {"a": ["a", 42], "c": ["3"]}, {"a": ["a"], "c": "1", "d": "1"},
                              {"a": ["a"], "c": "1", "d": "2"}]},
     [inv("root.strings[0]"), inv("root.integers[0]"), inv("root.booleans[0]"), inv("root.float64[0]"),
      inv("root.array[0]"), dup("root.one key[2]"), dup("root.two keys[2]"), dup("root.undefined key[2]"),
      dup("root.compound key[4]"), dup("root.nil key[3]"), dup("root.nil item[3]"),
      dup("root.nil item multiple keys[3]"), dup("root.multiple duplicates[4]"), dup("root.multiple duplicates[5]")]),
]


@pytest.mark.parametrize("name,schema,obj,expected", CASES, ids=[c[0] for c in CASES])
def test_validate_list_sets_and_maps(name: str, schema: dict[str, Any] | None, obj: Any,
                                     expected: list[tuple[str, tuple[str, str]]]) -> None:
    s = structural_from(schema) if schema is not None else None
    errs = validate_list_sets_and_maps("root", s, obj)
    assert sorted((e.field, e.type) for e in errs) == sorted(expected)


def test_messages_through_validate() -> None:
    """What a client sees: Duplicate value with the item (or its keys) as JSON."""
    s = structural_from(props(tags=setlist(STR), ports={
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": STR, "port": {"type": "integer"}}}}))
    errs = validate(s, {"tags": ["a", "a"], "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]})
    assert [str(e) for e in errs] == ['tags[1]: Duplicate value: "a"', 'ports[1]: Duplicate value: {"name":"http"}']
