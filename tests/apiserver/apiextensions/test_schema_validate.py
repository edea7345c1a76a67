"""Custom objects against their OpenAPI v3 schema: upstream's TestValidateCustomResource table
(apiextensions-apiserver pkg/apiserver/validation/validation_test.go; the CEL rows are CEL's),
with the error texts compared as sets, as upstream does."""
from __future__ import annotations

import math
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.schema import structural_from, validate


def obj_schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def texts(schema: dict[str, Any], obj: Any) -> set[str]:
    return {str(e) for e in validate(structural_from(schema), obj)}


def _type_errs(tname: str) -> list[tuple[Any, str]]:
    return [(v, f'field: Invalid value: "{k}": field in body must be of type {tname}: "{k}"')
            for v, k in (("foo", "string"), (42, "integer"), (True, "boolean"), (1.2, "number"),
                         ([], "array"), ({}, "object"), (None, "null"))]


CASES: list[tuple[str, dict[str, Any], list[Any], list[tuple[Any, set[str]]]]] = [
    ("!nullable", obj_schema(field={"type": "object"}),
     [{}, {"field": {}}],
     [({"field": v}, {m}) for v, m in _type_errs("object") if v != {}]),
    ("nullable", obj_schema(field={"type": "object", "nullable": True}),
     [{}, {"field": {}}, {"field": None}],
     [({"field": v}, {m}) for v, m in _type_errs("object") if v != {} and v is not None]),
    ("nullable and no type", obj_schema(field={"nullable": True}),
     [{}, {"field": {}}, {"field": None}, {"field": "foo"}, {"field": 42}, {"field": True}, {"field": 1.2},
      {"field": []}], []),
    ("x-kubernetes-int-or-string", obj_schema(field={"x-kubernetes-int-or-string": True}),
     [{}, {"field": 42}, {"field": "foo"}],
     [({"field": v}, {m}) for v, m in _type_errs("integer,string") if v not in ("foo", 42)]),
    ("nullable and x-kubernetes-int-or-string", obj_schema(field={"x-kubernetes-int-or-string": True, "nullable": True}),
     [{}, {"field": 42}, {"field": "foo"}, {"field": None}],
     [({"field": v}, {m}) for v, m in _type_errs("integer,string") if v not in ("foo", 42, None)]),
    ("nullable, x-kubernetes-int-or-string and user-provided anyOf",
     obj_schema(field={"nullable": True, "x-kubernetes-int-or-string": True,
                       "anyOf": [{"type": "integer"}, {"type": "string"}]}),
     [{}, {"field": None}, {"field": 42}, {"field": "foo"}],
     [({"field": v}, {'<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
                      f'field: Invalid value: "{k}": field in body must be of type integer,string: "{k}"',
                      f'field: Invalid value: "{k}": field in body must be of type integer: "{k}"'}
       | ({'<nil>: Invalid value: "": Checked value must be of type integer (default format) in field'}
          if k == "number" else set()))
      for v, k in ((True, "boolean"), (1.2, "number"), ({}, "object"), ([], "array"))]),
    ("nullable, x-kubernetes-int-or-string and user-provider allOf",
     obj_schema(field={"nullable": True, "x-kubernetes-int-or-string": True,
                       "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]}),
     [{}, {"field": None}, {"field": 42}, {"field": "foo"}],
     [({"field": v}, {'<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated',
                      '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
                      f'field: Invalid value: "{k}": field in body must be of type integer,string: "{k}"',
                      f'field: Invalid value: "{k}": field in body must be of type integer: "{k}"'}
       | ({'<nil>: Invalid value: "": Checked value must be of type integer (default format) in field'}
          if k == "number" else set()))
      for v, k in ((True, "boolean"), (1.2, "number"), ({}, "object"), ([], "array"))]),
    ("invalid regex", obj_schema(field={"type": "string", "pattern": "+"}), [],
     [({"field": "foo"}, {"field: Invalid value: \"foo\": field in body should match '+, but pattern is invalid: "
                          "error parsing regexp: missing argument to repetition operator: `+`'"})]),
    ("required field",
     {"type": "object", "required": ["field"],
      "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}}}, [],
     [({"test": "a"}, {"field: Required value"}), ({"field": {}}, {"field.nested: Required value"})]),
    ("enum",
     obj_schema(field={"type": "object", "required": ["nestedint", "nestedstring"],
                       "properties": {"nestedint": {"type": "integer", "enum": [1, 2]},
                                      "nestedstring": {"type": "string", "enum": ["a", "b"]}}}), [],
     [({"field": {}}, {"field.nestedint: Required value", "field.nestedstring: Required value"}),
      ({"field": {"nestedint": "x", "nestedstring": True}},
       {'field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string"',
        'field.nestedint: Unsupported value: "x": supported values: "1", "2"',
        'field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean"',
        'field.nestedstring: Unsupported value: true: supported values: "a", "b"'})]),
    ("maxProperties", obj_schema(fieldX={"type": "object", "maxProperties": 2}), [],
     [({"fieldX": {"a": True, "b": True, "c": True}}, {"fieldX: Too many: 3: must have at most 2 items"})]),
    ("maxItems", obj_schema(fieldX={"type": "array", "maxItems": 2}), [],
     [({"fieldX": ["a", "b", "c"]}, {"fieldX: Too many: 3: must have at most 2 items"})]),
    ("maxLength", obj_schema(fieldX={"type": "string", "maxLength": 2}), [],
     [({"fieldX": "abc"}, {"fieldX: Too long: may not be more than 2 bytes"})]),
    ("k8sLongName", obj_schema(fieldX={"type": "string", "format": "k8s-long-name"}), [],
     [({"fieldX": "a.-"}, {'fieldX: Invalid value: "a.-": fieldX in body must be of type k8s-long-name: "a.-"'})]),
    ("k8sShortName", obj_schema(fieldX={"type": "string", "format": "k8s-short-name"}), [],
     [({"fieldX": "a-"}, {'fieldX: Invalid value: "a-": fieldX in body must be of type k8s-short-name: "a-"'})]),
    ("numeric formats valid",
     obj_schema(intThirtyTwo={"type": "integer", "format": "int32"}, intSixtyFour={"type": "integer", "format": "int64"},
                floatThreeTwo={"type": "number", "format": "float"}, floatSixFour={"type": "number", "format": "double"}),
     [{"intThirtyTwo": -(1 << 31), "intSixtyFour": -(1 << 63), "floatThreeTwo": -3.4028234663852886e38,
       "floatSixFour": -1.7976931348623157e308},
      {"intThirtyTwo": 0, "intSixtyFour": 0, "floatThreeTwo": 0.0, "floatSixFour": 0.0},
      {"intThirtyTwo": (1 << 31) - 1, "intSixtyFour": (1 << 63) - 1, "floatThreeTwo": 3.4028234663852886e38,
       "floatSixFour": 1.7976931348623157e308}], []),
    ("numeric formats invalid",
     obj_schema(intThirtyTwo={"type": "integer", "format": "int32"}, intSixtyFour={"type": "integer", "format": "int64"},
                floatThreeTwo={"type": "number", "format": "float"}, floatSixFour={"type": "number", "format": "double"}),
     [],
     [({"intThirtyTwo": (1 << 31)},
       {'<nil>: Invalid value: "": Checked value must be of type integer with format int32 in intThirtyTwo'}),
      ({"intThirtyTwo": -(1 << 31) - 1},
       {'<nil>: Invalid value: "": Checked value must be of type integer with format int32 in intThirtyTwo'}),
      ({"intSixtyFour": float((1 << 63) - 1) * 1.1},
       {'intSixtyFour: Invalid value: "float64": intSixtyFour in body must be of type int64: "float64"',
        '<nil>: Invalid value: "": Checked value must be of type integer with format int64 in intSixtyFour'}),
      ({"intSixtyFour": float(-(1 << 63)) * 1.1},
       {'intSixtyFour: Invalid value: "float64": intSixtyFour in body must be of type int64: "float64"',
        '<nil>: Invalid value: "": Checked value must be of type integer with format int64 in intSixtyFour'}),
      ({"floatThreeTwo": 3.4028234663852886e38 * 1.1},
       {'<nil>: Invalid value: "": Checked value must be of type number with format float in floatThreeTwo'}),
      ({"floatThreeTwo": -3.4028234663852886e38 * 1.1},
       {'<nil>: Invalid value: "": Checked value must be of type number with format float in floatThreeTwo'})]),
]


@pytest.mark.parametrize("name,schema,valid,failing", CASES, ids=[c[0] for c in CASES])
def test_validate_custom_resource(name: str, schema: dict[str, Any], valid: list[Any],
                                  failing: list[tuple[Any, set[str]]]) -> None:
    for obj in valid:
        assert texts(schema, obj) == set(), obj
    for obj, expected in failing:
        assert texts(schema, obj) == expected, obj


def test_items_property() -> None:
    """Upstream: TestItemsProperty — items under an object and in an array."""
    s1 = {"properties": {"spec": {"properties": {"replicas": {"type": "integer"}}}}}
    assert texts(s1, {"spec": {"replicas": 1, "items": ["1", "2"]}}) == set()
    s2 = {"properties": {"secrets": {"type": "array", "items": {"type": "string"}}}}
    assert texts(s2, {"secrets": ["1", "2"]}) == set()


# --- beyond upstream's table: each kube-openapi check, with its message ----------------------

SPEC = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "multipleOf": 0.5},
    "name": {"type": "string", "minLength": 3, "pattern": "^[a-z]+$"},
    "tags": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    "labels": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
    "when": {"type": "string", "format": "date-time"},
    "port": {"x-kubernetes-int-or-string": True},
}}}}


@pytest.mark.parametrize("spec,expected", [
    ({"replicas": "string"},
     'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'),
    ({"replicas": 0}, "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"),
    ({"replicas": 11}, "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"),
    ({"ratio": 0.0}, "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"),
    ({"ratio": 0.7}, "spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"),
    ({"name": "ab"}, 'spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long'),
    ({"name": "ABC"}, "spec.name: Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'"),
    ({"tags": []}, "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"),
    ({"tags": ["a", 1]},
     'spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"'),
    ({"labels": {}}, "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"),
    ({"labels": {"a": 1}},
     'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'),
    ({"when": "yesterday"},
     'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"'),
    ({"port": True}, 'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'),
])
def test_each_check(spec: dict[str, Any], expected: str) -> None:
    assert texts(SPEC, {"spec": spec}) == {expected}


def test_valid_typical_object() -> None:
    spec = {"replicas": 3, "ratio": 1.5, "name": "abc", "tags": ["x"], "labels": {"a": "b"},
            "when": "2024-01-02T03:04:05Z", "port": "http"}
    assert texts(SPEC, {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec}) == set()
    assert texts(SPEC, {"spec": {"port": 8080, "replicas": 2.0}}) == set()    # 2.0 is a JSON integer


def test_status_path_prefix() -> None:
    """The status subresource validates properties[status] with the field path `status`."""
    s = structural_from({"type": "object", "properties": {"ready": {"type": "boolean"}}})
    assert [str(e) for e in validate(s, {"ready": 1}, "status")] == [
        'status.ready: Invalid value: "integer": ready in body must be of type boolean: "integer"']


def test_root_type_error_is_at_nil() -> None:
    assert texts({"type": "object"}, "x") == {'<nil>: Invalid value: "string":  in body must be of type object: "string"'}


@pytest.mark.parametrize("fmt,good,bad", [
    ("date", "2024-02-29", "2023-02-29"),
    ("date-time", "2024-01-02T03:04:05.123+01:00", "2024-01-02 03:04:05"),
    ("duration", "1h30m", "forever"),
    ("duration", "3 days", "3 fortnights"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    ("email", "a@example.com", "not an email"),
    ("hostname", "example.com", "-bad-.com"),
    ("ipv4", "10.0.0.1", "10.0.0.256"),
    ("ipv6", "fe80::1", "10.0.0.1"),
    ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
    ("mac", "01:23:45:67:89:ab", "01:23:45"),
    ("uri", "https://example.com/x", "example.com"),
    ("byte", "aGVsbG8=", "not base64!"),
])
def test_formats(fmt: str, good: str, bad: str) -> None:
    schema = obj_schema(f={"type": "string", "format": fmt})
    assert texts(schema, {"f": good}) == set()
    assert texts(schema, {"f": bad}) == {f'f: Invalid value: "{bad}": f in body must be of type {fmt}: "{bad}"'}


def test_unknown_format_is_not_checked() -> None:
    assert texts(obj_schema(f={"type": "string", "format": "int32"}), {"f": "x"}) == set()
    assert texts(obj_schema(f={"type": "string", "format": "whatever"}), {"f": "x"}) == set()


def test_enum_converts_like_go() -> None:
    """The value is converted to the enum value's type first: 1.0 and 1.5 match an integer 1."""
    schema = obj_schema(f={"type": "number", "enum": [1, 2]})
    assert texts(schema, {"f": 1.0}) == set()
    assert texts(schema, {"f": 3}) == {'f: Unsupported value: 3: supported values: "1", "2"'}


def test_nan_and_huge_values_do_not_crash() -> None:
    schema = obj_schema(f={"type": "integer", "maximum": 5, "multipleOf": 2}, g={"type": "number", "minimum": 0})
    errs = texts(schema, {"f": 10 ** 30, "g": math.inf})
    assert any("Checked value must be of type integer" in e for e in errs)


def test_integer_against_fractional_multiple_of() -> None:
    """kube-openapi checks an integer with MultipleOfInt(int64(factor)): a factor below 1
    truncates to 0 and is reported as not positive (upstream's behaviour, kept)."""
    schema = obj_schema(f={"type": "number", "multipleOf": 0.5})
    assert texts(schema, {"f": 2}) == {
        "f: Invalid value: 0: factor MultipleOf declared for f must be positive: 0"}
    assert texts(schema, {"f": 2.0}) == set()


EMBEDDED = {"type": "object", "properties": {"template": {
    "type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}}}


@pytest.mark.parametrize("template,expected", [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, set()),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}, set()),
    ({"metadata": {"name": "p"}}, {"template.apiVersion: Required value", "template.kind: Required value"}),
    ({"apiVersion": "", "kind": "Pod"}, {'template.apiVersion: Invalid value: "": must not be empty'}),
    ({"apiVersion": "a/b/c", "kind": "Pod"}, {'template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion '
                                             'string: a/b/c'}),
    ({"apiVersion": 1, "kind": "Pod"}, {"template.apiVersion: Invalid value: 1: must be a string"}),
    ({"apiVersion": "v1", "kind": "Pod_1"},
     {'template.kind: Invalid value: "Pod_1": may have mixed case, but should otherwise match: a DNS-1035 label must '
      "consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an "
      "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')"}),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b"}},
     {'template.metadata.name: Invalid value: "a/b": may not contain \'/\''}),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b c"}}},
     {'template.metadata.labels: Invalid value: "b c": a valid label must be an empty string or consist of '
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
      "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}),
])
def test_embedded_resource(template: dict[str, Any], expected: set[str]) -> None:
    """Upstream: objectmeta.Validate on x-kubernetes-embedded-resource values."""
    assert texts(EMBEDDED, {"template": template}) == expected


@pytest.mark.parametrize("value", [None, True, 1, 1.5, "x", [], {}, [None, {"a": [1]}], {"spec": None},
                                   {"spec": {"replicas": [], "tags": {}, "labels": [], "port": {}}},
                                   {"spec": {"name": "\udcff", "when": "\x00"}}])
def test_hostile_values_give_errors_not_exceptions(value: Any) -> None:
    validate(structural_from(SPEC), value)
    validate(structural_from({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}}), {"l": value})


def test_cel_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CEL factory is asked once per schema with rules; its check runs after the schema's
    own, and not at all after a blocking error (upstream's hasBlockingErr)."""
    from kubeplane.api import errors
    from kubeplane.apiserver.apiextensions import schema as lib

    calls: list[tuple[Any, Any, str]] = []

    def factory(s: Any) -> Any:
        def check(obj: Any, old: Any, path: str) -> list[Any]:
            calls.append((obj, old, path))
            return [errors.invalid("spec", obj.get("spec"), "failed rule: self.a < 5")]
        return check
    monkeypatch.setattr(lib, "CEL_VALIDATOR_FACTORY", factory)
    s = structural_from(obj_schema(spec={"type": "object", "properties": {"a": {"type": "integer"}},
                                         "x-kubernetes-validations": [{"rule": "self.a < 5"}]}))
    assert [str(e) for e in validate(s, {"spec": {"a": 7}})] == [
        'spec: Invalid value: {"a":7}: failed rule: self.a < 5']
    assert [str(e) for e in lib.validate_update(s, {"spec": {"a": "x"}}, {"spec": {"a": 1}})] == [
        'spec.a: Invalid value: "string": spec.a in body must be of type integer: "string"',
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation"]
    assert calls == [({"spec": {"a": 7}}, None, "")]
    assert validate(structural_from(obj_schema(a={"type": "string"})), {"a": "x"}) == []   # no rules, no call
    assert len(calls) == 1


def test_any_of_reports_the_branch_that_matched_most() -> None:
    """kube-openapi merges the failing branch with the highest MatchCount: here the string
    branch (its type matched), so the pattern failure is reported, not "must be of type integer"."""
    schema = obj_schema(f={"x-kubernetes-int-or-string": True,
                           "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^a"}]})
    assert texts(schema, {"f": "b"}) == {
        '<nil>: Invalid value: "": "f" must validate at least one schema (anyOf)',
        "f: Invalid value: \"b\": f in body should match '^a'"}
    assert texts(schema, {"f": "abc"}) == set()
    assert texts(schema, {"f": 3}) == set()
