"""Go's time.ParseDuration, with its error texts (flags, ?timeout=, cron's `@every`, metric windows).

Upstream: time.ParseDuration (go/src/time/format.go).
"""
from __future__ import annotations

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
          "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX = 1 << 63
_DIGITS = frozenset("0123456789")


def parse_go_duration(s: str) -> float:
    """Seconds in a Go duration ("30s", "1m30s", "1.5h", "-2ms", "0"); ValueError with Go's message.

    Upstream: time.ParseDuration — a sequence of decimal numbers, each with an optional
    fraction and a unit (ns, us, µs, ms, s, m, h); "0" alone needs no unit.
    """
    orig, neg = s, False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"time: invalid duration {_quote(orig)}")
    total = 0
    while s:
        if not (s[0] == "." or s[0] in _DIGITS):
            raise ValueError(f"time: invalid duration {_quote(orig)}")
        whole, s, pre = _leading_int(s, orig)
        frac, scale, post = 0, 1, False
        if s[:1] == ".":
            frac, scale, s, post = _leading_fraction(s[1:])
        if not pre and not post:
            raise ValueError(f"time: invalid duration {_quote(orig)}")
        i = 0
        while i < len(s) and s[i] != "." and s[i] not in _DIGITS:
            i += 1
        if i == 0:
            raise ValueError(f"time: missing unit in duration {_quote(orig)}")
        unit_name, s = s[:i], s[i:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {_quote(unit_name)} in duration {_quote(orig)}")
        if whole > _MAX // unit:
            raise ValueError(f"time: invalid duration {_quote(orig)}")
        v = whole * unit + (int(frac * (unit / scale)) if frac else 0)
        total += v
        if v > _MAX or total > _MAX:
            raise ValueError(f"time: invalid duration {_quote(orig)}")
    if not neg and total > _MAX - 1:
        raise ValueError(f"time: invalid duration {_quote(orig)}")
    return (-total if neg else total) / 1e9


def _leading_int(s: str, orig: str) -> tuple[int, str, bool]:
    """Go's leadingInt: the digits at the start of s; an overflow is an invalid duration."""
    i, x = 0, 0
    while i < len(s) and s[i] in _DIGITS:
        if x > _MAX // 10:
            raise ValueError(f"time: invalid duration {_quote(orig)}")
        x = x * 10 + ord(s[i]) - 48
        if x > _MAX:
            raise ValueError(f"time: invalid duration {_quote(orig)}")
        i += 1
    return x, s[i:], i > 0


def _leading_fraction(s: str) -> tuple[int, int, str, bool]:
    """Go's leadingFraction: digits after the point; past 63 bits the rest only scales nothing."""
    i, x, scale, overflow = 0, 0, 1, False
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            if x > (_MAX - 1) // 10:
                overflow = True
            else:
                y = x * 10 + ord(s[i]) - 48
                if y > _MAX:
                    overflow = True
                else:
                    x, scale = y, scale * 10
        i += 1
    return x, scale, s[i:], i > 0


def _quote(s: str) -> str:
    """Go's time.quote: double quotes, \\ and " escaped, non-ASCII and control bytes as \\xNN."""
    out = ['"']
    for ch in s:
        if ord(ch) < 0x20 or ord(ch) >= 0x80:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    out.append('"')
    return "".join(out)
