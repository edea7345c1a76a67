"""Kubernetes' CEL libraries, with upstream's cases: pkg/cel/library (ip_test.go, cidr_test.go,
quantity_test.go, semver_test.go, and the examples in lists.go, regex.go and urls.go's doc
comments). Not reproduced, the engine cannot: `type(ip('...')) == net.IP` (the opaque values
are maps here), and the compile-time refusal of string(quantity(...)) (a runtime error here)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.cel import compiler

ERR = object()


def run(expr: str) -> compiler.EvaluationResult:
    env = compiler.env("object")
    r = env.compile(expr, (compiler.ANY,))
    assert not r.error, r.error
    return compiler.evaluate(r, env.activation({"object": {}}))


CASES: list[tuple[str, Any]] = [
    # lists.go
    ("[1, 2, 3].isSorted()", True), ("['a', 'b', 'b', 'c'].isSorted()", True), ("[2.0, 1.0].isSorted()", False),
    ("[1].isSorted()", True), ("[].isSorted()", True),
    ("[1, 3].sum()", 4), ("[1.0, 3.0].sum()", 4.0), ("[].sum()", 0),
    ("[1, 3].min()", 1), ("[1, 3].max()", 3), ("[1].min()", 1),
    ("[1, 2, 2, 3].indexOf(2)", 1), ("['a', 'b', 'b', 'c'].lastIndexOf('b')", 2), ("[1.0].indexOf(1.1)", -1),
    ("[].indexOf('string')", -1), ("'abcb'.indexOf('b')", 1),
    # regex.go
    ("'abc 123'.find('[0-9]+')", "123"), ("'abc 123'.find('xyz')", ""),
    ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]), ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    ("'123 abc 456'.findAll('xyz')", []),
    # urls.go
    ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", True), ("isURL('/absolute-path')", True),
    ("isURL('https://a:b:c/')", False), ("isURL('../relative-path')", False),
    ("url('/path').getScheme()", ""), ("url('https://example.com/').getScheme()", "https"),
    ("url('https://example.com:80/').getHost()", "example.com:80"), ("url('https://example.com/').getHost()", "example.com"),
    ("url('https://[::1]:80/').getHost()", "[::1]:80"), ("url('https://[::1]/').getHost()", "[::1]"),
    ("url('/path').getHost()", ""), ("url('https://example.com:80/').getHostname()", "example.com"),
    ("url('https://127.0.0.1:80/').getHostname()", "127.0.0.1"), ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('/path').getHostname()", ""), ("url('https://example.com:80/').getPort()", "80"),
    ("url('https://example.com/').getPort()", ""), ("url('/path').getPort()", ""),
    ("url('https://example.com/path').getEscapedPath()", "/path"),
    ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
    ("url('https://example.com').getEscapedPath()", ""),
    ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", {"k1": ["a"], "k2": ["b", "c"]}),
    ("url('https://example.com/path?key with spaces=value with spaces').getQuery()",
     {"key with spaces": ["value with spaces"]}),
    ("url('https://example.com/path?').getQuery()", {}), ("url('https://example.com/path').getQuery()", {}),
    # quantity_test.go
    ("isQuantity('20')", True), ("isQuantity('20M')", True), ("isQuantity('20Mi')", True),
    ("isQuantity('20Mo')", False), ("isQuantity('10Mm')", False),
    ("quantity('200M') == quantity('200M')", True),
    ("quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')", True),
    ("quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M') && "
     "quantity('0.002G') == quantity('2000k')", True),
    ("quantity('200M') == quantity('0.3G')", False),
    ("quantity('50M').isLessThan(quantity('50Mi'))", True), ("quantity('50M').isLessThan(quantity('100M'))", True),
    ("quantity('100M').isLessThan(quantity('50M'))", False),
    ("quantity('50Mi').isGreaterThan(quantity('50M'))", True),
    ("quantity('150Mi').isGreaterThan(quantity('100Mi'))", True),
    ("quantity('50M').isGreaterThan(quantity('100M'))", False),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0), ("quantity('50M').compareTo(quantity('50Mi'))", -1),
    ("quantity('50Mi').compareTo(quantity('50M'))", 1),
    ("quantity('50k').add(quantity('20')) == quantity('50.02k')", True),
    ("quantity('50k').add(20).isLessThan(quantity('50020'))", False),
    ("quantity('50k').sub(quantity('20')) == quantity('49.98k')", True),
    ("quantity('50k').sub(20) == quantity('49980')", True),
    ("quantity('50k').add(20).sub(quantity('100k')).asInteger()", -49980),
    ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger()", 20),
    ("quantity('50k').asInteger()", 50000),
    ("quantity('9999999999999999999999999999999999999G').isInteger()", False),
    ("quantity('50').isInteger()", True), ("quantity('50.703k').asApproximateFloat()", 50703.0),
    ("[quantity('9999999999999999999999999999999999999')].all(x, "
     "x.add(quantity('1')).compareTo(x.add(quantity('2'))) == -1)", True),
    ("quantity('10Mo')", ERR), ("quantity('9999999999999999999999999999999999999G').asInteger()", ERR),
    ("quantity('10Mm')", ERR),
    # Quantity.Equal compares values, whatever the format each was written in
    ("quantity('1') == quantity('1000m')", True), ("quantity('1Ki') == quantity('1024')", True),
    ("quantity('1e3') == quantity('1k')", True), ("[quantity('1Ki')] == [quantity('1024')]", True),
    ("quantity('1Ki') == quantity('1k')", False), ("quantity('12Mi') == quantity('12582912')", True),
    # ip_test.go
    ("isIP('192.168.0.1')", True), ("isIP('192.168.0.1.0')", False), ("ip.isCanonical('127.0.0.1')", True),
    ("ip('192.168.0.1').family()", 4), ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('127.0.0.1').isUnspecified()", False), ("ip('127.0.0.1').isLoopback()", True),
    ("ip('1.2.3.4').isLoopback()", False), ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('224.0.1.1').isLinkLocalMulticast()", False), ("ip('169.254.169.254').isLinkLocalUnicast()", True),
    ("ip('192.168.0.1').isLinkLocalUnicast()", False), ("ip('192.168.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False), ("isIP('2001:db8::68')", True),
    ("isIP('2001:db8:::68')", False), ("ip.isCanonical('2001:db8::68')", True),
    ("ip.isCanonical('2001:DB8::68')", False), ("ip('2001:db8::68').family()", 6),
    ("ip('::').isUnspecified()", True), ("ip('::1').isUnspecified()", False), ("ip('::1').isLoopback()", True),
    ("ip('2001:db8::abcd').isLoopback()", False), ("ip('ff02::1').isLinkLocalMulticast()", True),
    ("ip('fd00::1').isLinkLocalMulticast()", False), ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('fd80::1').isLinkLocalUnicast()", False), ("ip('2001:db8::abcd').isGlobalUnicast()", True),
    ("ip('ff00::1').isGlobalUnicast()", False), ("ip('192.168.0.1.0')", ERR), ("ip.isCanonical('127.0.0.1.0')", ERR),
    # cidr_test.go
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", False),
    ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", True),
    ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", False),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))", True),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.1/32'))", True),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))", False),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.169.0.1/32'))", False),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')", True),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')", False),
    ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", True),
    ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24').prefixLength()", 24),
    ("cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))", True),
    ("cidr('2001:db8::/32').containsIP(ip('2001:dc8::1'))", False),
    ("cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/33'))", True),
    ("cidr('2001:db8::/32').containsCIDR('2001:db8::/31')", False),
    ("cidr('2001:db8:1::/32').masked() == cidr('2001:db8::/32')", True),
    ("cidr('2001:db8::/32').prefixLength()", 32),
    ("cidr('192.168.0.0/')", ERR), ("cidr('2001:db8::/')", ERR),
    ("cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('2001:db8::/32').ip() == ip('2001:db8::')", True),
    ("cidr('2001:db8::/32').masked() == cidr('2001:db8::/32')", True),
    # string() of an IP or a CIDR (netip's String(): canonical address, host bits kept)
    ("string(ip('192.168.0.1'))", "192.168.0.1"), ("string(cidr('192.168.0.0/24'))", "192.168.0.0/24"),
    ("string(ip('2001:0DB8::68'))", "2001:db8::68"), ("string(cidr('192.168.0.1/24'))", "192.168.0.1/24"),
    ("string(cidr('192.168.0.1/24').masked())", "192.168.0.0/24"), ("string(cidr('2001:db8::/32').ip())", "2001:db8::"),
    # semver_test.go
    ("isSemver('1.2.3-beta.1+build.1')", True), ("isSemver('')", False), ("isSemver('v1.0.0')", False),
    ("isSemver(' 1.0.0')", False), ("isSemver('1. 0.0')", False), ("isSemver('1.0.0 ')", False),
    ("isSemver('01.01.01')", False), ("isSemver('1')", False), ("isSemver('1.1')", False),
    ("isSemver('', true)", False), ("isSemver(' 1.0.0', true)", False), ("isSemver('1. 0.0', true)", False),
    ("isSemver('1.0.0 ', true)", False), ("isSemver('v1.0.0', true)", True), ("isSemver('01.01.01', true)", True),
    ("isSemver('1', true)", True), ("isSemver('1.1', true)", True),
    ("semver('v01.01', true) == semver('1.1.0')", True), ("semver('1.2.3') == semver('1.2.3')", True),
    ("semver('1.2.3') == semver('1.0.0')", False),
    ("semver('1.0.0').isLessThan(semver('1.2.3'))", True), ("semver('1.0.0').isLessThan(semver('1.0.0'))", False),
    ("semver('1.2.3').isGreaterThan(semver('1.0.0'))", True),
    ("semver('1.0.0').isGreaterThan(semver('1.0.0'))", False),
    ("semver('1.2.3').compareTo(semver('1.2.3'))", 0), ("semver('1.0.0').compareTo(semver('1.2.3'))", -1),
    ("semver('1.2.3').compareTo(semver('1.0.0'))", 1),
    ("semver('1.2.3').major()", 1), ("semver('1.2.3').minor()", 2), ("semver('1.2.3').patch()", 3),
    # format_test.go (validate() gives the error list, empty when valid: see library.py)
    *[(f"format.{f}().validate({v!r}).hasValue()", False) for f, v in (
        ("dns1123Label", "my-label-name"), ("dns1123Subdomain", "apiextensions.k8s.io"),
        ("qualifiedName", "apiextensions.k8s.io/v1beta1"), ("dns1123LabelPrefix", "my-label-prefix-"),
        ("dns1123SubdomainPrefix", "mysubdomain.prefix.-"), ("dns1035LabelPrefix", "my-label-prefix-"),
        ("uri", "http://example.com"), ("uuid", "123e4567-e89b-12d3-a456-426614174000"), ("byte", "aGVsbG8="),
        ("date", "2021-01-01"), ("datetime", "2021-01-01T00:00:00Z"), ("dns1123Subdomain", "example.com"),
        ("dns1035Label", "my-label-name"), ("qualifiedName", "my.name"), ("labelValue", "my-cool-label-Value"))],
    ("format.dns1123Label().validate('contains a space').value()", [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
        "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ("format.dns1123Subdomain().validate('contains a space').value()", [
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ("format.dns1035Label().validate('contains a space').value()", [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ("format.qualifiedName().validate('contains a space').value()", [
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    ("format.dns1123LabelPrefix().validate('contains a space-').size()", 1),
    ("format.byte().validate('aGVsbG8').value()", ["invalid base64"]),
    ("format.date().validate('2020-01-32').value()", ["invalid date"]),
    ("format.datetime().validate('2020-01-32T00:00:00Z').value()", ["invalid datetime"]),
    ("format.named('unknown').hasValue()", False),
    *[(f"format.named('{f}').hasValue() && format.named('{f}').value() == format.{f}()", True)
      for f in ("dns1123Label", "uri", "datetime")],
    ("format.dns1123Label() == format.dns1123Subdomain()", False),
    # lists.go (v1, Kubernetes 1.37)
    ("[1, 2, 3].includes(2)", True), ("[1, 2, 3].includes(4)", False), ("'model-a'.includes('model-a')", True),
    ("'model-a'.includes('model-b')", False), ("[1.0, 2.0].includes(1)", True),
    # cel-go's ext.Sets (sets_test.go's cases)
    ("sets.contains([], [])", True), ("sets.contains([1], [])", True), ("sets.contains([1], [1])", True),
    ("sets.contains([1], [1, 1])", True), ("sets.contains([1, 2], [2, 1])", True), ("sets.contains([1], [1.0, 1u])", True),
    ("sets.contains([1, 2], [2, 3])", False), ("sets.contains([[1], [2, 3]], [[2, 3]])", True),
    ("sets.equivalent([], [])", True), ("sets.equivalent([1], [1, 1])", True), ("sets.equivalent([1, 2], [2, 1, 1])", True),
    ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", True), ("sets.equivalent([2, 1], [1])", False),
    ("sets.intersects([1], [1])", True), ("sets.intersects([1], [1.0, 2])", True), ("sets.intersects([], [])", False),
    ("sets.intersects([1], [])", False), ("sets.intersects([1], [2])", False),
    # semver precedence (semver.org 11): pre-releases below the release, numeric identifiers lowest
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", True),
    ("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", True),
    ("semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))", True),
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))", True),
    ("semver('1.0.0+a') == semver('1.0.0+b')", True),
]


@pytest.mark.parametrize("expr, want", CASES, ids=[c[0] for c in CASES])
def test_library(expr: str, want: Any) -> None:
    r = run(expr)
    if want is ERR:
        assert r.error, r
        return
    assert not r.error, r.error
    assert r.value == want and type(r.value) is type(want), r.value


# upstream's tables compare these runtime errors whole (ip_test.go, cidr_test.go, quantity_test.go)
UPSTREAM_ERRORS = [
    ("ip('192.168.0.1.0')", 'IP Address "192.168.0.1.0" parse error during conversion from string: '
                            'ParseAddr("192.168.0.1.0"): IPv4 address too long'),
    ("ip.isCanonical('127.0.0.1.0')", 'IP Address "127.0.0.1.0" parse error during conversion from string: '
                                      'ParseAddr("127.0.0.1.0"): IPv4 address too long'),
    ("ip('2001:db8:::68')", 'IP Address "2001:db8:::68" parse error during conversion from string: '
                            'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit '
                            '(at ":68")'),
    ("ip.isCanonical('2001:db8:::68')", 'IP Address "2001:db8:::68" parse error during conversion from string: '
                                        'ParseAddr("2001:db8:::68"): each colon-separated field must have at least '
                                        'one digit (at ":68")'),
    ("cidr('192.168.0.0/')", 'network address parse error during conversion from string: network address parse '
                             'error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after '
                             'slash: ""'),
    ("cidr('2001:db8::/')", 'network address parse error during conversion from string: network address parse '
                            'error during conversion from string: netip.ParsePrefix("2001:db8::/"): bad bits after '
                            'slash: ""'),
    ("quantity('10Mm')", "unable to parse quantity's suffix"),
    # Go's netip messages beyond upstream's tables, and Kubernetes' own refusals
    ("ip('1.2.3')", 'IP Address "1.2.3" parse error during conversion from string: ParseAddr("1.2.3"): '
                    'IPv4 address too short'),
    ("ip('01.2.3.4')", 'IP Address "01.2.3.4" parse error during conversion from string: ParseAddr("01.2.3.4"): '
                       'IPv4 field has octet with leading zero'),
    ("ip('1.2.3.256')", 'IP Address "1.2.3.256" parse error during conversion from string: ParseAddr("1.2.3.256"): '
                        'IPv4 field has value >255'),
    ("ip('1::2::3')", 'IP Address "1::2::3" parse error during conversion from string: ParseAddr("1::2::3"): '
                      'multiple :: in address (at ":3")'),
    ("ip('host')", 'IP Address "host" parse error during conversion from string: ParseAddr("host"): '
                   'unable to parse IP'),
    ("ip('fe80::1%eth0')", 'IP address "fe80::1%eth0" with zone value is not allowed'),
    ("ip('::ffff:1.2.3.4')", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ("cidr('1.2.3.4/33')", 'network address parse error during conversion from string: network address parse '
                           'error during conversion from string: netip.ParsePrefix("1.2.3.4/33"): prefix length out '
                           'of range'),
    ("cidr('1.2.3.4/024')", 'network address parse error during conversion from string: network address parse '
                            'error during conversion from string: netip.ParsePrefix("1.2.3.4/024"): bad bits after '
                            'slash: "024"'),
    ("cidr('1.2.3.4')", 'network address parse error during conversion from string: network address parse '
                        'error during conversion from string: netip.ParsePrefix("1.2.3.4"): no \'/\''),
    ("cidr('::ffff:1.2.3.4/120')", 'network address parse error during conversion from string: IPv4-mapped IPv6 '
                                   'address "::ffff:1.2.3.4/120" is not allowed'),
    # upstream refuses it at compile time (no string overload for kubernetes.Quantity); here at runtime
    ("string(quantity('1'))", "no such overload: string"),
    ("semver('v1.0')", "No Major.Minor.Patch elements found"),
    ("semver('1.02.0')", 'Minor number must not contain leading zeroes "02"'),
    ("semver('1.0.0-01')", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("semver('1-beta', true)", "short version cannot contain PreRelease/Build meta data"),
]


@pytest.mark.parametrize("expr, message", UPSTREAM_ERRORS, ids=[c[0] for c in UPSTREAM_ERRORS])
def test_upstream_runtime_errors_whole(expr: str, message: str) -> None:
    assert run(expr).error == f"expression '{expr}' resulted in error: {message}"


@pytest.mark.parametrize("expr, message", [
    ("[].min()", "min called on empty list"),
    ("'abc'.find('[')", "Illegal regex: "),
    ("quantity('10Mo')", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("quantity('9999999999999999999999999999999999999G').asInteger()", "cannot convert value to integer"),
    ("ip('192.168.0.1.0')", 'IP Address "192.168.0.1.0" parse error during conversion from string: '
                            'ParseAddr("192.168.0.1.0")'),
    ("cidr('192.168.0.0/')", 'network address parse error during conversion from string: network address parse '
                             'error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after '
                             'slash: ""'),
    ("url('../relative-path')", 'URL parse error during conversion from string: parse "../relative-path": '
                                "invalid URI for request"),
])
def test_library_errors(expr: str, message: str) -> None:
    r = run(expr)
    assert r.error.startswith(f"expression '{expr}' resulted in error: {message}"), r.error


@pytest.mark.parametrize("expr, message", [
    ("isIP(cidr('192.168.0.0/24'))", "found no matching overload for 'isIP'"),
    ("quantity(1)", "found no matching overload for 'quantity' applied to '(int)'"),
])
def test_library_compile_errors(expr: str, message: str) -> None:
    r = compiler.env("object").compile(expr, (compiler.ANY,))
    assert message in r.error


def test_library_compatibility() -> None:
    """Upstream: TestLibraryCompatibility — the functions Kubernetes' libraries declare, by the
    release that added them (the format.<name>() constants are declared apart, as upstream's
    CompileOptions does; hasValue/value stand in for the optionals upstream returns)."""
    from kubeplane.apiserver.cel import library
    known = {
        "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "find", "findAll", "url", "getScheme", "getHost",
        "getHostname", "getPort", "getEscapedPath", "getQuery", "isURL",
        "path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "check", "allowed", "reason",
        "errored", "error",
        "add", "asApproximateFloat", "asInteger", "compareTo", "isGreaterThan", "isInteger", "isLessThan", "isQuantity",
        "quantity", "sign", "sub",
        "ip", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast",
        "ip.isCanonical", "isIP", "cidr", "containsIP", "containsCIDR", "masked", "prefixLength", "isCIDR", "string",
        "fieldSelector", "labelSelector", "validate", "format.named", "isSemver", "major", "minor", "patch", "semver",
        "jsonpatch.escapeKey",
        "includes",
    }
    declared = {name for name, _ in library._overloads()} - {"sets.contains", "sets.equivalent", "sets.intersects"}
    constants = {f"format.{n}" for n in library.FORMAT_NAMES}
    assert declared - constants - {"hasValue", "value"} == known
