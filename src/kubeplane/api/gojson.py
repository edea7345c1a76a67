"""Go's text forms of plain values: encoding/json.Marshal, fmt's %v for floats, strconv.Quote.

API messages quote bad values the way upstream's Go code prints them (field.Error.ErrorBody
prints strings with %q, numbers and bools with %v, everything else as its JSON); these are
the few rules where Go differs from Python's json and repr:
- json.Marshal escapes <, > and & (HTML-safe), U+2028/U+2029, and writes \\b \\f \\n \\r \\t
  short; map keys are sorted (a dict is a Go map unless the caller says its order is a
  struct's field order); a float is written without an exponent in [1e-6, 1e21).
- %v of a float64 is %g with the shortest digits: an exponent from 1e+06 on (`1e+06`).
- %q escapes what unicode.IsPrint rejects, as \\a \\b \\f \\n \\r \\t \\v, \\xNN, \\uNNNN.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

_JSON_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
             "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_SPECIAL = re.compile('["\\\\<>&\u2028\u2029\x00-\x1f\ud800-\udfff]')


def _json_esc(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _JSON_ESC:
        return _JSON_ESC[ch]
    if "\ud800" <= ch <= "\udfff":      # not valid UTF-8: Go writes the replacement rune
        return "\ufffd"
    return f"\\u{ord(ch):04x}"


def json_string(s: str) -> str:
    """encoding/json's string encoding (HTML-safe)."""
    return '"' + _JSON_SPECIAL.sub(_json_esc, s) + '"'


def _digits(f: float) -> tuple[str, int]:
    """The shortest decimal digits of f (no trailing zeros) and the exponent of the first one."""
    _, digits, exp = Decimal(repr(abs(f))).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    return ds, len(digits) + int(exp) - 1


def _fixed(ds: str, x: int) -> str:
    """Digits ds with the first at 10**x, written without an exponent."""
    if x < 0:
        return "0." + "0" * (-x - 1) + ds
    whole, frac = ds[:x + 1].ljust(x + 1, "0"), ds[x + 1:]
    return whole + ("." + frac if frac else "")


def _exp(ds: str, x: int, min_digits: int) -> str:
    mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
    return f"{mant}e{'-' if x < 0 else '+'}{abs(x):0{min_digits}d}"


def json_float(f: float) -> str:
    """encoding/json's float64: 'f' form in [1e-6, 1e21), else 'e' with a short exponent."""
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign = "-" if f < 0 else ""
    ds, x = _digits(f)
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        return sign + _exp(ds, x, 1 if x < 0 else 2)
    return sign + _fixed(ds, x)


def format_float_v(f: float) -> str:
    """fmt's %v of a float64 (strconv 'g', shortest: an exponent below 1e-4 and from 1e+06)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign = "-" if f < 0 else ""
    ds, x = _digits(f)
    if x < -4 or x >= 6:
        return sign + _exp(ds, x, 2)
    return sign + _fixed(ds, x)


def marshal(value: Any, sort_keys: bool = True) -> str:
    """encoding/json.Marshal of a decoded JSON value. Dicts are Go maps (sorted keys) unless
    sort_keys is False: then their order is taken as a struct's field order."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0])) if sort_keys else value.items()
        return "{" + ",".join(json_string(str(k)) + ":" + marshal(v, sort_keys) for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(marshal(v, sort_keys) for v in value) + "]"
    return json_string(str(value))


_Q_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
          '"': '\\"', "\\": "\\\\"}


def quote(s: str) -> str:
    """strconv.Quote (Go's %q): printable runes kept, the rest escaped."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in _Q_ESC:
            out.append(_Q_ESC[ch])
        elif ch.isprintable():
            out.append(ch)
        elif o < 0x80:
            out.append(f"\\x{o:02x}")
        elif 0xD800 <= o <= 0xDFFF:     # a lone surrogate: Go sees its invalid UTF-8 bytes
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)
