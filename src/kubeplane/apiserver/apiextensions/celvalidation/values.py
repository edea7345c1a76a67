"""A custom object's values as a CEL rule sees them (`self`, `oldSelf`).

Upstream: UnstructuredToVal (k8s.io/apiserver pkg/cel/common/values.go) over the node's
structural schema, Escape (pkg/cel/escaping.go) and WithTypeAndObjectMeta
(apiextensions-apiserver pkg/apiserver/schema/cel/model/schemas.go):
- an object with properties exposes its declared properties only, under their escaped CEL
  names (`foo-bar` is `self.foo__dash__bar`, `namespace` is `self.__namespace__`); a property
  that cannot be escaped is not visible; x-kubernetes-preserve-unknown-fields keeps the others;
- a map (additionalProperties) keeps its keys; lists their items;
- strings of format byte become bytes, date-time and date timestamps, duration durations
  (as protobuf messages: without protobuf they stay strings; see _formatted);
- a number is a double even when written as an integer; int-or-string and schema-less
  (preserve-unknown-fields) values are dyn, as they are;
- at the resource root and in embedded resources, metadata is only name and generateName.
A string that does not parse in its format stays a string (upstream: an error value).
"""
from __future__ import annotations

import base64
import binascii
import calendar
import re
from datetime import datetime
from fractions import Fraction
from typing import Any

from ..schema.structural import Structural

_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
             "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_EXPAND = re.compile(r"__|[-./]")
_EXPANSIONS = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_VALID = re.compile(r"[A-Za-z0-9_./-]*\Z")


def escape(ident: str) -> str | None:
    """Upstream: Escape — the CEL field name of a property, None when it has none."""
    if not ident or ident[0].isdigit():
        return None
    if ident in _RESERVED:
        return f"__{ident}__"
    if _PLAIN.match(ident) and "__" not in ident:
        return ident
    if not _VALID.match(ident) or not ident.isascii():
        return None
    return _EXPAND.sub(lambda m: _EXPANSIONS[m.group(0)], ident)


def to_cel(v: Any, s: Structural | None, resource_root: bool = False) -> Any:
    """v (JSON-like) as the activation value of a rule at schema s."""
    if v is None or s is None or s.x_int_or_string:
        return v
    t = s.type
    if t == "object" and isinstance(v, dict):
        if s.properties or resource_root:
            return _object(v, s, resource_root)
        ap = s.additional_properties_schema
        if ap is not None:
            return {k: to_cel(x, ap, ap.x_embedded_resource) for k, x in v.items()}
        return v
    if t == "array" and isinstance(v, list):
        items = s.items
        return v if items is None else [to_cel(x, items, items.x_embedded_resource) for x in v]
    if t == "number" and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if t == "string" and isinstance(v, str) and s.value_validation is not None and s.value_validation.format:
        return _formatted(v, s.value_validation.format)
    return v


def _object(v: dict[str, Any], s: Structural, resource_root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, x in v.items():
        if x is None:
            continue                   # upstream: a null field is as absent (`!has(self.a.d)`)
        prop = s.properties.get(k)
        if resource_root and k in ("apiVersion", "kind", "metadata"):
            if k == "metadata":
                x = {m: x[m] for m in ("name", "generateName") if m in x} if isinstance(x, dict) else x
            out[k] = x
            continue
        if prop is None:
            if s.x_preserve_unknown_fields:
                out[k] = x
            continue
        name = escape(k)
        if name is not None:
            out[name] = to_cel(x, prop, prop.x_embedded_resource)
    return out


def _formatted(v: str, fmt: str) -> Any:
    """Bytes for format byte; google.protobuf.Timestamp for date and date-time and Duration for
    duration when protobuf is there (the engine takes nested times only as those messages);
    else, or when it does not parse, the string."""
    try:
        if fmt == "byte":
            return base64.b64decode(v, validate=True)
    except (ValueError, binascii.Error, OverflowError):
        return v
    if fmt not in _TIME_FORMATS or not _protobuf():
        return v
    if fmt == "duration":
        nanos = parse_duration(v)
        if nanos is None:
            return v
        from google.protobuf import duration_pb2  # type: ignore[import-untyped,import-not-found,unused-ignore]
        seconds = int(nanos / 1_000_000_000)             # toward zero: seconds and nanos share a sign
        return duration_pb2.Duration(seconds=seconds, nanos=nanos - seconds * 1_000_000_000)
    got = parse_date(v) if fmt == "date" else parse_date_time(v)
    if got is None:
        return v
    from google.protobuf import timestamp_pb2  # type: ignore[import-untyped,import-not-found,unused-ignore]
    return timestamp_pb2.Timestamp(seconds=got[0], nanos=got[1])


_TIME_FORMATS = frozenset({"date", "date-time", "duration"})


def _protobuf() -> bool:
    from .typedenv import available
    return available()


_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?\Z")
# Timestamps CEL can hold: years 1 to 9999
_MIN_SECONDS, _MAX_SECONDS = -62135596800, 253402300799


def parse_date_time(v: str) -> tuple[int, int] | None:
    """Upstream: strfmt.ParseDateTime (RFC 3339, a missing offset is UTC) — (seconds, nanos)
    since the epoch, None if it does not parse."""
    m = _DATE_TIME.match(v)
    if m is None:
        return None
    y, mo, d, h, mi, sec, frac, zone = m.groups()
    try:
        seconds = calendar.timegm(datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec)).timetuple())
    except ValueError:
        return None
    if zone and zone not in "Zz":
        sign = 1 if zone[0] == "+" else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    nanos = int((frac[1:] + "000000000")[:9]) if frac else 0
    return (seconds, nanos) if _MIN_SECONDS <= seconds <= _MAX_SECONDS else None


def parse_date(v: str) -> tuple[int, int] | None:
    """Upstream: time.Parse("2006-01-02") — midnight UTC."""
    if len(v) != 10 or v[4] != "-" or v[7] != "-":
        return None
    try:
        return calendar.timegm(datetime(int(v[:4]), int(v[5:7]), int(v[8:10])).timetuple()), 0
    except ValueError:
        return None


_GO_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
               "m": 60_000_000_000, "h": 3_600_000_000_000}
_SCALA_PART = re.compile(r"(\d+)\s*([A-Za-zµ]+)")
_SCALA_UNITS = ((("ns", "nano"), 1), (("us", "µs", "micro"), 1_000), (("ms", "milli"), 1_000_000),
                (("s", "sec"), 1_000_000_000), (("m", "min"), 60_000_000_000), (("h", "hr", "hour"), 3_600_000_000_000),
                (("d", "day"), 86_400_000_000_000), (("w", "wk", "week"), 604_800_000_000_000))
_MAX_NANOS = 2 ** 63 - 1


def parse_duration(v: str) -> int | None:
    """Upstream: strfmt.ParseDuration — Go's time.ParseDuration, else the Scala-like `3 days`
    — in nanoseconds, None if it does not parse or overflows Go's time.Duration."""
    nanos = _go_duration(v)
    if nanos is None:
        nanos = _scala_duration(v)
    return nanos if nanos is not None and -_MAX_NANOS - 1 <= nanos <= _MAX_NANOS else None


def _go_duration(v: str) -> int | None:
    body = v[1:] if v[:1] in ("-", "+") else v
    if body == "0":
        return 0
    total, pos = Fraction(0), 0
    while pos < len(body):
        m = _GO_PART.match(body, pos)
        if m is None or m.group(1) in ("", "."):
            return None
        total += Fraction(m.group(1)) * _UNIT_NANOS[m.group(2)]
        pos = m.end()
    if pos == 0:
        return None
    return -int(total) if v.startswith("-") else int(total)


def _scala_duration(v: str) -> int | None:
    total, found = 0, False
    for m in _SCALA_PART.finditer(v):
        unit = m.group(2).lower()
        for variants, size in _SCALA_UNITS:
            last = len(variants) - 1
            if any((i == last and unit.startswith(u)) or u.lower() == unit for i, u in enumerate(variants)):
                total += int(m.group(1)) * size
                found = True
                break
        else:
            return None
    return total if found else None
