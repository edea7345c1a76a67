"""The CEL engine's compile and evaluate: upstream's error texts, and hostile expressions
refused with upstream's errors (never a stalled loop, a crash or unbounded memory)."""
from __future__ import annotations

from kubeplane.apiserver.cel import compiler, cost
from kubeplane.apiserver.cel.matchconditions import MatchConditions
from kubeplane.apiserver.admission import Attributes, Operation

ENV = compiler.env("object", "oldObject")


def evaluate(expr: str, obj: object) -> compiler.EvaluationResult:
    r = ENV.compile(expr, (compiler.ANY,))
    assert not r.error, r.error
    return compiler.evaluate(r, ENV.activation({"object": obj, "oldObject": None}))


def test_compile_errors_as_cel_go_words_them() -> None:
    assert ENV.compile("foo.bar == 1").error == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n"
        " | foo.bar == 1\n | ^")
    assert ENV.compile("1 + 'a' == 2").error.startswith(
        "compilation failed: ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'")
    assert ENV.compile("object.x", (compiler.BOOL,)).error == ""           # dyn may be a bool
    assert ENV.compile("'x'").error == "must evaluate to bool but got string"


def test_runtime_errors() -> None:
    assert evaluate("object.spec.nope == 1", {"spec": {}}).error == (
        "expression 'object.spec.nope == 1' resulted in error: no such key: nope")
    assert "divide by zero" in evaluate("1 / (size(object) - 1) == 0", {"a": 1}).error
    assert evaluate("oldObject == null", {}).value is True


def test_optional_results_are_an_error_not_a_crash() -> None:
    """The binding cannot hand an optional value to Python: an error, not an exception (a
    policy's variable `object.?spec.replicas` must not make the request a 500)."""
    for expr in ("object.?spec", "[object.?spec]", "{'a': optional.none()}"):
        r = evaluate(expr, {"spec": 1})
        assert r.error == f"expression '{expr}' resulted in error: {compiler.UNSUPPORTED_RESULT}"
    assert evaluate("object.?spec.orValue(0)", {"spec": 1}).value == 1


def test_optionals_never_reach_python_functions() -> None:
    """The binding crashes the process converting an optional for a Python function: an
    expression that could hand one to Kubernetes' library functions (or hide one in dyn()) is
    refused when compiled; the optional library's own functions still take them."""
    for expr, fn in (("[optional.of(1)].isSorted()", "isSorted"), ("sets.contains([optional.none()], [1])", "sets.contains"),
                     ("optional.none().includes(1)", "includes"), ("quantity('1').add(dyn(optional.none()))", "dyn"),
                     ("[object.?a].sum() == 1", "sum")):
        r = ENV.compile(expr, (compiler.ANY,))
        assert r.program is None and f"an optional value cannot be passed to '{fn}' here" in r.error, (expr, r.error)
    for expr, want in (("optional.of(1).hasValue()", True), ("optional.of(1).value() == 1", True),
                       ("[object.?a.orValue(2)].sum() == 2", True), ("[1].first().orValue(0) == 1", True)):
        assert evaluate(expr, {}).value is want, expr


def test_deep_nesting_is_refused_at_compile_time() -> None:
    r = ENV.compile("(" * 300 + "true" + ")" * 300)
    assert r.error == "compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"
    r = ENV.compile("[" * 300 + "]" * 300 + " == []")
    assert r.error.startswith("compilation failed:")


def test_huge_expression_is_refused() -> None:
    expr = "object.a == '" + "x" * 100_000 + "'"
    r = ENV.compile(expr)
    assert r.error == (f"compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: "
                       f"size: {len(expr)}, limit 100000")


def test_string_doubling_is_refused_before_it_runs() -> None:
    # 25 doublings of 1 KiB: 32 GiB, were it built
    expr = "cel.bind(s, object.s, " + "cel.bind(s, s + s, " * 25 + "s" + ")" * 25 + ").size() > 0"
    r = evaluate(expr, {"s": "x" * 1024})
    assert r.cost_exceeded and r.error.endswith("resulted in error: operation cancelled: actual cost limit exceeded")
    # a few doublings of a small string are fine
    small = "cel.bind(s, object.s, " + "cel.bind(s, s + s, " * 3 + "s" + ")" * 3 + ").size()"
    assert evaluate(small, {"s": "xy"}).value == 16


def test_quadratic_replace_is_refused() -> None:
    r = evaluate("object.s.replace('', object.s).size() > 0", {"s": "x" * 100_000})
    assert r.cost_exceeded


def test_iteration_budget_is_the_cost_limit() -> None:
    r = evaluate("object.l.all(a, object.l.all(b, a + b >= 0))", {"l": list(range(1000))})
    assert r.error == ("expression 'object.l.all(a, object.l.all(b, a + b >= 0))' resulted in error: "
                       "operation cancelled: actual cost limit exceeded")
    assert evaluate("object.l.all(a, a >= 0)", {"l": list(range(5000))}).value is True


def test_estimated_cost_follows_sizes() -> None:
    """cel-go's model: a comprehension costs its range's size times its body (issue 13 compares
    it with the CRD budget)."""
    env = compiler.env("self")
    small = env.compile("self.all(x, x.startsWith('a'))")
    assert small.estimated_cost({"self": 10}) < small.estimated_cost({"self": 1000}) < cost.UNBOUNDED
    assert small.estimated_cost({}) == cost.UNBOUNDED
    assert env.compile("self == 'a'").estimated_cost({"self": 5}) <= 3


def test_match_conditions() -> None:
    """Upstream's matcher: all true -> match; a false one -> no match, named; errors -> failurePolicy."""
    pod = {"metadata": {"name": "p", "labels": {"app": "a"}}}
    a = Attributes(Operation.CREATE, "", "v1", "pods", "Pod", "default", "p", pod)
    conditions = [{"name": "is-app", "expression": "object.metadata.labels.app == 'a'"},
                  {"name": "not-kube-system", "expression": "request.namespace != 'kube-system'"}]
    assert MatchConditions(conditions).match(a).matches
    r = MatchConditions([*conditions, {"name": "never", "expression": "false"}]).match(a)
    assert (r.matches, r.failed_condition, r.error) == (False, "never", "")
    failing = [*conditions, {"name": "boom", "expression": "object.nope == 1"}]
    r = MatchConditions(failing, "Fail").match(a)
    assert not r.matches and r.error == "expression 'object.nope == 1' resulted in error: no such key: nope"
    r = MatchConditions(failing, "Ignore").match(a)
    assert (r.matches, r.error) == (False, "")
    # a false condition wins over an error, whatever the policy
    r = MatchConditions([{"name": "boom", "expression": "object.nope == 1"}, {"name": "no", "expression": "false"}],
                        "Fail").match(a)
    assert (r.matches, r.failed_condition, r.error) == (False, "no", "")
    assert MatchConditions([{"name": "x", "expression": "'a'"}]).compile_errors() == [
        "must evaluate to bool but got string"]


def test_regex_is_linear_time() -> None:
    """find() on a pattern that backtracks exponentially in Python's re answers at once (RE2)."""
    r = evaluate("object.s.find('(a+)+$') == ''", {"s": "a" * 20_000 + "!"})
    assert r.value is True
    assert evaluate("object.s.matches('(a+)+$')", {"s": "a" * 20_000 + "!"}).value is False


def test_a_server_without_policies_does_not_load_the_engine() -> None:
    """The CEL engine (~30 ms to import) waits for the first policy, webhook condition or
    policy write: a server with its whole admission chain starts without it."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from kubeplane.apiserver.server import APIServer\n"
            "from kubeplane.storage import new_storage\n"
            "APIServer(new_storage('memory'))\n"
            "print(sorted(m for m in ('cel_expr_python', 're2', 'kubeplane.apiserver.cel.compiler') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
