"""String formats checked in custom objects.

Upstream: supportedVersionedFormats and StripUnsupportedFormatsPostProcessorForVersion
(apiextensions-apiserver pkg/apiserver/validation/formats.go) decide which formats are kept; the
checks are kube-openapi's strfmt registry (pkg/validation/strfmt/default.go, date.go, time.go,
duration.go, kubernetes-extensions.go, bson.go) and its govalidator copy. A format a CRD may not
use is dropped (no check), as upstream does; "password" accepts everything.
"""
from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date
from email.utils import parseaddr

from .regex import go_matcher

# Format names are compared without dashes (go-openapi's name normalizer): "date-time" is "datetime".
SUPPORTED = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
    "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
    "byte", "password", "date", "duration", "datetime",
    "k8sshortname", "k8slongname",      # since 1.34
})


def normalize(fmt: str) -> str:
    return fmt.replace("-", "")


def effective_format(types: list[str], fmt: str) -> str:
    """Upstream: StripUnsupportedFormatsPostProcessorForVersion — the format kept for a schema
    of these types ("" when it is not checked)."""
    if not fmt:
        return ""
    t = types[0] if len(types) == 1 else ""
    if t in ("", "string"):
        return fmt if normalize(fmt) in SUPPORTED else ""
    if t == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if t == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


def _rx(pattern: str) -> Callable[[str], bool]:
    """An ASCII pattern of ours, anchored: Python's re (\\Z, not $, which would accept a
    trailing newline that Go's does not)."""
    compiled = re.compile(pattern, re.ASCII)
    return lambda s: compiled.fullmatch(s) is not None


def _go_rx(pattern: str) -> Callable[[str], bool]:
    """A pattern that needs RE2's Unicode classes (\\p{L}), compiled on first use: RE2 takes
    ~90 ms to build the hostname pattern's Unicode classes, which `kubeplane up` would pay
    at start-up for a format few schemas use."""
    compiled: list[Callable[[str], bool]] = []

    def match(s: str) -> bool:
        if not compiled:
            m = go_matcher(pattern)
            assert m is not None
            compiled.append(m)
        return compiled[0](s)
    return match


_HOSTNAME = _go_rx(r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}"
                r"\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$")


def is_hostname(s: str) -> bool:
    """Upstream: IsHostname"""
    return _HOSTNAME(s) and len(s) <= 255 and all(len(p) <= 63 for p in s.split("."))


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_DATE_TIME = _rx(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")
_TIME_PARTS = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})", re.ASCII)


def is_date(s: str) -> bool:
    """Upstream: IsDate — time.Parse("2006-01-02")."""
    if not _DATE.fullmatch(s):
        return False
    try:
        date(int(s[:4]), int(s[5:7]), int(s[8:10]))
    except ValueError:
        return False
    return True


def is_date_time(s: str) -> bool:
    """Upstream: IsDateTime — a date, a "t", then hh:mm:ss[.frac](z|±hh:mm), lower-cased."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]) or not _DATE_TIME(parts[1]):
        return False
    m = _TIME_PARTS.match(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


_GO_DURATION = re.compile(r"[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+|[-+]?0")
_SCALA_DURATION = re.compile(r"((\d+)\s*([A-Za-zµ]+))")
_UNITS = (("ns", "nano"), ("us", "µs", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
          ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))


def is_duration(s: str) -> bool:
    """Upstream: strfmt.ParseDuration — Go's time.ParseDuration, or the Scala-like "3 days"."""
    if _GO_DURATION.fullmatch(s):
        return True
    ok = False
    for m in _SCALA_DURATION.finditer(s):
        unit = m.group(3).strip().lower()
        for variants in _UNITS:
            last = len(variants) - 1
            if any((i == last and unit.startswith(v)) or v.lower() == unit for i, v in enumerate(variants)):
                ok = True
                break
        else:
            return False
    return ok


_UUID = _rx(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_UUID3 = _rx(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_UUID4 = _rx(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}")
_UUID5 = _rx(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}")
_SHORT_NAME = _rx(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LONG_NAME = _rx(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_MAC = re.compile(r"([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}|([0-9a-fA-F]{2}[:-]){7}[0-9a-fA-F]{2}"
                  r"|([0-9a-fA-F]{2}[:-]){19}[0-9a-fA-F]{2}|([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}"
                  r"|([0-9a-fA-F]{4}\.){3}[0-9a-fA-F]{4}|([0-9a-fA-F]{4}\.){9}[0-9a-fA-F]{4}")
_ISBN10 = re.compile(r"^(?:[0-9]{9}X|[0-9]{10})$")
_ISBN13 = re.compile(r"^(?:[0-9]{13})$")
_CREDIT_CARD = re.compile(r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01]"
                          r"[0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])"
                          r"[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_COLOR = re.compile(r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
                        r"\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$")
_BSON = re.compile(r"[0-9a-fA-F]{24}")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def _isbn(s: str, n: int) -> bool:
    """govalidator.IsISBN: spaces and dashes dropped, then the checksum."""
    s = s.replace(" ", "").replace("-", "")
    if n == 10 and _ISBN10.fullmatch(s):
        total = sum((10 - i) * int(c) for i, c in enumerate(s[:9]))
        total += 10 if s[9] == "X" else int(s[9])
        return total % 11 == 0
    if n == 13 and _ISBN13.fullmatch(s):
        total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(s[:12]))
        return (10 - total % 10) % 10 == int(s[12])
    return False


def _credit_card(s: str) -> bool:
    """govalidator.IsCreditCard: non-digits dropped, then the pattern and Luhn's check."""
    digits = re.sub(r"[^0-9]", "", s)
    if not _CREDIT_CARD.fullmatch(digits):
        return False
    total, double = 0, False
    for c in reversed(digits):
        d = int(c) * (2 if double else 1)
        total += d - 9 if d > 9 else d
        double = not double
    return total % 10 == 0


def _base64(s: str) -> bool:
    """govalidator.IsBase64 (standard alphabet, padded)."""
    if len(s) % 4:
        return False
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _ip(s: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(s).version == version
    except ValueError:
        return False


def _ipv4(s: str) -> bool:
    """isIPv4: netutils.ParseIPSloppy (leading zeros allowed) and a dot."""
    parts = s.split(".")
    if len(parts) != 4:
        return _ip(s, 6) and "." in s      # ::ffff:1.2.3.4 parses as an IP with a dot
    return all(p.isascii() and p.isdigit() and int(p) <= 255 for p in parts)


def _cidr(s: str) -> bool:
    """isCIDR: netutils.ParseCIDRSloppy."""
    addr, sep, bits = s.partition("/")
    if not sep or not bits.isascii() or not bits.isdigit():
        return False
    if _ipv4(addr) and ":" not in addr:
        return int(bits) <= 32
    return _ip(addr, 6) and int(bits) <= 128


def _uri(s: str) -> bool:
    """govalidator.IsRequestURI: url.ParseRequestURI — an absolute URI or an absolute path."""
    if not s or any(c in s for c in " \t\r\n") or "%" in s and not re.fullmatch(r"([^%]|%[0-9a-fA-F]{2})*", s):
        return False
    return s.startswith("/") or _URI_SCHEME.match(s) is not None


def _email(s: str) -> bool:
    """IsEmail: net/mail.ParseAddress gives a non-empty address."""
    _, addr = parseaddr(s)
    return bool(addr) and "@" in addr and not addr.startswith("@") and not addr.endswith("@")


CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: _BSON.fullmatch(s) is not None,
    "uri": _uri,
    "email": _email,
    "hostname": is_hostname,
    "ipv4": _ipv4,
    "ipv6": lambda s: ":" in s and _ip(s, 6),
    "cidr": _cidr,
    "mac": lambda s: _MAC.fullmatch(s) is not None,
    "uuid": _UUID, "uuid3": _UUID3, "uuid4": _UUID4, "uuid5": _UUID5,
    "isbn": lambda s: _isbn(s, 10) or _isbn(s, 13),
    "isbn10": lambda s: _isbn(s, 10),
    "isbn13": lambda s: _isbn(s, 13),
    "creditcard": _credit_card,
    "ssn": lambda s: s != "" and _SSN.fullmatch(s) is not None,
    "hexcolor": lambda s: _HEX_COLOR.fullmatch(s) is not None,
    "rgbcolor": lambda s: _RGB_COLOR.fullmatch(s) is not None,
    "byte": _base64,
    "password": lambda s: True,
    "date": is_date,
    "datetime": is_date_time,
    "duration": is_duration,
    "k8sshortname": lambda s: len(s) <= 63 and _SHORT_NAME(s),
    "k8slongname": lambda s: len(s) <= 253 and _LONG_NAME(s),
}


def checker(fmt: str) -> Callable[[str], bool] | None:
    """The check of a (kept) string format, None when there is nothing to check."""
    return CHECKS.get(normalize(fmt))
