"""CRD x-kubernetes-validations: evaluation of custom objects and compilation on CRD writes.

Tables from upstream's apiextensions-apiserver pkg/apiserver/schema/cel/validation_test.go
(TestValidationExpressions, TestMessageExpression, TestReasonAndFldPath, TestOptionalOldSelf)
and pkg/apis/apiextensions/validation/validation_test.go (the CEL cases), where they hold with
`self` typed dyn (see celvalidation/compilation.py).
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.apiextensions import celvalidation, schema
from kubeplane.apiserver.apiextensions.celvalidation.compilation import check_rules
from kubeplane.apiserver.apiextensions.celvalidation.validation import Validator
from kubeplane.apiserver.apiextensions.celvalidation.values import escape

pytest.importorskip("cel_expr_python")

INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}


def obj_schema(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


def with_rules(s: dict[str, Any], *rules: Any) -> dict[str, Any]:
    return {**s, "x-kubernetes-validations": [r if isinstance(r, dict) else {"rule": r} for r in rules]}


def run(s: dict[str, Any], obj: Any, old: Any = None, root: bool = False, path: str = "root") -> list[errors.FieldError]:
    st = schema.structural_from(s)
    assert not st.conversion_errors
    return Validator(st, root).check(obj, old, path)


def vals(*pairs: tuple[dict[str, Any], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Upstream's objs()/schemas(): self.val1, self.val2, ..."""
    props = {f"val{i + 1}": s for i, (s, _) in enumerate(pairs)}
    return obj_schema(props), {f"val{i + 1}": v for i, (_, v) in enumerate(pairs)}


VALID = [
    ("integers", vals((INT, 2**63 - 1), (INT, 2**63 - 1), ({"type": "integer", "format": "int32"}, 2**31 - 1)), [
        "self.val1 == self.val2", "self.val1 == 9223372036854775807", "type(self.val1) == int",
        "self.val3 + 1 == 2147483647 + 1", "type(self.val3) == int"]),
    ("numbers", vals((NUM, 1.5), (NUM, 1.5), (NUM, 1)), [
        "self.val1 == self.val2", "type(self.val1) == double", "type(self.val3) == double", "self.val3 == 1.0"]),
    ("numeric comparisons", vals((INT, 5), (INT, 10), (INT, 15), (NUM, 10.0), (NUM, 10)), [
        "double(self.val1) < self.val4", "double(self.val2) == self.val4", "self.val3 > int(self.val4)",
        "double(self.val2) == self.val5", "self.val1 < self.val4", "self.val3 >= self.val4"]),
    ("unicode strings", vals((STR, "Rook takes 👑"), (STR, "Rook takes 👑")), [
        "self.val1 == self.val2", "self.val1.startsWith('Rook')", "self.val1.endsWith('👑')",
        "self.val1.matches('^[^0-9]*$')", "size(self.val1) == 12", "self.val1.charAt(3) == 'k'",
        "self.val1.indexOf('o', 2) == 2", "self.val1.replace(' ', 'x', 1) == 'Rookxtakes 👑'",
        "self.val1.split(' ') == ['Rook', 'takes', '👑']", "self.val1.substring(4, 10).trim() == 'takes'",
        "self.val1.upperAscii() == 'ROOK TAKES 👑'"]),
    ("bytes", vals(({"type": "string", "format": "byte"}, "QUI="), ({"type": "string", "format": "byte"}, "QUI=")), [
        "self.val1 == self.val2", "self.val1 == b'AB'", "type(self.val1) == bytes", "size(self.val1) == 2"]),
    ("booleans", vals((BOOL, True), (BOOL, False)), ["self.val1 != self.val2", "type(self.val1) == bool"]),
    ("lists", (obj_schema({"l": {"type": "array", "items": INT}}), {"l": [1, 2, 3]}), [
        "self.l.all(x, x > 0)", "self.l.exists(x, x == 2)", "size(self.l) == 3", "self.l[1] == 2",
        "self.l.map(x, x * 2) == [2, 4, 6]", "3 in self.l"]),
    ("maps", (obj_schema({"m": {"type": "object", "additionalProperties": INT}}),
              {"m": {"@": 1, "9": 2, "int": 3, "./-": 4, "👑": 5}}), [
        "self.m['@'] == 1", "self.m['9'] == 2", "self.m['int'] == 3", "self.m['./-'] == 4", "self.m['👑'] == 5"]),
    ("escaping", (obj_schema({"namespace": INT, "in": INT, "int": INT, "self": INT, "dot.dot": INT, "dash-dash": INT,
                              "slash/slash": INT, "doubleunderscore__doubleunderscore": INT, "_true": INT}),
                  {"namespace": 17, "in": 4, "int": 101, "self": 201, "dot.dot": 401, "dash-dash": 402,
                   "slash/slash": 403, "doubleunderscore__doubleunderscore": 405, "_true": 301}), [
        "self.__namespace__ == 17", "self.__in__ == 4", "self.int == 101", "self.self == 201",
        "self.dot__dot__dot == 401", "self.dash__dash__dash == 402", "self.slash__slash__slash == 403",
        "self.doubleunderscore__underscores__doubleunderscore == 405", "self._true == 301"]),
    ("int-or-string", (obj_schema({"a": {"x-kubernetes-int-or-string": True},
                                   "b": {"x-kubernetes-int-or-string": True}}), {"a": "50%", "b": 5}), [
        "type(self.a) == string", "type(self.b) == int", "self.a.endsWith('%')", "self.b == 5"]),
    ("preserve unknown fields", (obj_schema({"p": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                   "properties": {"k": STR}}}),
                                 {"p": {"k": "v", "x": {"y": [1, "z"]}}}), [
        "self.p.k == 'v'", "has(self.p.k)"]),
    ("quantity", (obj_schema({"q": STR}), {"q": "20M"}), [
        "quantity(self.q).isGreaterThan(quantity('10M'))", "isQuantity(self.q)"]),
    ("optionals", (obj_schema({"m": {"type": "object", "additionalProperties": STR}}), {"m": {"k": "v"}}), [
        "self.m[?'k'].orValue('') == 'v'", "!self.m[?'x'].hasValue()"]),
]


@pytest.mark.parametrize("name,case,rules", VALID, ids=[c[0] for c in VALID])
def test_valid_rules(name: str, case: tuple[dict[str, Any], Any], rules: list[str]) -> None:
    s, obj = case
    for rule in rules:
        assert run(with_rules(s, rule), obj) == [], rule


ERRORS = [
    (obj_schema({"val1": INT}), {"val1": 2**63 - 1}, "self.val1 + 1 == 0", "integer overflow"),
    (obj_schema({"val1": INT}), {"val1": 1}, "1 / self.val1 == 1 / 0", "division by zero"),
    (obj_schema({}), {}, "authorizer.path('/healthz').check('get').allowed()",
     "undeclared reference to 'authorizer'"),
    (obj_schema({"v": {"x-kubernetes-int-or-string": True}}), {"v": "x"}, "self.v + 1 == 2",
     "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: "
     "self.v + 1 == 2"),
]


@pytest.mark.parametrize("s,obj,rule,want", ERRORS, ids=[e[2] for e in ERRORS])
def test_rule_errors(s: dict[str, Any], obj: Any, rule: str, want: str) -> None:
    errs = run(with_rules(s, rule), obj, root=True)
    assert errs, rule
    for e in errs:
        assert e.type == errors.INVALID and want in str(e), str(e)


def test_failed_rule_messages_and_values() -> None:
    s = obj_schema({"replicas": with_rules(INT, "self >= 0"), "maxReplicas": INT})
    s = with_rules(s, {"rule": "self.replicas <= self.maxReplicas", "message": " replicas must be <= maxReplicas "})
    errs = run(s, {"replicas": -1, "maxReplicas": -2}, path="spec")
    assert [str(e) for e in errs] == [
        "spec: Invalid value: replicas must be <= maxReplicas",          # objects: no value printed
        "spec.replicas: Invalid value: -1: failed rule: self >= 0",       # scalars: the value
    ]


def test_root_path_and_resource_root_metadata() -> None:
    s = with_rules(obj_schema({"spec": obj_schema({"f": STR})}),
                   "self.metadata.name == 'foo' && self.kind == 'Pod' && self.apiVersion == 'v1'",
                   "self.metadata.generateName == 'x' || !has(self.metadata.generateName)")
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "foo", "namespace": "xyz"}, "spec": {"f": "a"}}
    assert run(s, obj, root=True, path="") == []
    errs = run(with_rules(s, "self.metadata.name == 'bar'"), obj, root=True, path="")
    assert [str(e) for e in errs] == ["<nil>: Invalid value: failed rule: self.metadata.name == 'bar'"]


def test_transition_rules() -> None:
    s = with_rules(obj_schema({"v": STR}), "oldSelf.v != self.v", "oldSelf.v == 'old' && self.v == 'new'")
    assert run(s, {"v": "new"}, {"v": "old"}) == []
    immutable = with_rules(STR, {"rule": "self == oldSelf", "message": "Value is immutable"})
    assert run(immutable, "exists", None) == []                         # skipped without an old value
    assert [str(e) for e in run(immutable, "b", "a")] == ['root: Invalid value: "b": Value is immutable']
    nested = obj_schema({"spec": obj_schema({"name": immutable})})
    assert run(nested, {"spec": {"name": "b"}}, {"spec": {}}) == []       # no old value of the field
    assert [e.field for e in run(nested, {"spec": {"name": "b"}}, {"spec": {"name": "a"}})] == ["root.spec.name"]


def test_transition_rules_correlate_list_map_items_only() -> None:
    item = with_rules(obj_schema({"k": STR, "v": INT}), "self.v >= oldSelf.v")
    listmap = {"type": "array", "items": item, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"]}
    old = [{"k": "a", "v": 1}, {"k": "b", "v": 5}]
    errs = run(obj_schema({"l": listmap}), {"l": [{"k": "b", "v": 4}, {"k": "a", "v": 2}]}, {"l": old})
    assert [e.field for e in errs] == ["root.l[0]"]
    atomic = {"type": "array", "items": item}
    assert run(obj_schema({"l": atomic}), {"l": [{"k": "b", "v": 0}]}, {"l": old}) == []


def test_optional_old_self() -> None:
    rule = {"rule": "!oldSelf.hasValue() || self > oldSelf.value()", "optionalOldSelf": True}
    s = obj_schema({"n": with_rules(INT, rule)})
    assert run(s, {"n": 1}, None) == []                                  # evaluated, oldSelf is none
    assert run(s, {"n": 2}, {"n": 1}) == []
    assert [e.field for e in run(s, {"n": 1}, {"n": 2})] == ["root.n"]
    must_have_old = obj_schema({"n": with_rules(INT, {"rule": "oldSelf.hasValue()", "optionalOldSelf": True})})
    assert [e.field for e in run(must_have_old, {"n": 1}, None)] == ["root.n"]


def test_ratcheting_unchanged_values() -> None:
    """Upstream (CRDValidationRatcheting, validateExpressions' addErr): a rule without oldSelf
    failing, or erring, on a value the update did not change is a warning, not an error."""
    s = obj_schema({"a": with_rules(INT, "self < 10"), "b": INT,
                    "c": with_rules({"x-kubernetes-int-or-string": True}, "self + 1 > 0"),
                    "d": with_rules(INT, "self < oldSelf")})
    warnings: list[str] = []
    with celvalidation.warnings(warnings):
        assert run(s, {"a": 20, "b": 2}, {"a": 20, "b": 1}) == []        # a unchanged: ratcheted
    assert warnings == ["root.a: Invalid value: 20: failed rule: self < 10"]
    warnings.clear()
    with celvalidation.warnings(warnings):
        assert run(s, {"c": "x"}, {"c": "x"}) == []                      # an evaluation error too
        assert [str(e) for e in run(s, {"d": 5}, {"d": 5})] == [          # a transition rule: not ratcheted
            "root.d: Invalid value: 5: failed rule: self < oldSelf"]
    assert warnings == ["root.c: Invalid value: \"\": 'no such overload': call arguments did not match a "
                        "supported operator, function or macro signature for rule: self + 1 > 0"]
    assert [e.field for e in run(s, {"a": 21, "b": 1}, {"a": 20, "b": 1})] == ["root.a"]
    assert [e.field for e in run(s, {"a": 20}, None)] == ["root.a"]
    assert run(s, {"a": 20, "b": 2}, {"a": 20, "b": 1}) == []            # no collector: dropped


@pytest.mark.parametrize("expr,message,want", [
    ('"static string"', "", "static string"),
    ('"this is messageExpression"', "invisible", "this is messageExpression"),
    ("true", "", "failed rule: false"),
    ('"str1 " + self.str', "", "str1 a string"),
    ('"str1 " + ["a", "b", "c", "d"][4]', "message not messageExpression", "message not messageExpression"),
    ('"str1 " + ["a", "b", "c", "d"][4]', "", "failed rule: false"),
    ('"str with \\na newline"', "message not messageExpression", "message not messageExpression"),
    ('"' + "a" * 5121 + '"', "message not messageExpression", "message not messageExpression"),
    ('string("     ")', "message not messageExpression", "message not messageExpression"),
])
def test_message_expression(expr: str, message: str, want: str) -> None:
    rule = {"rule": "false", "messageExpression": expr, **({"message": message} if message else {})}
    errs = run(with_rules(obj_schema({"str": STR}), rule), {"str": "a string"})
    assert len(errs) == 1 and errs[0].detail == want


def test_reason_and_field_path() -> None:
    f = obj_schema({"m": INT})
    for reason, path, want_type, want_field in [
            ("FieldValueForbidden", "", errors.FORBIDDEN, "root.f"), (None, "", errors.INVALID, "root.f"),
            ("FieldValueForbidden", ".m", errors.FORBIDDEN, "root.f.m")]:
        rule = {"rule": "self.m == 2", **({"reason": reason} if reason else {}), **({"fieldPath": path} if path else {})}
        errs = run(with_rules(obj_schema({"f": with_rules(f, rule)}), "1 == 1"), {"f": {"m": 1}}, root=True)
        assert [(e.type, e.field) for e in errs] == [(want_type, want_field)]
    s = with_rules(obj_schema({"field1": STR, "field2": STR, "field3": STR}),
                   {"rule": 'self.field2 != "value2"', "reason": "FieldValueDuplicate", "fieldPath": ".field2"},
                   {"rule": 'self.field3 != "value3"', "reason": "FieldValueRequired", "fieldPath": ".field3"},
                   {"rule": 'self.field1 != "value1"', "reason": "FieldValueForbidden", "fieldPath": ".field1"})
    errs = run(s, {"field1": "value1", "field2": "value2", "field3": "value3"}, root=True)
    assert [(e.type, e.field) for e in errs] == [(errors.DUPLICATE, "root.field2"), (errors.REQUIRED, "root.field3"),
                                                 (errors.FORBIDDEN, "root.field1")]


def test_per_call_limit_stops_validation() -> None:
    s = with_rules(obj_schema({"l": {"type": "array", "items": INT}}),
                   "self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))", "false")
    errs = run(s, {"l": list(range(200))})
    assert len(errs) == 1
    assert "no further validation rules will be run due to call cost exceeds limit for rule" in str(errs[0])


def test_escape() -> None:
    assert escape("namespace") == "__namespace__"
    assert escape("a-b.c/d") == "a__dash__b__dot__c__slash__d"
    assert escape("a__b") == "a__underscores__b"
    assert escape("9a") is None and escape("a@b") is None and escape("") is None


# --- the hook on schema.validate, and the CRD write checks ----------------------------------


def test_schema_validate_runs_rules_unless_blocking_error() -> None:
    celvalidation.install()
    raw = with_rules(obj_schema({"spec": with_rules(obj_schema({"replicas": INT, "maxReplicas": INT}),
                                                    {"rule": "self.replicas <= self.maxReplicas",
                                                     "message": "replicas must be <= maxReplicas"})}),
                     {"rule": "self.metadata.name != 'forbidden'", "reason": "FieldValueForbidden",
                      "fieldPath": ".spec", "message": "bad name"})
    s = schema.structural_from(raw)
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "forbidden"},
           "spec": {"replicas": 3, "maxReplicas": 2}}
    assert [str(e) for e in schema.validate(s, obj)] == [
        "spec: Forbidden: bad name", "spec: Invalid value: replicas must be <= maxReplicas"]
    bad = {**obj, "spec": {"replicas": "three", "maxReplicas": 2}}
    got = [str(e) for e in schema.validate(s, bad)]
    assert got[-1] == ("<nil>: Invalid value: null: some validation rules were not checked because the object was "
                       "invalid; correct the existing errors to complete validation")
    ok = {**obj, "metadata": {"name": "fine"}, "spec": {"replicas": 1, "maxReplicas": 2}}
    assert schema.validate_update(s, ok, obj) == []


def crd_errs(raw: dict[str, Any]) -> list[str]:
    return [str(e) for e in check_rules(raw, "spec.validation.openAPIV3Schema")]


def test_crd_compile_errors() -> None:
    assert crd_errs(with_rules(obj_schema({"a": INT}), "self.a > 0")) == []
    got = crd_errs(with_rules(obj_schema({"a": INT}), "self.a >"))
    assert len(got) == 1 and got[0].startswith(
        'spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.a \\u003e",'
        '"Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: '
        "compilation failed: ERROR: <input>:1:9: Syntax error:")
    got = crd_errs(with_rules(INT, "size(self) == 10"))                    # upstream: "compilation failure"
    assert len(got) == 1 and got[0].endswith(
        "compilation failed: ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n"
        " | size(self) == 10\n | ....^"), got
    assert crd_errs(with_rules(obj_schema({}), "42")) == [
        'spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: {"Rule":"42",'
        '"Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: '
        "cel expression must evaluate to a bool"]
    got = crd_errs(with_rules(INT, {"rule": "self == 5", "messageExpression": "42"}))
    assert got == ['spec.validation.openAPIV3Schema.x-kubernetes-validations[0].messageExpression: Invalid value: '
                   '{"Rule":"self == 5","Message":"","MessageExpression":"42","Reason":null,"FieldPath":"",'
                   '"OptionalOldSelf":null}: messageExpression must evaluate to a string']
    got = crd_errs(with_rules(NUM, {"rule": "self < 32.0", "messageExpression": '"abc'}))
    assert len(got) == 1 and "messageExpression compilation failed: ERROR: <input>:1:1:" in got[0]
    assert crd_errs(with_rules(STR, {"rule": "self.startsWith('s')",
                                     "messageExpression": "\"scoped field should start with 's'\""})) == []
    assert crd_errs(with_rules(INT, {"rule": "self > 0", "optionalOldSelf": True})) == [
        "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: "
        "may not be set if oldSelf is not used in rule"]
    assert crd_errs(with_rules(INT, {"rule": "oldSelf.orValue(0) <= self", "optionalOldSelf": True})) == []


def test_crd_cost_over_budget() -> None:
    unbounded = {"l": with_rules({"type": "array", "items": STR}, "self.all(x, self.all(y, x.matches(y)))")}
    rule = (errors.FORBIDDEN, "spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule")
    assert crd_cost_errs(unbounded) == [rule, rule, (errors.FORBIDDEN, "spec.validation.openAPIV3Schema")]
    bounded = {"l": with_rules({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}},
                               "self.all(x, self.all(y, x.matches(y)))")}
    assert crd_cost_errs(bounded) == []


def test_crd_transition_rules_only_where_old_values_correlate() -> None:
    celvalidation.install()
    item = {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}

    def errs(lst: dict[str, Any]) -> list[str]:
        raw = {"openAPIV3Schema": obj_schema({"value": lst})}
        return [str(e) for e in schema.validate_crd_schema(raw, "spec.validation")]
    assert errs({"type": "array", "x-kubernetes-list-type": "atomic", "items": item}) == [
        "spec.validation.openAPIV3Schema.properties[value].items.x-kubernetes-validations[0].rule: Invalid value: "
        '"self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within '
        "spec.validation.openAPIV3Schema.properties[value]"]
    assert len(errs({"type": "array", "items": item})) == 1                 # atomic by default
    keyed = {"type": "object", "required": ["k"], "properties": {"k": {"type": "string", "maxLength": 5}},
             "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    assert errs({"type": "array", "maxItems": 5, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                 "items": keyed}) == []
    assert errs({"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string", "maxLength": 10},
                 "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}) == []   # on the list itself


def test_crd_defaults_checked_against_rules() -> None:
    """Upstream: "invalid default with x-kubernetes-validations" (and its valid twin)."""
    celvalidation.install()

    def raw(name: str, value: str, obj: dict[str, int]) -> dict[str, Any]:
        return {"openAPIV3Schema": obj_schema({
            "embedded": obj_schema({"metadata": {
                "type": "object", "x-kubernetes-embedded-resource": True,
                "properties": {"name": {"type": "string", "default": name,
                                        "x-kubernetes-validations": [{"rule": "self == 'singleton'"}]}}}}),
            "value": {"type": "string", "default": value, "x-kubernetes-validations": [{"rule": "self.startsWith('kube')"}]},
            "object": {"type": "object", "properties": {"field1": INT, "field2": INT}, "default": obj,
                       "x-kubernetes-validations": [{"rule": "self.field1 < self.field2"}]}})}
    got = schema.validate_crd_schema(raw("nope", "nope", {"field1": 2, "field2": 1}), "spec.validation")
    assert sorted((e.type, e.field) for e in got) == sorted([
        (errors.INVALID, "spec.validation.openAPIV3Schema.properties[embedded].properties[metadata].properties[name].default"),
        (errors.INVALID, "spec.validation.openAPIV3Schema.properties[value].default"),
        (errors.INVALID, "spec.validation.openAPIV3Schema.properties[object].default")])
    assert schema.validate_crd_schema(raw("singleton", "kube-everything", {"field1": 1, "field2": 2}),
                                      "spec.validation") == []


def test_all_of_rules_apply_to_the_node() -> None:
    """Upstream: the validator's AllOfValidators (rules inside allOf, and under its properties)."""
    s = obj_schema({"a": INT, "b": INT}, allOf=[
        {"x-kubernetes-validations": [{"rule": "self.a < self.b", "message": "a < b"}]},
        {"properties": {"b": {"x-kubernetes-validations": [{"rule": "self != 3"}]}}}])
    assert run(s, {"a": 1, "b": 2}) == []
    assert [str(e) for e in run(s, {"a": 4, "b": 3})] == [
        "root: Invalid value: a < b", "root.b: Invalid value: 3: failed rule: self != 3"]


def crd_cost_errs(props: dict[str, Any]) -> list[tuple[str, str]]:
    celvalidation.install()
    got = schema.validate_crd_schema({"openAPIV3Schema": obj_schema(props)}, "spec.validation")
    return [(e.type, e.field) for e in got]


def double_nested(key: dict[str, Any], **limits: Any) -> dict[str, Any]:
    """Upstream's double-nested rule: a list of maps of objects with a required key."""
    item: dict[str, Any] = {"type": "object", "additionalProperties": {
        "type": "object", "required": ["key"], "properties": {"key": key}}}
    if "max_properties" in limits:
        item["maxProperties"] = limits["max_properties"]
    lst: dict[str, Any] = {"type": "array", "items": item,
                           "x-kubernetes-validations": [{"rule": "self.all(x, x.all(y, x[y].key == x[y].key))"}]}
    if "max_items" in limits:
        lst["maxItems"] = limits["max_items"]
    return {"value": lst}


RULE = "spec.validation.openAPIV3Schema.properties[value].x-kubernetes-validations[0].rule"
TOO_COSTLY = [(errors.FORBIDDEN, RULE), (errors.FORBIDDEN, RULE), (errors.FORBIDDEN, "spec.validation.openAPIV3Schema")]
COST_CASES = [
    ("forbid double-nested rule with no limit set", double_nested(STR), TOO_COSTLY),
    ("forbid double-nested rule with one limit set", double_nested({"type": "string", "maxLength": 10}), TOO_COSTLY),
    ("allow double-nested rule with three limits set",
     double_nested({"type": "string", "maxLength": 10}, max_items=10, max_properties=10), []),
    ("allow double-nested rule with one limit set on outermost array", double_nested(NUM, max_items=4), []),
    ("check for cardinality of 1 under root object", {"value": with_rules(INT, "self < 1024")}, []),
    ("forbid validation rules where cost total exceeds total limit", {
        "list": {"type": "array", "maxItems": 100000,
                 "items": with_rules({"type": "string", "maxLength": 5000}, "self.contains('keyword')")},
        "map": {"type": "object", "maxProperties": 1000,
                "additionalProperties": with_rules({"type": "string", "maxLength": 5000}, "self.contains('keyword')")},
        "field": with_rules(INT, "self > 50 && self < 100")}, [
        (errors.FORBIDDEN, "spec.validation.openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule"),
        (errors.FORBIDDEN, "spec.validation.openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule"),
        (errors.FORBIDDEN,
         "spec.validation.openAPIV3Schema.properties[map].additionalProperties.x-kubernetes-validations[0].rule"),
        (errors.FORBIDDEN, "spec.validation.openAPIV3Schema")]),
]


@pytest.mark.parametrize("name,props,want", COST_CASES, ids=[c[0] for c in COST_CASES])
def test_crd_rule_costs(name: str, props: dict[str, Any], want: list[tuple[str, str]]) -> None:
    """Upstream: TestValidateCustomResourceDefinitionValidation's cost cases
    (pkg/apis/apiextensions/validation/validation_test.go): the rule's cost times its
    cardinality against the per-rule limit, and the CRD's total."""
    assert sorted(crd_cost_errs(props)) == sorted(want)


def test_crd_cost_messages() -> None:
    celvalidation.install()
    got = schema.validate_crd_schema({"openAPIV3Schema": obj_schema(double_nested(STR))}, "spec.validation")
    assert [str(e) for e in got] == [
        f"{RULE}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, "
        "or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
        f"{RULE}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
        "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire "
        "OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"]
