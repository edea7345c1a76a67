"""metav1.Time and metav1.MicroTime as their JSON methods read and write them: parsed with Go's
time.Parse and the layout RFC3339 ("2006-01-02T15:04:05Z07:00", any fractional seconds, dropped
on output) or RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00", exactly six digits), written
back in UTC — `2026-11-28T07:56:55.5+02:00` is stored and returned as `2026-11-28T05:56:55Z`.
A value Go cannot parse is the decode's error, with Go's *time.ParseError text.

Upstream: Time.UnmarshalJSON / MarshalJSON (apimachinery pkg/apis/meta/v1/time.go),
MicroTime's (micro_time.go), time.Parse (Go's time/format.go: nextStdChunk's elements, getnum,
parseNanoseconds, the range checks and their "... out of range" messages).
"""
from __future__ import annotations

import calendar
import datetime as _dt
import re

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

# The fast path: what nearly every client sends, checked by the full parser only for ranges.
# ASCII digits only, as Go's parser reads them (str's \d would take every script's digits).
_FAST = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:\d\d)", re.ASCII)
_DIGITS = re.compile(r"\d+", re.ASCII)


class TimeParseError(ValueError):
    pass


def _quote(s: str) -> str:
    """Go's time package quote(): in double quotes, \\" and \\\\ escaped, and each byte of a
    non-ASCII or control character as \\xhh."""
    out = []
    for c in s:
        if c < " " or c > "\x7f":
            out.append("".join(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass")))
        else:
            out.append("\\" + c if c in '"\\' else c)
    return '"' + "".join(out) + '"'


def _error(layout: str, value: str, value_elem: str, layout_elem: str, message: str = "") -> TimeParseError:
    if message:
        return TimeParseError(f"parsing time {_quote(value)}{message}")
    return TimeParseError(f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse "
                          f"{_quote(value_elem)} as {_quote(layout_elem)}")


def canonical(value: str, micro: bool) -> str:
    """value as Go's Time (micro: MicroTime) writes it back after reading it; raises
    TimeParseError with Go's message where time.Parse fails."""
    layout = RFC3339_MICRO if micro else RFC3339
    year, month, day, hour, minute, second, frac, zone = _parse(value, layout, micro)
    offset = 0
    if zone != "Z":
        offset = (int(zone[1:3]) * 60 + int(zone[4:6])) * 60 * (1 if zone[0] == "+" else -1)
    # Day arithmetic by hand: a UTC shift may cross year 1 or 9999, which datetime refuses.
    secs = calendar.timegm((year, month, day, hour, minute, second)) - offset \
        if 1 <= year <= 9999 else None
    if secs is None:
        return value                    # outside what we model: kept as sent
    try:
        t = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=secs)
    except OverflowError:
        return value
    out = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if micro:
        out += "." + (frac + "000000")[:6]
    return out + "Z"


def _parse(value: str, layout: str, micro: bool) -> tuple[int, int, int, int, int, int, str, str]:
    m = _FAST.fullmatch(value)
    if m is not None and (not micro or (m.group(7) is not None and len(m.group(7)) == 6)):
        year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
        frac, zone = m.group(7) or "", m.group(8)
        if 1 <= month <= 12 and hour < 24 and minute < 60 and second < 60 and (
                zone == "Z" or (int(zone[1:3]) <= 24 and int(zone[4:6]) <= 60)):
            if 1 <= day <= _days_in(month, year):
                return year, month, day, hour, minute, second, frac, zone
    return _slow_parse(value, layout, micro)


def _days_in(month: int, year: int) -> int:
    return calendar.monthrange(year, month)[1] if year >= 1 else (29 if month == 2 and year % 4 == 0 else
                                                                   calendar.monthrange(2001, month)[1])


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    """Go's getnum: one or two leading digits (two if fixed)."""
    if not s or not s[0].isdigit() or not s[0].isascii():
        return None
    if len(s) < 2 or not (s[1].isdigit() and s[1].isascii()):
        return None if fixed else (int(s[0]), s[1:])
    return int(s[:2]), s[2:]


def _slow_parse(value: str, layout: str, micro: bool) -> tuple[int, int, int, int, int, int, str, str]:
    """Go's parse() over the layout's elements, for its error messages."""
    elems = ["2006", "-", "01", "-", "02", "T", "15", ":", "04", ":", "05"] + \
        ([".000000"] if micro else []) + ["Z07:00"]
    rest = value
    nums: dict[str, int] = {}
    frac = ""
    zone = "Z"
    for elem in elems:
        hold = rest
        if elem in ("-", "T", ":"):                 # a literal prefix (skip)
            if not rest.startswith(elem):
                raise _error(layout, value, rest, elem)
            rest = rest[1:]
            continue
        bad = False
        range_err = ""
        if elem == "2006":
            if len(rest) < 4 or not rest[0].isdigit() or not rest[:4].isdigit() or not rest[:4].isascii():
                bad = True
            else:
                nums[elem], rest = int(rest[:4]), rest[4:]
        elif elem in ("01", "02", "15", "04", "05"):
            got = _getnum(rest, elem != "15")
            if got is None:
                bad = True
            else:
                n, rest = got
                nums[elem] = n
                if elem == "01" and not 1 <= n <= 12:
                    range_err = "month"
                elif elem == "15" and n >= 24:
                    range_err = "hour"
                elif elem == "04" and n >= 60:
                    range_err = "minute"
                elif elem == "05":
                    if n >= 60:
                        range_err = "second"
                    # a fraction the layout lacks is taken all the same (RFC3339)
                    elif not micro and len(rest) >= 2 and rest[0] in ".," and _DIGITS.match(rest, 1):
                        digits = _DIGITS.match(rest, 1)
                        assert digits is not None
                        frac, rest = digits.group(), rest[digits.end():]
        elif elem == ".000000":
            if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit() or not rest[1:7].isascii():
                bad = True
            else:
                frac, rest = rest[1:7], rest[7:]
        else:                                       # Z07:00
            if rest.startswith("Z"):
                rest = rest[1:]
            elif len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-" \
                    or _getnum(rest[1:3], True) is None or _getnum(rest[4:6], True) is None:
                bad = True
            else:
                zone, rest = rest[:6], rest[6:]
                if int(zone[1:3]) > 24:
                    range_err = "time zone offset hour"
                elif int(zone[4:6]) > 60:
                    range_err = "time zone offset minute"
        if range_err:
            raise _error(layout, value, rest, elem, f": {range_err} out of range")
        if bad:
            raise _error(layout, value, hold, elem)
    if rest:
        raise _error(layout, value, rest, "", f": extra text: {_quote(rest)}")
    year, month, day = nums["2006"], nums["01"], nums["02"]
    if day < 1 or day > _days_in(month, year):
        raise _error(layout, value, rest, "", ": day out of range")
    return year, month, day, nums["15"], nums["04"], nums["05"], frac, zone
