"""CRD rules type-checked against the declared types of their schema, and the base
environment's literal checks.

Tables from upstream's apiextensions-apiserver pkg/apiserver/schema/cel/validation_test.go
(TestValidationExpressions: the `errors` of "object access", "objects", "listMaps",
"typemeta and objectmeta access", "embedded object", "lists", "maps", the formats'
valid rules and invalid literals) and SchemaDeclType (k8s.io/apiserver pkg/cel/common).
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.apiextensions import schema
from kubeplane.apiserver.apiextensions.celvalidation import decltype, typedenv
from kubeplane.apiserver.apiextensions.celvalidation.compilation import check_rules
from kubeplane.apiserver.apiextensions.celvalidation.validation import Validator

pytest.importorskip("cel_expr_python")
typed = pytest.mark.skipif(not typedenv.available(), reason="typed CRD rules need protobuf")

INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


def rules(s: dict[str, Any], *texts: str) -> dict[str, Any]:
    return {**s, "x-kubernetes-validations": [{"rule": t} for t in texts]}


def run(s: dict[str, Any], value: Any, root: bool = False) -> list[str]:
    st = schema.structural_from(s)
    return [str(e) for e in Validator(st, root).check(value, None, "root")]


def crd(s: dict[str, Any], path: str = "spec.validation.openAPIV3Schema.properties[f]") -> list[str]:
    return [str(e) for e in check_rules(s, path)]


OBJECT_ACCESS = obj({"a": obj({"b": INT, "c": INT, "d": {**INT, "nullable": True}}),
                     "a1": obj({"b1": obj({"c1": INT}), "d2": obj({"e2": INT})})})
LIST_MAP = obj({"objs": {"type": "array", "items": {
    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
    "items": obj({"k": STR, "v": STR}, required=["k"])}}})
OBJECTS = obj({"objs": {"type": "array", "items": obj({"f1": STR, "f2": STR})}})
SPECIFIED_META = obj({"kind": STR, "apiVersion": STR, "metadata": obj({"name": STR, "generateName": STR})})
EMBEDDED = obj({"embedded": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True}})

COMPILE_ERRORS = [
    (OBJECT_ACCESS, False, "has(self.a.z)", "undefined field 'z'"),
    (OBJECT_ACCESS, False, "self.a['b'] == 1", "no matching overload for '_[_]'"),
    (OBJECTS, False, "self.objs[0] == {'f1': 'a', 'f2': 'b'}", "found no matching overload for '_==_'"),
    (LIST_MAP, False, "self.objs[0] == {'k': 'a', 'v': '1'}", "no matching overload for '_==_'"),
    (SPECIFIED_META, False, "has(self.metadata.namespace)", "undefined field 'namespace'"),
    (obj({"spec": obj({"field1": STR})}), True, "has(self.metadata.namespace)", "undefined field 'namespace'"),
    (EMBEDDED, False, "has(self.embedded.metadata.namespace)", "undefined field 'namespace'"),
    (EMBEDDED, False, "has(self.embedded.spec)", "undefined field 'spec'"),
    (obj({"val1": {"type": "array", "items": INT}}), False, "[1, 'a', false].filter(x, string(x) == 'a')",
     "compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'"),
    (obj({"val1": {"type": "object", "additionalProperties": STR}}), False, "{'k1': 'a', 'k2': 1, 'k2': false}",
     "expected type 'string' but found 'int'"),
    (obj({"x": INT}), False, "self.x + 'a' == 1", "found no matching overload for '_+_' applied to '(int, string)'"),
    (obj({"x": INT, "d": NUM}), False, "self.x == self.d",
     "found no matching overload for '_==_' applied to '(int, double)'"),
    (obj({"p": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}), False, "has(self.p.x)",
     "undefined field 'x'"),
]


@typed
@pytest.mark.parametrize("s,root,rule,want", COMPILE_ERRORS, ids=[c[2] for c in COMPILE_ERRORS])
def test_compile_errors_from_declared_types(s: dict[str, Any], root: bool, rule: str, want: str) -> None:
    errs = run(rules(s, rule), {}, root)
    assert len(errs) == 1 and "rule compile error: compilation failed: ERROR: <input>:1:" in errs[0] \
        and want in errs[0], errs


VALID = [
    ("object access", OBJECT_ACCESS, {"a": {"b": 1, "d": None}, "a1": {"b1": {"c1": 4}}, "a3": {}}, [
        "has(self.a.b)", "!has(self.a.c)", "!has(self.a.d)", "has(self.a1.b1.c1)",
        "!(has(self.a1.d2) && has(self.a1.d2.e2))", "!has(self.a1.d2)"]),
    ("typemeta and objectmeta access specified", SPECIFIED_META,
     {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "foo", "generateName": "pickItForMe", "namespace": "x"}}, [
         "self.kind == 'Pod'", "self.apiVersion == 'v1'", "self.metadata.name == 'foo'",
         "self.metadata.generateName == 'pickItForMe'"]),
    ("embedded object", EMBEDDED, {"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "foo", "generateName": "pickItForMe", "namespace": "xyz"}, "spec": {"field1": "a"}}}, [
        "self.embedded.kind == 'Pod'", "self.embedded.apiVersion == 'v1'", "self.embedded.metadata.name == 'foo'",
        "self.embedded.metadata.generateName == 'pickItForMe'"]),
    ("listMaps", LIST_MAP, {"objs": [[{"k": "a", "v": "1"}, {"k": "b", "v": "2"}],
                                     [{"k": "b", "v": "2"}, {"k": "a", "v": "1"}]]}, [
        "self.objs[0][0].k == 'a'", "self.objs.all(l, l.all(o, has(o.v)))"]),
    ("numeric comparisons", obj({"val1": INT, "val4": NUM}), {"val1": 5, "val4": 10.0}, [
        "double(self.val1) < self.val4", "self.val1 < self.val4", "self.val1 <= self.val4", "self.val4 > self.val1",
        "self.val1 < int(self.val4)", "5 < 10.0", "self.val1 < 10.0"]),
    ("duration format", obj({"val1": {"type": "string", "format": "duration"},
                             "val2": {"type": "string", "format": "duration"}}),
     {"val1": "1h2m3s4ms", "val2": "1h2m3s4ms"}, [
        "self.val1 == self.val2", "self.val1 == duration('1h2m3s4ms')",
        "self.val1 == duration('1h2m') + duration('3s4ms')", "self.val1.getHours() == 1",
        "self.val1.getMinutes() == 62", "self.val1.getSeconds() == 3723",
        "type(self.val1) == google.protobuf.Duration"]),
    ("date format", obj({"val1": {"type": "string", "format": "date"}}), {"val1": "1997-07-16"}, [
        "self.val1 == timestamp('1997-07-16T00:00:00.000Z')", "self.val1.getDate() == 16",
        "self.val1.getMonth() == 06", "self.val1.getFullYear() == 1997",
        "type(self.val1) == google.protobuf.Timestamp"]),
    ("date-time format", obj({"val1": {"type": "string", "format": "date-time"}}),
     {"val1": "2011-08-18T19:03:37.010000000+01:00"}, [
        "self.val1 == timestamp('2011-08-18T19:03:37.010+01:00')",
        "self.val1 == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
        "self.val1.getDate('01:00') == 18", "self.val1.getMonth('01:00') == 7",
        "self.val1.getFullYear('01:00') == 2011", "self.val1.getHours('01:00') == 19",
        "self.val1.getMinutes('01:00') == 03", "self.val1.getSeconds('01:00') == 37",
        "self.val1.getMilliseconds('01:00') == 10", "self.val1.getHours('UTC') == 18",
        "type(self.val1) == google.protobuf.Timestamp", "self.val1 > timestamp('2000-01-01T00:00:00Z')"]),
    ("conversions", obj({"val8": STR, "val9": {"type": "string", "format": "duration"}, "val10": STR,
                         "val11": {"type": "string", "format": "date-time"}, "val12": STR,
                         "val13": {"type": "string", "format": "date"}}),
     {"val8": "3723.004s", "val9": "1h2m3s4ms", "val10": "2011-08-18T19:03:37.01+01:00",
      "val11": "2011-08-18T19:03:37.01+01:00", "val12": "2011-08-18T00:00:00Z", "val13": "2011-08-18"}, [
        "duration(self.val8) == self.val9", "string(self.val9) == self.val8",
        "timestamp(self.val10) == self.val11", "timestamp(self.val12) == self.val13"]),
    ("format as string", obj({"val1": STR}), {"val1": "x"}, [
        "'%d %s %f %s %s'.format([1, 'abc', 1.0, duration('1m'), timestamp('2000-01-01T00:00:00.000Z')]) "
        "== '1 abc 1.000000 60s 2000-01-01T00:00:00Z'"]),
]


@typed
@pytest.mark.parametrize("name,s,value,texts", VALID, ids=[c[0] for c in VALID])
def test_valid_rules_with_declared_types(name: str, s: dict[str, Any], value: Any, texts: list[str]) -> None:
    for text in texts:
        assert run(rules(s, text), value) == [], text


LITERALS = [
    ("self.val1.matches(')')", "compilation failed: ERROR: <input>:1:19: invalid matches argument"),
    ("duration('1') == duration('1s')", "compilation failed: ERROR: <input>:1:10: invalid duration argument"),
    ("duration('1d') == duration('1s')", "compilation failed: ERROR: <input>:1:10: invalid duration argument"),
    ("duration('1us') < duration('1nns')", "compilation failed: ERROR: <input>:1:28: invalid duration argument"),
    ("timestamp('1000-00-00T00:00:00Z') == timestamp(0)", "compilation failed: ERROR: <input>:1:11: invalid timestamp"),
    ("timestamp('1000-01-01T00:00:00ZZ') == timestamp(0)", "compilation failed: ERROR: <input>:1:11: invalid timestamp"),
    ("timestamp(-62135596801) == timestamp(0)", "compilation failed: ERROR: <input>:1:11: invalid timestamp"),
]


@pytest.mark.parametrize("rule,want", LITERALS, ids=[c[0] for c in LITERALS])
def test_invalid_literals_fail_to_compile(rule: str, want: str) -> None:
    errs = run(rules(obj({"val1": STR}), rule), {"val1": "x"})
    assert len(errs) == 1 and want in errs[0], errs
    assert crd(rules(obj({"val1": STR}), rule))[0].split(": Invalid value: ")[0] == \
        "spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations[0].rule"


@typed
def test_crd_write_reports_upstream_compile_errors() -> None:
    got = crd(rules(obj({"a": INT}), "self.b > 0"))
    assert got == [
        'spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations[0].rule: Invalid value: '
        '{"Rule":"self.b \\u003e 0","Message":"","MessageExpression":"","Reason":null,"FieldPath":"",'
        '"OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:5: undefined field \'b\'\n'
        " | self.b > 0\n | ....^"]
    got = crd({**rules(obj({"a": INT}), "self.a > 0"),
               "x-kubernetes-validations": [{"rule": "self.a > 0", "messageExpression": "self.a"}]})
    assert len(got) == 1 and got[0].endswith("messageExpression must evaluate to a string"), got
    got = crd({**obj({"a": INT}), "x-kubernetes-validations": [{"rule": "self.a > 0", "messageExpression": "self.c"}]})
    assert len(got) == 1 and "messageExpression compilation failed: ERROR: <input>:1:5: undefined field 'c'" in got[0]
    assert crd(rules(obj({"a": {"x-kubernetes-int-or-string": True}}), "self.a")) == [
        'spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations[0].rule: Invalid value: '
        '{"Rule":"self.a","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: '
        "cel expression must evaluate to a bool"]


@typed
def test_crd_write_refuses_rules_where_cel_sees_nothing() -> None:
    """Upstream (Compile): a rule on a schema that SchemaDeclType does not expose."""
    got = check_rules(rules({"x-kubernetes-preserve-unknown-fields": True}, "true"),
                      "spec.validation.openAPIV3Schema.properties[f]")
    assert [(e.type, str(e)) for e in got] == [(errors.INTERNAL, (
        "spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations: Internal error: rule declared on "
        "schema that does not support validation rules type: '' x-kubernetes-preserve-unknown-fields: 'true'"))]


def test_schema_decl_type_bounds() -> None:
    """Upstream: SchemaDeclType's MaxElements and MinSerializedSize (schemas_test.go
    TestEstimateMaxLengthJSON / TestSchemaDeclTypes and the limits of pkg/cel/limits.go)."""
    def decl(s: dict[str, Any], root: bool = False) -> decltype.DeclType:
        t = decltype.schema_decl_type(schema.structural_from(s), root)
        assert t is not None
        return t
    assert decl({"type": "string", "maxLength": 10}).max_elements == 40          # 4 bytes a code point
    assert decl({"type": "string", "enum": ["a", "abc"]}).max_elements == 3
    assert decl(STR).max_elements == 3 * 1024 * 1024 - 2
    assert decl({"type": "string", "format": "date-time"}).kind == "timestamp"
    assert decl({"type": "string", "format": "date"}).kind == "timestamp"
    assert decl({"type": "string", "format": "duration"}).kind == "duration"
    assert decl({"type": "string", "format": "byte"}).kind == "bytes"
    assert decl({"type": "array", "items": INT}).max_elements == (3 * 1024 * 1024 - 2) // 2
    assert decl({"type": "array", "items": STR, "maxItems": 7}).max_elements == 7
    assert decl({"type": "object", "additionalProperties": STR}).max_elements == (3 * 1024 * 1024 - 2) // 8
    req = decl(obj({"name": STR, "n": INT}, required=["name", "n"]))
    assert req.min_serialized_size == 2 + (4 + 2 + 4) + (1 + 1 + 4)
    assert sorted(decl(obj({}), root=True).fields) == ["apiVersion", "kind", "metadata"]
    assert decl({"x-kubernetes-int-or-string": True}).kind == "dyn"
    assert decltype.schema_decl_type(schema.structural_from({"x-kubernetes-preserve-unknown-fields": True}),
                                     False) is None
    assert decltype.schema_decl_type(schema.structural_from(
        {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": True}}), False) is None


def test_schema_decl_type_caps_metadata_names_and_folds_all_of_bounds() -> None:
    """Upstream (apiextensions model): WithTypeAndObjectMeta's cappedLengthStringType and
    foldAllOfBounds."""
    root = decltype.schema_decl_type(schema.structural_from(obj({})), True)
    assert root is not None
    meta = root.fields["metadata"].fields
    assert (meta["name"].max_elements, meta["generateName"].max_elements) == (253 * 4, 252 * 4)
    short = decltype.schema_decl_type(schema.structural_from(
        obj({"metadata": obj({"name": {"type": "string", "maxLength": 10}})})), True)
    assert short is not None and short.fields["metadata"].fields["name"].max_elements == 40
    folded = decltype.schema_decl_type(schema.structural_from(
        {"type": "string", "maxLength": 100, "allOf": [{"maxLength": 20}, {"allOf": [{"maxLength": 5}]}]}), False)
    assert folded is not None and folded.max_elements == 20
    items = decltype.schema_decl_type(schema.structural_from(
        {"type": "array", "items": INT, "allOf": [{"maxItems": 3}], "anyOf": [{"maxItems": 1}]}), False)
    assert items is not None and items.max_elements == 3


@typed
def test_schemas_protobuf_cannot_declare_fall_back_to_untyped_checks() -> None:
    """Property names whose protobuf map entries would collide: no error, no crash; the rule is
    checked as without declared object types."""
    m = {"type": "object", "additionalProperties": STR}
    assert crd(rules(obj({"a_b": m, "aB": m}), "self.aB.size() > 0")) == []
    assert crd(rules(obj({"x": m, "XEntry": INT}), "self.XEntry > 0")) == []
    assert run(rules(obj({"x": m, "XEntry": INT}), "self.XEntry > 0"), {"XEntry": 0}) == [
        "root: Invalid value: failed rule: self.XEntry > 0"]


@typed
def test_optional_old_self_is_an_optional_of_the_declared_type() -> None:
    s = obj({"n": INT})

    def errs(rule: str) -> list[str]:
        return crd({**s, "x-kubernetes-validations": [{"rule": rule, "optionalOldSelf": True}]})
    assert errs("!oldSelf.hasValue() || self.n > oldSelf.value().n") == []
    assert errs("oldSelf.orValue(self).n <= self.n") == []
    got = errs("self.n > 0 &&\n oldSelf.value().x == 1")
    assert len(got) == 1 and got[0].endswith(
        "compilation failed: ERROR: <input>:2:17: undefined field 'x'\n |  oldSelf.value().x == 1\n | ................^")
    got = errs("oldSelf.n > 0")
    assert len(got) == 1 and got[0].endswith(
        "found no matching overload for '_>_' applied to '(optional_type(int), int)'\n | oldSelf.n > 0\n | ..........^")


LIST_MAP_ACCESS = obj({"listMap": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                                   "items": obj({"k": STR, "v": STR, "v2": STR}, required=["k"])}})
LIST_MAP_VALUE = {"listMap": [{"k": "a1", "v": "b1"}, {"k": "a2", "v": "b2"}, {"k": "a3", "v": "b3", "v2": "z"}]}
RUNTIME_ERRORS = [
    (OBJECT_ACCESS, {"a": {"b": 1, "d": None}, "a1": {"b1": {"c1": 4}}, "a3": {}}, "has(self.a1.d2.e2)",
     "no such key: d2"),
    (obj({"val": {"type": "object", "additionalProperties": INT}}), {"val": {"b": 1, "d": 2}}, "self.val['c'] == 1",
     "no such key: c"),
    (obj({"array": {"type": "array", "items": INT}}), {"array": [1, 1, 2, 2, 3, 3, 4, 5]}, "self.array[100] == 0",
     "index out of bounds: 100"),
    (LIST_MAP_ACCESS, LIST_MAP_VALUE, "self.listMap.all(m, m.v2 == 'z')", "no such key: v2"),
    (LIST_MAP_ACCESS, LIST_MAP_VALUE, "self.listMap.exists_one(m, m.v2 == 'z')", "no such key: v2"),
    (LIST_MAP_ACCESS, LIST_MAP_VALUE, "self.listMap.filter(m, m.v2 == 'z').size() == 1", "no such key: v2"),
    (LIST_MAP_ACCESS, LIST_MAP_VALUE, "self.listMap.map(m, m.v2).size() == 1", "no such key: v2"),
    (LIST_MAP_ACCESS, LIST_MAP_VALUE, "self.listMap.map(m, m.v2 == 'z', m.v2).size() == 1", "no such key: v2"),
    (obj({"val1": INT}), {"val1": 2 ** 63 - 1}, "self.val1 + 1 == 0", "integer overflow"),
    (obj({"val1": INT}), {"val1": 1}, "1 / 0 == 1 / 0", "division by zero"),
]


@pytest.mark.parametrize("s,value,rule,want", RUNTIME_ERRORS, ids=[c[2] for c in RUNTIME_ERRORS])
def test_runtime_errors(s: dict[str, Any], value: Any, rule: str, want: str) -> None:
    """Upstream: TestValidationExpressions' `errors` found when the rule runs."""
    assert run(rules(s, rule), value) == [f'root: Invalid value: "object": {want} evaluating rule: {rule}']


@pytest.mark.parametrize("rule", ["self.listMap.exists(m, m.v2 == 'z')", "!self.listMap.all(m, m.v2 != 'z')",
                                  "self.listMap.all(m, !has(m.v2) || m.v2 == 'z')"])
def test_comprehensions_ignore_errors_when_the_result_is_decided(rule: str) -> None:
    assert run(rules(LIST_MAP_ACCESS, rule), LIST_MAP_VALUE) == []
