"""field.Error formatting: upstream's TestErrorFormatting table (apimachinery
pkg/util/validation/field/errors_test.go), case by case, plus Go's JSON/%v/%q corner cases."""
from __future__ import annotations

import pytest

from kubeplane.api import errors, gojson
from kubeplane.api.errors import FieldError

P = "path.to.field"
OMIT = FieldError(errors.INVALID, P).value          # upstream's omitValue


def fe(type_: tuple[str, str], value: object, detail: str = "the details") -> FieldError:
    return FieldError(type_, P, value, detail)


# A Go struct's fields in declaration order (mkTinyStruct): JSONValue keeps the order.
TINY = errors.JSONValue({"stringField": "stringval", "intField": 9376, "boolField": True})


class Stringer:
    """A value that fails json.Marshal and has String() (SelfMarshalerStringer)."""

    def __str__(self) -> str:
        return "magic"


CASES = [
    ("required", fe(errors.REQUIRED, "the value"), "path.to.field: Required value: the details"),
    ("required func", errors.required(P, "the details"), "path.to.field: Required value: the details"),
    ("forbidden", fe(errors.FORBIDDEN, "the value"), "path.to.field: Forbidden: the details"),
    ("forbidden func", errors.forbidden(P, "the details"), "path.to.field: Forbidden: the details"),
    ("too long", fe(errors.TOO_LONG, "the value"), "path.to.field: Too long: the details"),
    ("too long func(1)", errors.too_long(P, 1), "path.to.field: Too long: may not be more than 1 byte"),
    ("too long func(2)", errors.too_long(P, 2), "path.to.field: Too long: may not be more than 2 bytes"),
    ("too long func(-1)", errors.too_long(P, -1), "path.to.field: Too long: value is too long"),
    ("too many", fe(errors.TOO_MANY, "the value"), 'path.to.field: Too many: "the value": the details'),
    ("too many func(2, 1)", errors.too_many(P, 2, 1), "path.to.field: Too many: 2: must have at most 1 item"),
    ("too many func(3, 2)", errors.too_many(P, 3, 2), "path.to.field: Too many: 3: must have at most 2 items"),
    ("too many func(2, -1)", errors.too_many(P, 2, -1), "path.to.field: Too many: 2: has too many items"),
    ("too many func(-1, 1)", errors.too_many(P, -1, 1), "path.to.field: Too many: must have at most 1 item"),
    ("internal error", fe(errors.INTERNAL, "the value"), "path.to.field: Internal error: the details"),
    ("internal error func", errors.internal_error(P, ValueError("the error")),
     "path.to.field: Internal error: the error"),
    ("invalid string", fe(errors.INVALID, "the value"), 'path.to.field: Invalid value: "the value": the details'),
    ("invalid int", fe(errors.INVALID, -42), "path.to.field: Invalid value: -42: the details"),
    ("invalid bool", fe(errors.INVALID, True), "path.to.field: Invalid value: true: the details"),
    ("invalid struct", fe(errors.INVALID, TINY),
     'path.to.field: Invalid value: {"stringField":"stringval","intField":9376,"boolField":true}: the details'),
    ("invalid list", fe(errors.INVALID, ["one", "two", "three"]),
     'path.to.field: Invalid value: ["one","two","three"]: the details'),
    ("invalid map", fe(errors.INVALID, {"one": 1, "two": 2, "three": 3}),
     'path.to.field: Invalid value: {"one":1,"three":3,"two":2}: the details'),
    ("invalid omitValue", fe(errors.INVALID, OMIT), "path.to.field: Invalid value: the details"),
    ("invalid untyped nil", fe(errors.INVALID, None), "path.to.field: Invalid value: null: the details"),
    ("invalid func", errors.invalid(P, "the value", "the details"),
     'path.to.field: Invalid value: "the value": the details'),
    ("not found", fe(errors.NOT_FOUND, "the value"), 'path.to.field: Not found: "the value": the details'),
    ("not supported", fe(errors.NOT_SUPPORTED, "the value"),
     'path.to.field: Unsupported value: "the value": the details'),
    ("not supported func", errors.not_supported(P, "the value", ["val1", "val2"]),
     'path.to.field: Unsupported value: "the value": supported values: "val1", "val2"'),
    ("duplicate", fe(errors.DUPLICATE, "the value"), 'path.to.field: Duplicate value: "the value": the details'),
    ("duplicate func", errors.duplicate(P, "the value"), 'path.to.field: Duplicate value: "the value"'),
    ("type invalid", fe(errors.TYPE_INVALID, "the value"), 'path.to.field: Invalid value: "the value": the details'),
    ("failed marshal stringer", fe(errors.TYPE_INVALID, Stringer()), "path.to.field: Invalid value: magic: the details"),
    # Types upstream's table has no row for, by the same rules.
    ("too few", fe(errors.TOO_FEW, 1), "path.to.field: Too few: 1: the details"),
    ("too short", fe(errors.TOO_SHORT, "ab"), "path.to.field: Too short: the details"),
]


@pytest.mark.parametrize(("err", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_formatting(err: FieldError, expect: str) -> None:
    assert str(err) == expect
    assert err.cause() == {"reason": err.type[0], "message": expect.removeprefix(P + ": "), "field": P}


@pytest.mark.parametrize(("value", "expect"), [
    # %v of float64: shortest digits, an exponent below 1e-4 and from 1e+06
    (0.5, "0.5"), (1.0, "1"), (-2.25, "-2.25"), (123456.0, "123456"), (1e6, "1e+06"),
    (1234567.0, "1.234567e+06"), (0.0001, "0.0001"), (0.00001, "1e-05"), (1e21, "1e+21"), (0.0, "0"),
    # %q: Go's escapes, printable unicode kept
    ("a\"b\\c", '"a\\"b\\\\c"'), ("\a\b\f\n\r\t\v", '"\\a\\b\\f\\n\\r\\t\\v"'), ("\x00\x7f", '"\\x00\\x7f"'),
    ("héllo ☃", '"héllo ☃"'), ("\u00a0\u200b", '"\\u00a0\\u200b"'), ("\U000e0001", '"\\U000e0001"'),
    # JSON: HTML-safe escapes, short control escapes, floats without exponent in [1e-6, 1e21)
    (["<a&b>"], '["\\u003ca\\u0026b\\u003e"]'), (["\b\f\n\r\t\x01"], '["\\b\\f\\n\\r\\t\\u0001"]'),
    (["\u2028"], '["\\u2028"]'), ([1.0, 0.5, 1e20, 1e21, 1.5e-7, 0.000001], "[1,0.5,100000000000000000000,1e+21,1.5e-7,0.000001]"),
    ({"b": {"z": 1, "a": None}, "a": []}, '{"a":[],"b":{"a":null,"z":1}}'), ((), "[]"),
    (errors.JSONValue({"Path": "/x", "Verb": "get"}), '{"Path":"/x","Verb":"get"}'),
    (errors.JSONValue({"b": 1, "a": 2}), '{"b":1,"a":2}'),
])
def test_render_value_go_forms(value: object, expect: str) -> None:
    assert errors.render_value(value) == expect


def test_json_float_matches_go_for_small_and_large() -> None:
    assert gojson.json_float(1e-7) == "1e-7"
    assert gojson.json_float(123456789.0) == "123456789"
    assert gojson.json_float(-0.0) == "-0"


def test_aggregate_as_to_aggregate() -> None:
    """ErrorList.ToAggregate().Error(): duplicates once, brackets only for several."""
    a, b = errors.invalid("f", "v", "d"), errors.required("g")
    assert errors.aggregate([a, a]) == 'f: Invalid value: "v": d'
    assert errors.aggregate([a, b, a]) == '[f: Invalid value: "v": d, g: Required value]'
    assert errors.aggregate([]) == ""


def test_invalid_status_message_and_causes() -> None:
    """NewInvalid: the message from the aggregate, a cause for every error (duplicates too)."""
    a = errors.invalid("f", "v", "d")
    e = errors.Invalid("apps", "Deployment", "web", [a, a])
    assert e.message == 'Deployment.apps "web" is invalid: f: Invalid value: "v": d'
    assert len(e.details["causes"]) == 2
    assert errors.Invalid("", "Pod", "p", []).message == 'Pod "p" is invalid'
