"""Kubernetes' CEL libraries as functions of the cel-expr-python environment.

Upstream: staging/src/k8s.io/apiserver/pkg/cel/library (lists.go, regex.go, quantity.go,
urls.go, ip.go, cidr.go, authz.go). The C++ runtime takes Python functions only over CEL's own
types, so upstream's opaque types (Quantity, URL, IP, CIDR, Authorizer, ...) are maps tagged
with one key (`{"@quantity": "1Gi"}`): the functions that make them return such a map and the
member functions declared on `map(string, dyn)` read it back (a map without the tag gives
upstream's "no such overload"). Errors are raised as CelError; the runtime turns them into a
CEL error value with the message, as upstream's types.NewErr.
"""
from __future__ import annotations

import functools
import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import re2  # type: ignore[import-untyped]
from cel_expr_python import cel  # type: ignore[import-untyped]

from ...api import quantity as q
from . import netip
from ..authorization.authorizer import Attributes as AuthzAttributes, Authorizer, Decision

_go_quote = netip.go_quote
T = cel.Type
DYN, BOOL, INT, STRING, DOUBLE = T.DYN, T.BOOL, T.INT, T.STRING, T.DOUBLE
LIST = T.List(DYN)
LIST_STRING = T.List(STRING)
OPAQUE = T.Map(STRING, DYN)

# The Authorizer of the request being evaluated (authorizer.check() reads it): set by
# evaluate(), never shared between concurrent evaluations (each runs to its end synchronously).
CURRENT_AUTHORIZER: ContextVar[tuple[Authorizer, Any] | None] = ContextVar("cel_authorizer", default=None)


class CelError(Exception):
    """A runtime error with upstream's message."""


def _no_overload(name: str) -> CelError:
    return CelError(f"no such overload: {name}")


def _opaque(tag: str, value: Any, name: str) -> Any:
    if not isinstance(value, dict) or tag not in value:
        raise _no_overload(name)
    return value[tag]


# --- lists (upstream: lists.go) ------------------------------------------------------------------

def _comparable(items: list[Any], name: str) -> list[Any]:
    kinds = {type(x) if not isinstance(x, bool) else bool for x in items}
    if len(kinds) > 1 and not kinds <= {int, float}:
        raise _no_overload(name)
    if kinds & {dict, list, type(None)}:
        raise _no_overload(name)
    return items


def is_sorted(items: list[Any]) -> bool:
    items = _comparable(list(items), "isSorted")
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def list_sum(items: list[Any]) -> Any:
    items = _comparable(list(items), "sum")
    return sum(items) if items else 0


def _extreme(op: str, pick: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def f(items: list[Any]) -> Any:
        items = _comparable(list(items), op)
        if not items:
            raise CelError(f"{op} called on empty list")
        return pick(items)
    return f


def index_of(items: list[Any], value: Any) -> int:
    for i, x in enumerate(items):
        if x == value and type(x) is type(value):
            return i
    return -1


def last_index_of(items: list[Any], value: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if items[i] == value and type(items[i]) is type(value):
            return i
    return -1


def includes(target: Any, arg: Any) -> bool:
    """Upstream: includes (lists v1, Kubernetes 1.37): an item of the list equal to arg, or the
    target itself equal to it."""
    if isinstance(target, list):
        return any(_cel_equal(x, arg) for x in target)
    return _cel_equal(target, arg)


def _cel_equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality on plain values (1 == 1.0, true != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


# --- sets (cel-go's ext.Sets, in Kubernetes' base environment since 1.29) ---------------------

def sets_contains(a: list[Any], b: list[Any]) -> bool:
    """Every item of b is in a."""
    return all(any(_cel_equal(x, y) for x in a) for y in b)


def sets_equivalent(a: list[Any], b: list[Any]) -> bool:
    return sets_contains(a, b) and sets_contains(b, a)


def sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return any(_cel_equal(x, y) for x in a for y in b)


# --- regex (upstream: regex.go). RE2, as upstream (and as CEL's own matches()): linear in the
# input whatever the pattern, where Python's re backtracks exponentially on `(a+)+$`. -----------

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=256)
def _compile_regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as e:
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise CelError(f"Illegal regex: {detail}") from None


def find(s: str, pattern: str) -> str:
    m = _compile_regex(pattern).search(s)
    return m.group(0) if m else ""


def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _compile_regex(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


# --- quantity (upstream: quantity.go) ------------------------------------------------------------

def _q(v: Any, name: str) -> q.Quantity:
    return q.parse(_opaque("@quantity", v, name))


def _wrap_q(x: q.Quantity) -> dict[str, str]:
    """The tag holds the value in one format whatever the quantity's own, so that CEL's map
    equality is upstream's Quantity.Equal (by value: 1Ki == 1024, 1e3 == 1k). Upstream has no
    string() of a quantity, so the format written is never shown."""
    return {"@quantity": str(q.Quantity(x.value, q.DECIMAL_SI))}


# Go's parseQuantityString accepts these shapes; a string of this shape that still fails has a
# suffix ParseQuantity does not know (10Mm): upstream's ErrSuffix, not ErrFormatWrong.
_QUANTITY_SHAPE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eEinumkKMGTP]*(?:[-+]?[0-9]+)?")


def to_quantity(s: str) -> dict[str, str]:
    parsed = q.Quantity.parse(s)
    if parsed is None:
        if _QUANTITY_SHAPE.fullmatch(s):
            raise CelError("unable to parse quantity's suffix")
        raise CelError(q.PARSE_ERROR)
    return _wrap_q(parsed)


def is_quantity(s: str) -> bool:
    return q.Quantity.parse(s) is not None


def quantity_int(v: Any) -> int:
    x = _q(v, "asInteger")
    if x.value.denominator != 1 or not -(2 ** 63) <= x.value.numerator < 2 ** 63:
        raise CelError("cannot convert value to integer")
    return int(x.value)


def quantity_is_integer(v: Any) -> bool:
    x = _q(v, "isInteger")
    return x.value.denominator == 1 and -(2 ** 63) <= x.value.numerator < 2 ** 63


def compare(a: Any, b: Any, name: str) -> int:
    """Quantity.Cmp or semver's Compare, by the receiver's tag (mixed kinds: no such overload)."""
    if isinstance(a, dict) and "@semver" in a:
        _opaque("@semver", b, name)
        return semver_compare(a, b)
    return _q(a, name).cmp(_q(b, name))


def _q_other(other: Any, name: str) -> q.Quantity:
    return q.Quantity(other) if isinstance(other, int) and not isinstance(other, bool) else _q(other, name)


# --- url (upstream: urls.go) ---------------------------------------------------------------------

def _parse_url(s: str) -> urllib.parse.SplitResult:
    """Go's url.ParseRequestURI: an absolute URL or an absolute path (no relative reference)."""
    try:
        u = urllib.parse.urlsplit(s)
        _ = u.port                                     # raises for a port that is not a number
    except ValueError as e:
        raise CelError(f"URL parse error during conversion from string: parse {_go_quote(s)}: {e}") from None
    if not (u.scheme or s.startswith("/")):
        raise CelError(f"URL parse error during conversion from string: parse {_go_quote(s)}: invalid URI for request")
    return u


def to_url(s: str) -> dict[str, str]:
    _parse_url(s)
    return {"@url": s}


def is_url(s: str) -> bool:
    try:
        _parse_url(s)
    except CelError:
        return False
    return True


def _url(v: Any, name: str) -> urllib.parse.SplitResult:
    return urllib.parse.urlsplit(_opaque("@url", v, name))


def _hostname(u: urllib.parse.SplitResult) -> str:
    host = u.netloc.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if ":" in host else host


def _port(u: urllib.parse.SplitResult) -> str:
    host = u.netloc.rsplit("@", 1)[-1]
    tail = host.rsplit("]", 1)[-1] if host.startswith("[") else host
    return tail.rsplit(":", 1)[1] if ":" in tail else ""


def _query(v: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_url(v, "getQuery").query, keep_blank_values=True)


# --- ip / cidr (upstream: ip.go, cidr.go). Parsed as Go's netip parses (netip.py, for its
# error texts); the tag holds netip's String() of the address or prefix. -------------------------

def _parse_ip(s: str) -> netip.Addr:
    """Upstream: parseIPAddr — netip.ParseAddr, then no zone and no IPv4-mapped IPv6."""
    try:
        ip, zone = netip.parse_addr(s)
    except netip.ParseError as e:
        raise CelError(f"IP Address {_go_quote(s)} parse error during conversion from string: {e}") from None
    if zone:
        raise CelError(f"IP address {_go_quote(s)} with zone value is not allowed")
    if netip.is_4in6(ip):
        raise CelError(f"IPv4-mapped IPv6 address {_go_quote(s)} is not allowed")
    return ip



def to_ip(s: str) -> dict[str, str]:
    return {"@ip": netip.addr_string(_parse_ip(s))}


def is_ip(s: str) -> bool:
    try:
        _parse_ip(s)
    except CelError:
        return False
    return True


def _ip(v: Any, name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(_opaque("@ip", v, name))


def _parse_cidr(s: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    """Upstream: parseCIDR (netip.ParsePrefix: the address may have host bits set), its error
    wrapped twice as stringToCIDR does."""
    prefix = "network address parse error during conversion from string: " * 2
    try:
        ip, bits = netip.parse_prefix(s)
    except netip.ParseError as e:
        raise CelError(f"{prefix}{e}") from None
    if netip.is_4in6(ip):
        raise CelError(f"network address parse error during conversion from string: "
                       f"IPv4-mapped IPv6 address {_go_quote(s)} is not allowed")
    return ipaddress.ip_interface(f"{ip}/{bits}")


def to_cidr(s: str) -> dict[str, str]:
    return {"@cidr": _cidr_string(_parse_cidr(s))}


def _cidr_string(c: ipaddress.IPv4Interface | ipaddress.IPv6Interface) -> str:
    """netip.Prefix.String(): the address as written (host bits kept) and the length."""
    return f"{netip.addr_string(c.ip)}/{c.network.prefixlen}"


def is_cidr(s: str) -> bool:
    try:
        _parse_cidr(s)
    except CelError:
        return False
    return True


def _cidr(v: Any, name: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    return ipaddress.ip_interface(_opaque("@cidr", v, name))


def to_string(v: Any) -> str:
    """Upstream: ipToString / cidrToString (string() of the other opaque values has no overload;
    they share the map type here, so the check is at runtime)."""
    if isinstance(v, dict) and len(v) == 1:
        if "@ip" in v:
            return str(v["@ip"])
        if "@cidr" in v:
            return str(v["@cidr"])
    raise _no_overload("string")


def cidr_contains_ip(c: Any, other: Any) -> bool:
    ip = _parse_ip(other) if isinstance(other, str) else _ip(other, "containsIP")
    return ip in _cidr(c, "containsIP").network


def cidr_contains_cidr(c: Any, other: Any) -> bool:
    inner = (_parse_cidr(other) if isinstance(other, str) else _cidr(other, "containsCIDR")).network
    outer = _cidr(c, "containsCIDR").network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def is_canonical_ip(s: str) -> bool:
    """Upstream: ip.isCanonical — the address as netip.Addr.String() would write it."""
    return str(_parse_ip(s)) == s


# --- semver (upstream: semverlib.go, over github.com/blang/semver/v4's Parse) ------------------

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


def _semver_number(part: str, what: str) -> int:
    if not set(part) <= _NUMBERS:
        raise CelError(f"Invalid character(s) found in {what} number {_go_quote(part)}")
    if len(part) > 1 and part[0] == "0":
        raise CelError(f"{what.capitalize()} number must not contain leading zeroes {_go_quote(part)}")
    if not part:
        raise CelError('strconv.ParseUint: parsing "": invalid syntax')
    return int(part)


def parse_semver(s: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver's Parse: (major, minor, patch, pre-release identifiers); build metadata is
    checked and dropped (it takes no part in comparisons)."""
    if not s:
        raise CelError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise CelError("No Major.Minor.Patch elements found")
    major, minor = _semver_number(parts[0], "major"), _semver_number(parts[1], "minor")
    patch, _, build = parts[2].partition("+")
    patch, dash, pre = patch.partition("-")
    prerelease = tuple(pre.split(".")) if dash else ()
    number = _semver_number(patch, "patch")
    for p in prerelease:
        if not p:
            raise CelError("Prerelease is empty")
        if not set(p) <= _ALPHANUM:
            raise CelError(f"Invalid character(s) found in prerelease {_go_quote(p)}")
        if set(p) <= _NUMBERS and len(p) > 1 and p[0] == "0":
            raise CelError(f"Numeric PreRelease version must not contain leading zeroes {_go_quote(p)}")
    if "+" in parts[2]:
        for b in build.split("."):
            if not b:
                raise CelError("Build meta data is empty")
            if not set(b) <= _ALPHANUM:
                raise CelError(f"Invalid character(s) found in build meta data {_go_quote(b)}")
    return major, minor, number, prerelease


def _normalize_semver(s: str) -> str:
    """Upstream: normalizeAndParse's normalization (no "v", no leading zeros, .0 filled in)."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise CelError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def to_semver(s: str, normalize: bool = False) -> dict[str, str]:
    """The tag holds the version without build metadata: Equal is Compare == 0, as upstream's."""
    major, minor, patch, pre = parse_semver(_normalize_semver(s) if normalize else s)
    return {"@semver": f"{major}.{minor}.{patch}" + ("-" + ".".join(pre) if pre else "")}


def is_semver(s: str, normalize: bool = False) -> bool:
    try:
        to_semver(s, normalize)
    except CelError:
        return False
    return True


def _semver(v: Any, name: str) -> tuple[int, int, int, tuple[str, ...]]:
    return parse_semver(_opaque("@semver", v, name))


def semver_compare(a: Any, b: Any) -> int:
    """blang/semver's Compare: numbers, then a release above its pre-releases, then the
    pre-release identifiers in order (numeric ones below alphanumeric ones)."""
    x, y = _semver(a, "compareTo"), _semver(b, "compareTo")
    if x[:3] != y[:3]:
        return -1 if x[:3] < y[:3] else 1
    if not x[3] or not y[3]:
        return (not x[3]) - (not y[3])
    for p, o in zip(x[3], y[3]):
        if p == o:
            continue
        pn, on = p.isdigit(), o.isdigit()
        if pn and on:
            return -1 if int(p) < int(o) else 1
        if pn != on:
            return -1 if pn else 1
        return -1 if p < o else 1
    return (len(x[3]) > len(y[3])) - (len(x[3]) < len(y[3]))


# --- format (upstream: format.go). Upstream's validate() and format.named() return optionals;
# a Python function cannot make a CEL optional here, so validate() gives the list of errors
# (empty: valid) and format.named() the format or a "none" map, and hasValue()/value() are
# declared on those too: the documented idioms (`validate(s).hasValue()`,
# `validate(s).value().join(...)`, `format.named(n).hasValue()`) work; comparing the result
# with optional.none() or chaining optionals does not. ---------------------------------------

_UUID = re2.compile(r"(?i)(^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)|(^[0-9a-f]{32}$)",
                    _RE2_OPTIONS)
_DATE = re2.compile(r"^\d{4}-\d{2}-\d{2}$", _RE2_OPTIONS)
_TIME = re2.compile(r"^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(z|[+-]([01]\d|2[0-3]):[0-5]\d)$", _RE2_OPTIONS)


def _is_date(s: str) -> bool:
    """strfmt's date: RFC 3339 full-date (time.Parse("2006-01-02"))."""
    import datetime
    if not _DATE.match(s):
        return False
    try:
        datetime.date.fromisoformat(s)
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    """strfmt's IsDateTime: a full-date, "T", then a time with its offset (RFC 3339)."""
    parts = s.lower().split("t")
    return len(parts) == 2 and _is_date(parts[0]) and bool(_TIME.match(parts[1]))


def _is_base64(s: str) -> bool:
    import base64
    import binascii
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _formats() -> dict[str, Callable[[str], list[str]]]:
    from ...api.validation import names
    return {
        "dns1123Label": lambda v: names.name_is_dns_label(v, False),
        "dns1123Subdomain": lambda v: names.name_is_dns_subdomain(v, False),
        "dns1035Label": lambda v: names.name_is_dns1035_label(v, False),
        "qualifiedName": names.is_qualified_name,
        "dns1123LabelPrefix": lambda v: names.name_is_dns_label(v, True),
        "dns1123SubdomainPrefix": lambda v: names.name_is_dns_subdomain(v, True),
        "dns1035LabelPrefix": lambda v: names.name_is_dns1035_label(v, True),
        "labelValue": names.is_valid_label_value,
        "uri": _uri_errors,
        "uuid": lambda v: [] if _UUID.search(v) else ["does not match the UUID format"],
        "byte": lambda v: [] if _is_base64(v) else ["invalid base64"],
        "date": lambda v: [] if _is_date(v) else ["invalid date"],
        "datetime": lambda v: [] if _is_datetime(v) else ["invalid datetime"],
    }


FORMAT_NAMES = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
                "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date",
                "datetime")
_NONE = {"@none": True}


def _uri_errors(v: str) -> list[str]:
    try:
        _parse_url(v)
    except CelError as e:
        return [str(e).removeprefix("URL parse error during conversion from string: ")]
    return []


def format_validate(f: Any, value: str) -> list[str]:
    name = _opaque("@format", f, "validate")
    return list(_formats()[name](value))


def format_named(name: str) -> dict[str, Any]:
    return {"@format": name} if name in FORMAT_NAMES else dict(_NONE)


def _has_value(v: Any) -> bool:
    return bool(v) if isinstance(v, list) else "@none" not in v


def _value(v: Any) -> Any:
    if (isinstance(v, list) and not v) or (isinstance(v, dict) and "@none" in v):
        raise CelError("optional.none() dereference")
    return v


# --- authz (upstream: authz.go) ------------------------------------------------------------------

def _check(target: Any, verb: str) -> dict[str, Any]:
    current = CURRENT_AUTHORIZER.get()
    if current is None:
        raise CelError("no authorizer")
    authz, user = current
    if "@pathcheck" in target:
        a = AuthzAttributes(user=target.get("user") or user, verb=verb, resource_request=False,
                            path=target["@pathcheck"])
    else:
        rc = _opaque("@resourcecheck", target, "check")
        a = AuthzAttributes(user=target.get("user") or user, verb=verb, resource_request=True,
                            namespace=rc.get("namespace", ""), api_group=rc.get("group", ""),
                            resource=rc.get("resource", ""), subresource=rc.get("subresource", ""),
                            name=rc.get("name", ""), field_selector=rc.get("fieldSelector", ""))
    decision, reason = authz.authorize(a)
    return {"@decision": decision.value if hasattr(decision, "value") else str(decision),
            "allowed": decision is Decision.ALLOW, "reason": reason}


def _resource_field(field: str) -> Callable[[Any, str], dict[str, Any]]:
    def f(target: Any, value: str) -> dict[str, Any]:
        rc = dict(_opaque("@resourcecheck", target, field))
        rc[field] = value
        return {**target, "@resourcecheck": rc}
    return f


def _group(target: Any, group: str) -> dict[str, Any]:
    _opaque("@authorizer", target, "group")
    return {**target, "@resourcecheck": {"group": group}}


def _path(target: Any, path: str) -> dict[str, Any]:
    _opaque("@authorizer", target, "path")
    if not path:
        raise CelError("path must not be empty")
    return {**target, "@pathcheck": path}


def _service_account(target: Any, namespace: str, name: str) -> dict[str, Any]:
    from ..authentication.user import UserInfo   # the service account's user, as upstream's serviceAccountAuthorizer
    _opaque("@authorizer", target, "serviceAccount")
    sa = UserInfo(name=f"system:serviceaccount:{namespace}:{name}",
                  groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}"))
    return {"@authorizer": True, "user": sa}


def _overloads() -> Iterator[tuple[str, list[tuple[str, Any, list[Any], bool, Callable[..., Any]]]]]:
    """(function name, [(overload id, result type, parameter types, member?, impl)])."""
    yield "isSorted", [("list_is_sorted", BOOL, [LIST], True, is_sorted)]
    yield "sum", [("list_sum", DYN, [LIST], True, list_sum)]
    yield "min", [("list_min", DYN, [LIST], True, _extreme("min", min))]
    yield "max", [("list_max", DYN, [LIST], True, _extreme("max", max))]
    # The runtime dispatches Python functions on concrete kinds: one overload per element kind.
    yield "indexOf", [(f"list_a_index_of_{k}", INT, [LIST, t], True, index_of) for k, t in _ELEMENT_KINDS]
    yield "lastIndexOf", [(f"list_a_last_index_of_{k}", INT, [LIST, t], True, last_index_of)
                          for k, t in _ELEMENT_KINDS]
    yield "includes", [("list_includes_dyn_dyn", BOOL, [DYN, DYN], True, includes)]
    yield "sets.contains", [("list_sets_contains_list", BOOL, [LIST, LIST], False, sets_contains)]
    yield "sets.equivalent", [("list_sets_equivalent_list", BOOL, [LIST, LIST], False, sets_equivalent)]
    yield "sets.intersects", [("list_sets_intersects_list", BOOL, [LIST, LIST], False, sets_intersects)]
    yield "find", [("string_find_string", STRING, [STRING, STRING], True, find)]
    yield "findAll", [("string_find_all_string", LIST_STRING, [STRING, STRING], True, find_all),
                      ("string_find_all_string_int", LIST_STRING, [STRING, STRING, INT], True, find_all)]
    # quantity
    yield "quantity", [("string_to_quantity", OPAQUE, [STRING], False, to_quantity)]
    yield "isQuantity", [("is_quantity_string", BOOL, [STRING], False, is_quantity)]
    yield "sign", [("quantity_sign", INT, [OPAQUE], True, lambda v: _q(v, "sign").sign())]
    # quantity's and semver's comparisons share the opaque signature: compare() picks by tag
    yield "isGreaterThan", [("quantity_is_greater_than", BOOL, [OPAQUE, OPAQUE], True,
                             lambda a, b: compare(a, b, "isGreaterThan") == 1)]
    yield "isLessThan", [("quantity_is_less_than", BOOL, [OPAQUE, OPAQUE], True,
                          lambda a, b: compare(a, b, "isLessThan") == -1)]
    yield "compareTo", [("quantity_compare_to", INT, [OPAQUE, OPAQUE], True, lambda a, b: compare(a, b, "compareTo"))]
    yield "asApproximateFloat", [("quantity_get_float", DOUBLE, [OPAQUE], True,
                                  lambda v: float(_q(v, "asApproximateFloat").value))]
    yield "asInteger", [("quantity_get_int", INT, [OPAQUE], True, quantity_int)]
    yield "isInteger", [("quantity_is_integer", BOOL, [OPAQUE], True, quantity_is_integer)]
    yield "add", [("quantity_add", OPAQUE, [OPAQUE, OPAQUE], True,
                   lambda a, b: _wrap_q(_q(a, "add").add(_q(b, "add")))),
                  ("quantity_add_int", OPAQUE, [OPAQUE, INT], True,
                   lambda a, b: _wrap_q(_q(a, "add").add(_q_other(b, "add"))))]
    yield "sub", [("quantity_sub", OPAQUE, [OPAQUE, OPAQUE], True,
                   lambda a, b: _wrap_q(_q(a, "sub").sub(_q(b, "sub")))),
                  ("quantity_sub_int", OPAQUE, [OPAQUE, INT], True,
                   lambda a, b: _wrap_q(_q(a, "sub").sub(_q_other(b, "sub"))))]
    # url
    yield "url", [("string_to_url", OPAQUE, [STRING], False, to_url)]
    yield "isURL", [("is_url_string", BOOL, [STRING], False, is_url)]
    yield "getScheme", [("url_get_scheme", STRING, [OPAQUE], True, lambda v: _url(v, "getScheme").scheme)]
    yield "getHost", [("url_get_host", STRING, [OPAQUE], True, lambda v: _url(v, "getHost").netloc.rsplit("@", 1)[-1])]
    yield "getHostname", [("url_get_hostname", STRING, [OPAQUE], True, lambda v: _hostname(_url(v, "getHostname")))]
    yield "getPort", [("url_get_port", STRING, [OPAQUE], True, lambda v: _port(_url(v, "getPort")))]
    yield "getEscapedPath", [("url_get_escaped_path", STRING, [OPAQUE], True,
                              lambda v: urllib.parse.quote(urllib.parse.unquote(_url(v, "getEscapedPath").path),
                                                           safe="/;:@&=+$,!~*'()"))]
    yield "getQuery", [("url_get_query", T.Map(STRING, LIST_STRING), [OPAQUE], True, _query)]
    # ip / cidr
    yield "ip", [("string_to_ip", OPAQUE, [STRING], False, to_ip),
                 ("cidr_ip", OPAQUE, [OPAQUE], True, lambda c: {"@ip": str(_cidr(c, "ip").ip)})]
    yield "isIP", [("is_ip", BOOL, [STRING], False, is_ip)]
    yield "family", [("ip_family", INT, [OPAQUE], True, lambda v: _ip(v, "family").version)]
    yield "isUnspecified", [("ip_is_unspecified", BOOL, [OPAQUE], True, lambda v: _ip(v, "isUnspecified").is_unspecified)]
    yield "isLoopback", [("ip_is_loopback", BOOL, [OPAQUE], True, lambda v: _ip(v, "isLoopback").is_loopback)]
    yield "isLinkLocalMulticast", [("ip_is_link_local_multicast", BOOL, [OPAQUE], True,
                                    lambda v: _link_local_multicast(_ip(v, "isLinkLocalMulticast")))]
    yield "isLinkLocalUnicast", [("ip_is_link_local_unicast", BOOL, [OPAQUE], True,
                                  lambda v: _ip(v, "isLinkLocalUnicast").is_link_local)]
    yield "isGlobalUnicast", [("ip_is_global_unicast", BOOL, [OPAQUE], True,
                               lambda v: _global_unicast(_ip(v, "isGlobalUnicast")))]
    yield "cidr", [("string_to_cidr", OPAQUE, [STRING], False, to_cidr)]
    yield "isCIDR", [("is_cidr", BOOL, [STRING], False, is_cidr)]
    yield "containsIP", [("cidr_contains_ip_string", BOOL, [OPAQUE, STRING], True, cidr_contains_ip),
                         ("cidr_contains_ip_ip", BOOL, [OPAQUE, OPAQUE], True, cidr_contains_ip)]
    yield "containsCIDR", [("cidr_contains_cidr_string", BOOL, [OPAQUE, STRING], True, cidr_contains_cidr),
                           ("cidr_contains_cidr", BOOL, [OPAQUE, OPAQUE], True, cidr_contains_cidr)]
    yield "prefixLength", [("cidr_prefix_length", INT, [OPAQUE], True,
                            lambda c: _cidr(c, "prefixLength").network.prefixlen)]
    yield "masked", [("cidr_masked", OPAQUE, [OPAQUE], True,
                      lambda c: {"@cidr": str(_cidr(c, "masked").network)})]
    yield "string", [("opaque_to_string", STRING, [OPAQUE], False, to_string)]
    yield "ip.isCanonical", [("ip_is_canonical", BOOL, [STRING], False, is_canonical_ip)]
    # format
    yield "validate", [("format-validate", LIST_STRING, [OPAQUE, STRING], True, format_validate)]
    yield "format.named", [("format-named", OPAQUE, [STRING], False, format_named)]
    for name in FORMAT_NAMES:
        yield f"format.{name}", [(f"format.{name}", OPAQUE, [], False, lambda n=name: {"@format": n})]
    yield "hasValue", [("format_list_has_value", BOOL, [LIST_STRING], True, _has_value),
                       ("format_has_value", BOOL, [OPAQUE], True, _has_value)]
    yield "value", [("format_list_value", LIST_STRING, [LIST_STRING], True, _value),
                    ("format_value", OPAQUE, [OPAQUE], True, _value)]
    # semver
    yield "semver", [("string_to_semver", OPAQUE, [STRING], False, to_semver),
                     ("string_bool_to_semver", OPAQUE, [STRING, BOOL], False, to_semver)]
    yield "isSemver", [("is_semver_string", BOOL, [STRING], False, is_semver),
                       ("is_semver_string_bool", BOOL, [STRING, BOOL], False, is_semver)]
    yield "major", [("semver_major", INT, [OPAQUE], True, lambda v: _semver(v, "major")[0])]
    yield "minor", [("semver_minor", INT, [OPAQUE], True, lambda v: _semver(v, "minor")[1])]
    yield "patch", [("semver_patch", INT, [OPAQUE], True, lambda v: _semver(v, "patch")[2])]
    # jsonpatch (upstream: jsonpatch.go; MutatingAdmissionPolicy's JSONPatch paths)
    yield "jsonpatch.escapeKey", [("string_jsonpatch_escapeKey_string", STRING, [STRING], False,
                                   lambda k: k.replace("~", "~0").replace("/", "~1"))]
    # authz
    yield "path", [("authorizer_path", OPAQUE, [OPAQUE, STRING], True, _path)]
    yield "group", [("authorizer_group", OPAQUE, [OPAQUE, STRING], True, _group)]
    yield "serviceAccount", [("authorizer_serviceaccount", OPAQUE, [OPAQUE, STRING, STRING], True, _service_account)]
    yield "resource", [("groupcheck_resource", OPAQUE, [OPAQUE, STRING], True, _resource_field("resource"))]
    yield "subresource", [("resourcecheck_subresource", OPAQUE, [OPAQUE, STRING], True, _resource_field("subresource"))]
    yield "namespace", [("resourcecheck_namespace", OPAQUE, [OPAQUE, STRING], True, _resource_field("namespace"))]
    yield "name", [("resourcecheck_name", OPAQUE, [OPAQUE, STRING], True, _resource_field("name"))]
    # authz selectors (upstream: AuthzSelectors); the label selector is carried but no authorizer
    # here reads one (RBAC and Node do not)
    yield "fieldSelector", [("resourcecheck_fieldselector", OPAQUE, [OPAQUE, STRING], True,
                             _resource_field("fieldSelector"))]
    yield "labelSelector", [("resourcecheck_labelselector", OPAQUE, [OPAQUE, STRING], True,
                             _resource_field("labelSelector"))]
    yield "check", [("resourcecheck_check", OPAQUE, [OPAQUE, STRING], True, _check)]
    yield "allowed", [("decision_allowed", BOOL, [OPAQUE], True,
                       lambda d: bool(_opaque("@decision", d, "allowed") and d["allowed"]))]
    yield "reason", [("decision_reason", STRING, [OPAQUE], True,
                      lambda d: (_opaque("@decision", d, "reason"), d["reason"])[1])]
    yield "errored", [("decision_errored", BOOL, [OPAQUE], True, lambda d: (_opaque("@decision", d, "errored"), False)[1])]
    yield "error", [("decision_error", STRING, [OPAQUE], True, lambda d: (_opaque("@decision", d, "error"), "")[1])]


def _link_local_multicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv4Address):
        return ip in ipaddress.ip_network("224.0.0.0/24")
    return ip in ipaddress.ip_network("ff02::/16")


def _global_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's netip.Addr.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or broadcast."""
    if ip.is_unspecified or ip.is_loopback or ip.is_multicast or ip.is_link_local:
        return False
    return not (isinstance(ip, ipaddress.IPv4Address) and ip == ipaddress.IPv4Address("255.255.255.255"))


_ELEMENT_KINDS = [("int", INT), ("uint", T.UINT), ("double", DOUBLE), ("string", STRING), ("bool", BOOL),
                  ("bytes", T.BYTES)]


def _python_functions() -> frozenset[str]:
    """(hasValue and value are the optional library's: ours only take a list or a map, so an
    optional never reaches them.)"""
    return frozenset(name for name, _ in _overloads()) - {"hasValue", "value"}


def extension() -> Any:
    """Kubernetes' libraries as one extension (so they may add overloads to names the strings
    extension declares, as lists' indexOf does)."""
    return cel.CelExtension("kubernetes", function_decls())


def function_decls() -> list[Any]:
    """Every Kubernetes library function, as cel.FunctionDecl with its implementations."""
    decls = []
    for name, overloads in _overloads():
        decls.append(cel.FunctionDecl(name, [
            cel.Overload(oid, ret, params, is_member=member, impl=_guard(impl))
            for oid, ret, params, member, impl in overloads]))
    return decls


def _guard(impl: Callable[..., Any]) -> Callable[..., Any]:
    """The runtime shows an exception's message as the error: anything but a CelError is a bug
    or bad input we did not foresee, shown as upstream's generic no-such-overload."""
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except CelError:
            raise
        except (TypeError, KeyError, ValueError, AttributeError, IndexError) as e:
            raise CelError(f"no such overload: {e}") from None
    return call


# The functions implemented in Python here: an optional must never reach one (compiler.py).
PYTHON_FUNCTIONS = _python_functions()
