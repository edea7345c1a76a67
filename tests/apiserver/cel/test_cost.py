"""CEL cost: upstream's runtime cost tables (k8s.io/apiserver pkg/cel/library/cost_test.go),
the per-call limit over actual values, the per-policy budget and the CRD estimate's message."""
from __future__ import annotations

import pytest

from kubeplane.apiserver.cel import compiler, cost

ENV = compiler.env("object", "authorizer")

IPV4, IPV6 = "ip('192.168.0.1')", "ip('2001:db8:3333:4444:5555:6666:7777:8888')"
CIDR4, CIDR6 = "cidr('192.168.0.0/16')", "cidr('2001:db8::/32')"
INTS, STRINGS = "[1, 2, 3, 4, 5]", "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901']"
UINTS, BOOLS = "[uint(1), uint(2), uint(3), uint(4), uint(5)]", "[false, true, false, true, false]"
DOUBLES = "[1.0, 2.0, 3.0, 4.0, 5.0]"
FIFTY = "'01234567890123456789012345678901234567890123456789'"
URL = "url('https:://kubernetes.io/')"

# (expression, upstream's expectRuntimeCost)
RUNTIME_COSTS: list[tuple[str, int]] = [
    # TestListsCost, TestIndexOfCost
    *[(f"{INTS}{op}", 15) for op in (".sum()", ".isSorted()", ".max()", ".min()", ".indexOf(3)", ".lastIndexOf(3)")],
    *[(f"{DOUBLES}{op}", 15) for op in (".sum()", ".isSorted()", ".max()", ".min()", ".indexOf(3.0)")],
    *[(f"{UINTS}{op}", 20) for op in (".sum()", ".isSorted()", ".max()", ".min()")],
    (f"{UINTS}.indexOf(uint(3))", 21),
    *[(f"{BOOLS}{op}", 15) for op in (".isSorted()", ".max()", ".min()", ".indexOf(true)")],
    *[(f"{STRINGS}{op}", 15) for op in (".isSorted()", ".max()", ".min()", ".indexOf('x')", ".lastIndexOf('x')")],
    (f"{FIFTY}.indexOf('123')", 5), (f"{FIFTY}.lastIndexOf('123')", 5),
    # TestURLsCost
    *[(f"{URL}{op}", 4) for op in (".getScheme()", ".getHostname()", ".getHost()", ".getPort()",
                                   ".getEscapedPath()", ".getQuery()")],
    (f"{URL} == url('https:://kubernetes.io/')", 7), (f"{URL} == url('http://x.b')", 5),
    # TestIPCost
    (IPV4, 2), (IPV6, 4),
    *[(f"{ip}{op}", base + 1) for ip, base in ((IPV4, 2), (IPV6, 4))
      for op in (".family()", ".isUnspecified()", ".isLoopback()", ".isLinkLocalMulticast()",
                 ".isLinkLocalUnicast()", ".isGlobalUnicast()")],
    (f"{IPV4} == ip('192.168.0.1')", 5), (f"{IPV6} == ip('192.168.0.1')", 7),
    # TestIPIsCanonicalCost
    ("ip.isCanonical('192.168.0.1')", 3), ("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8),
    ("ip.isCanonical('2001:db8::abcd')", 3),
    # TestCIDRCost
    (CIDR4, 2), (CIDR6, 2),
    *[(f"{c}{op}", 3) for c in (CIDR4, CIDR6) for op in (".ip()", ".prefixLength()", ".masked()")],
    (f"{CIDR4} == cidr('2001:db8::/32')", 5),
    *[(f"{CIDR4}{op}", 2 + extra) for op, extra in (
        (".containsCIDR(cidr('192.0.0.0/30'))", 5), (".containsCIDR(cidr('192.168.0.0/16'))", 5),
        (".containsCIDR('192.0.0.0/30')", 5), (".containsCIDR('192.168.0.0/16')", 5),
        (".containsIP(ip('192.0.0.1'))", 2), (".containsIP(ip('192.169.0.1'))", 3),
        (".containsIP(ip('192.169.169.250'))", 3), (".containsIP('192.0.0.1')", 2), (".containsIP('192.169.0.1')", 3))],
    *[(f"{CIDR6}{op}", 2 + extra) for op, extra in (
        (".containsCIDR(cidr('2001:db8::/126'))", 5), (".containsCIDR(cidr('2001:db8::/32'))", 5),
        (".containsCIDR('2001:db8::/126')", 5), (".containsCIDR('2001:db8::/32')", 5),
        (".containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", 5), (".containsIP(ip('2001:db8::1'))", 3),
        (".containsIP('2001:db8:3333:4444:5555:6666:7777:8888')", 5), (".containsIP('2001:db8::1')", 3))],
    # TestStringLibrary
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", 9),
    ("'ABCDEFGHIJ abcdefghij'.upperAscii()", 3),
    ("'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()", 9),
    ("strings.quote('ABCDEFGHIJ abcdefghij')", 3),
    ("strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", 9),
    ("'abc 123 def 123'.replace('123', '456')", 3), ("'abc 123 def 123'.replace('', 'x')", 3),
    ("'abc 123 def 123'.replace('123', '')", 3), ("'abc 123 def 123'.replace('123', '456', 1)", 3),
    ("'abc 123 def 123'.split(' ')", 3), ("'abc 123 def 123'.split(' ', 1)", 3),
    ("'abc 123 def 123'.substring(5)", 2), ("'abc 123 def 123'.substring(5, 8)", 2),
    ("'  abc 123 def 123  '.trim()", 2),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')", 15),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()", 13),
    ("'abc 123 def 123'.find('123')", 2), ("'abc 123 def 123'.findAll('123')", 2),
    ("'abc 123 def 123'.findAll('123', 1)", 2),
    # TestAuthzLibrary
    ("authorizer.path('/healthz')", 2),
    ("authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')", 6),
    ("authorizer.path('/healthz').check('get').allowed()", 350003),
    ("authorizer.group('').resource('pods').fieldSelector('spec.nodeName=example-node-name.fully.qualified.domain."
     "name.example.com')", 1821),
    ("authorizer.group('').resource('pods').labelSelector('spec.nodeName=example-node-name.fully.qualified.domain."
     "name.example.com')", 1821),
    ("authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')"
     ".check('create').allowed()", 350007),
    ("authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')"
     ".check('create').reason()", 350007),
]


@pytest.mark.parametrize("expr, want", RUNTIME_COSTS, ids=[c[0] for c in RUNTIME_COSTS])
def test_upstream_runtime_cost(expr: str, want: int) -> None:
    r = ENV.compile(expr, (compiler.ANY,))
    assert not r.error, r.error
    assert cost.runtime_estimate(r.ast, {}, 0)[0] == want
    # constants only: the compile-time estimate is the same number
    assert r.static_cost == want


def _eval(expr: str, obj: object) -> compiler.EvaluationResult:
    env = compiler.env("object")
    r = env.compile(expr, (compiler.ANY,))
    assert not r.error, r.error
    return compiler.evaluate(r, env.activation({"object": obj}))


def test_runtime_cost_follows_the_values_reached() -> None:
    """What the expression reads decides its cost, not the size of the whole object: a name's
    regex on a 5 MB object is cheap, the same regex over the 5 MB string is not
    (ceil(5,000,001 * 0.1) * ceil(6 * 0.25) = 1,000,002)."""
    obj = {"metadata": {"name": "abc"}, "data": "x" * 5_000_000}
    small = _eval("object.metadata.name.matches('^a.*$')", obj)
    assert small.value is True and small.cost == 1 + 1 + 1 + 1 * 2   # 3 selects, ceil(.4) * ceil(1.5)
    big = _eval("object.data.matches('^a.*$')", obj)
    assert big.cost_exceeded and big.error == (
        "expression 'object.data.matches('^a.*$')' resulted in error: operation cancelled: actual cost limit exceeded")
    # a comprehension costs its items: 3 * (cond 2 + step 3 + startsWith 1) and the range's selects
    r = _eval("object.items.all(i, i.name.startsWith('a'))", {"items": [{"name": "a" * 5}] * 3})
    assert r.value is True and r.refine is not None and 0 < r.refine() < 40 <= r.cost   # the bound, then exact


def test_per_call_limit_on_actual_iterations() -> None:
    """cel-go's limit (1,000,000) on a nested loop: 1,000 x 1,000 items is over it, 100 x 100 not."""
    expr = "object.l.all(a, object.l.all(b, a + b >= 0))"
    assert _eval(expr, {"l": list(range(1000))}).cost_exceeded
    ok = _eval(expr, {"l": list(range(90))})
    assert ok.value is True and 90 * 90 < ok.cost < compiler.PER_CALL_LIMIT


def test_budget() -> None:
    b = compiler.Budget(10)
    assert b.charge(6) and b.charge(4) and not b.charge(1)
    # bounds are made exact before the budget is declared spent
    b = compiler.Budget(10)
    assert b.charge(6, lambda: 2) and b.charge(4) and b.charge(3, lambda: 3) and b.remaining == 1
    assert compiler.OUT_OF_BUDGET == ("validation failed due to running out of cost budget, "
                                      "no further validation rules will be run")


@pytest.mark.parametrize("spent, want", [
    (1_100_000, "1.100000x"), (2_540_000, "2.5x"), (150_000_000, "more than 100x")])
def test_exceeds_budget_message(spent: int, want: str) -> None:
    """Upstream's text for a CRD rule over its estimated budget (issue 13 uses it)."""
    assert cost.exceeds_budget_message("estimated rule cost", spent, compiler.PER_CALL_LIMIT) == (
        f"estimated rule cost exceeds budget by factor of {want} (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)")
