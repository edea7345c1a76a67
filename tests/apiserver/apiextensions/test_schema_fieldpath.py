"""x-kubernetes-validations fieldPath: upstream's TestValidateFieldPath table
(apiextensions-apiserver pkg/apis/apiextensions/validation/validation_test.go)."""
from __future__ import annotations

import pytest

from kubeplane.apiserver.apiextensions.schema import structural_from
from kubeplane.apiserver.apiextensions.schema.crd_validation import validate_crd_schema
from kubeplane.apiserver.apiextensions.schema.fieldpath import valid_field_path

NUM = {"type": "number"}
SCHEMA = {"type": "object", "properties": {
    "foo": {"type": "object", "additionalProperties": {"type": "object", "properties": {"f1": NUM}}},
    "a": {"type": "object", "properties": {
        "bbb": {"type": "object", "properties": {"c": NUM, "34": NUM}},
        "bbb.c": {"type": "object", "properties": {"a-b34": NUM}}}},
    "list": {"type": "array", "items": {"type": "object", "properties": {"a": NUM, "a-b.34": NUM}}},
}}


@pytest.mark.parametrize("path,err", [
    (".a", ""), (".a.bbb", ""), (".foo.f1", ""), (".a['bbb']", ""), (".a['bbb.c']", ""),
    (".a['bbb.c'].a-b34", ""), (".a['bbb.c']['a-b34']", ""), (".a.bbb.c", ""), (".a.bbb['34']", ""),
    (".a.foo", "does not refer to a valid field"),
    (".a.bbb[0]", "expected single quoted string but got 0"),
    (".a.bbb.34", ""), (".list", ""),
    (".list[1]", "expected single quoted string but got 1"),
    (".list.a", "does not refer to a valid field"),
    (".list['a-b.34']", "does not refer to a valid field"),
    (".list.a-b.34", "does not refer to a valid field"),
    ("a", "expected [ or . but got: a"),
    (".c", "does not refer to a valid field"),
    (".a..b", "does not refer to a valid field"),
    (".list[-1]", "expected single quoted string but got -1"),
    (".list[1.0]", "expected single quoted string but got 1"),
])
def test_valid_field_path(path: str, err: str) -> None:
    s = structural_from(SCHEMA)
    if not err:
        valid_field_path(path, s)
    else:
        with pytest.raises(ValueError, match=err.replace("[", r"\[").replace(".", r"\.")):
            valid_field_path(path, s)


def test_field_paths_are_field_paths() -> None:
    s = structural_from(SCHEMA)
    assert valid_field_path(".foo['x'].f1", s)[0] == "foo[x].f1"
    assert valid_field_path(".a['bbb.c']['a-b34']", s)[0] == "a.bbb.c.a-b34"


def test_invalid_field_path_in_a_rule() -> None:
    schema = {**SCHEMA, "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".nope"}]}
    assert [str(e) for e in validate_crd_schema({"openAPIV3Schema": schema}, "spec.versions[0].schema")] == [
        'spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].fieldPath: Invalid value: ".nope": '
        "must be a valid path"]
