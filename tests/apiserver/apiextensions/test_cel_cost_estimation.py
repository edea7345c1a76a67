"""The estimated cost of CRD rules with `self` of the node's declared type, against upstream's
TestCostEstimation table (apiextensions-apiserver pkg/apiserver/schema/cel/compilation_test.go):
each rule's cost with the schema's lists, maps and strings unbounded ("calc": the sizes a request
can hold) and bounded by maxItems/maxProperties/maxLength ("set")."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.apiextensions import schema
from kubeplane.apiserver.apiextensions.celvalidation.compilation import compile_rules

pytest.importorskip("cel_expr_python")


def item(t: str) -> dict[str, Any]:
    if t == "int-or-string":
        return {"x-kubernetes-int-or-string": True}
    if t in ("duration", "date", "date-time"):
        return {"type": "string", "format": t}
    return {"type": t}


def array(t: str, n: int | None) -> dict[str, Any]:
    return {"type": "array", "items": item(t), **({"maxItems": n} if n is not None else {})}


def mapping(t: str, n: int | None) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": item(t), **({"maxProperties": n} if n is not None else {})}


def string(n: int | None) -> dict[str, Any]:
    return {"type": "string", **({"maxLength": n} if n is not None else {})}


def cost(s: dict[str, Any], rule: str) -> int:
    got = compile_rules(schema.structural_from({**s, "x-kubernetes-validations": [{"rule": rule}]}))[0]
    assert got.error == "", got.error
    return got.max_cost


CASES = [  # (name, generator, rule, calc cost, max elements, set cost)
    ("number array with all", lambda n: array("number", n), "self.all(x, true)", 4718591, 10, 32),
    ("string array with all", lambda n: array("string", n), "self.all(x, true)", 3145727, 20, 62),
    ("boolean array with all", lambda n: array("boolean", n), "self.all(x, true)", 1887437, 5, 17),
    ("map of numbers with all", lambda n: mapping("number", n), "self.all(x, true)", 1348169, 10, 32),
    ("map of numbers with has", lambda n: mapping("number", n), "has(self.x)", 0, 100, 0),
    ("map of strings with all", lambda n: mapping("string", n), "self.all(x, true)", 1179647, 3, 11),
    ("map of booleans with all", lambda n: mapping("boolean", n), "self.all(x, true)", 943718, 100, 302),
    ("string with contains", string, "self.contains('test')", 314574, 10, 5),
    ("string with startsWith", string, "self.startsWith('test')", 2, 15, 2),
    ("string with endsWith", string, "self.endsWith('test')", 2, 30, 2),
    ("concat string", string, 'size(self + "hello") > size("hello")', 314578, 4, 7),
    ("index of array with numbers", lambda n: array("number", n), "self[1] == 0.0", 2, 5000, 2),
    ("index of array with strings", lambda n: array("string", n), "self[1] == self[1]", 314577, 8, 314577),
    ("O(n^2) loop with numbers", lambda n: array("number", n), "self.all(x, self.all(y, true))", None, 10, 352),
    ("O(n^3) loop with numbers", lambda n: array("number", n), "self.all(x, self.all(y, self.all(z, true)))",
     None, 10, 3552),
    ("regex matches simple", string, 'self.matches("x")', 314574, 50, 22),
    ("regex matches empty string", string, '"".matches("(((((((((())))))))))[0-9]")', 7, 10, 7),
    ("regex matches empty regex", string, 'self.matches("")', 1, 100, 1),
    ("set array maxLength to zero", lambda n: array("number", n), "self[3] == 0.0", 2, 0, 2),
    ("set map maxLength to zero", lambda n: mapping("number", n), 'self["x"] == 0.0', 2, 0, 2),
    ("set string maxLength to zero", string, 'self == "x"', 2, 0, 1),
    ("set maxLength greater than estimated maxLength", lambda n: array("number", n), "self.all(x, x == 0.0)",
     6291454, 3 * 1024 * 2048, 25165826),
    ("int-or-string array with all", lambda n: array("int-or-string", n), "self.all(x, true)", 4718591, 10, 32),
    ("index of array with int-or-strings", lambda n: array("int-or-string", n), "self[0] == 5", 3, 10, 3),
    ("index of array with booleans", lambda n: array("boolean", n), "self[0] == false", 2, 25, 2),
    ("duration array with all", lambda n: array("duration", n), "self.all(x, true)", 2359295, 5, 17),
    ("index of duration array", lambda n: array("duration", n), "self[0].getHours() == 2", 4, 525, 4),
    ("date array with all", lambda n: array("date", n), "self.all(x, true)", 725936, 15, 47),
    ("date-time array with all", lambda n: array("date-time", n), "self.all(x, true)", 428963, 25, 77),
    ("map of int-or-strings with all", lambda n: mapping("int-or-string", n), "self.all(x, true)", 1348169, 15, 47),
    ("map of durations with all", lambda n: mapping("duration", n), "self.all(x, true)", 1048577, 5, 17),
    ("map of dates with all", lambda n: mapping("date", n), "self.all(x, true)", 524288, 10, 32),
    ("map of date-times with all", lambda n: mapping("date-time", n), "self.all(x, true)", 349526, 25, 77),
    ("extended library regex find", string, "self.find('[0-9]+') == ''", 629147, 10, 11),
    ("check cost of size call", lambda n: mapping("integer", n), "oldSelf.size() == self.size()", 5, 10, 5),
    ("check cost of timestamp comparison", lambda n: mapping("date-time", n), 'self["a"] == self["b"]', 8, 7, 8),
    ("check cost of duration comparison", lambda n: mapping("duration", n), 'self["c"] == self["d"]', 8, 42, 8),
]


@pytest.mark.parametrize("name,gen,rule,calc,n,want", CASES, ids=[c[0] for c in CASES])
def test_cost_estimation(name: str, gen: Any, rule: str, calc: int | None, n: int, want: int) -> None:
    if calc is None:
        assert cost(gen(None), rule) > 10_000_000            # over StaticEstimatedCostLimit
    else:
        assert cost(gen(None), rule) == calc
    assert cost(gen(n), rule) == want
