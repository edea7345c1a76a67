"""robfig/cron v3, as Kubernetes uses it: the standard schedule parser (five fields or a
descriptor, an optional TZ=/CRON_TZ= prefix) with its error texts, which the CronJob validation
puts verbatim into `spec.schedule: Invalid value: "...": <error>`, and the schedules' Next,
which the CronJob controller runs.

    sched = parse_standard("30 6-16/4 * * 1-5")       # CronError on a bad spec
    sched.next(now)                                    # epoch seconds of the next activation

Written by hand after comparing croniter 7.0 and cronsim 2.8 with robfig on robfig's own
tables and the rules Kubernetes users meet (benchmarks/cron_schedules.py, BENCHMARKS.md
"CronJob schedules": this port 32/32, croniter 27/32, cronsim 13/32; neither has `@every`).
croniter runs a daily 2:30 at 3:00 on the spring-forward day where robfig skips it, and refuses
"1,,50" and "*-5", which robfig reads as "1,50" and "*"; cronsim also refuses `?` in the
day-of-week field and does not OR "*/10" (a stepped star is no star for robfig) with a day of
week. This port follows robfig step by step: times are integer epoch seconds, walls come from
Go's civil-date arithmetic with zoneinfo's offsets, and Go's time.Date resolves a wall time a
zone skips or repeats as Go does (not as Python's fold=0), so the DST tables agree. Checked
against robfig itself (benchmarks/cron_differential.py: 60,000 random specs and times, DST and
odd-offset zones included, next activations and error texts all equal).

A schedule with no time zone is robfig's time.Local, which for kube-controller-manager (a
container without TZ) is UTC: so it is here.

Upstream: github.com/robfig/cron/v3 parser.go (Parse, normalizeFields, getField, getRange,
parseIntOrName, mustParseInt, getBits, parseDescriptor), spec.go (SpecSchedule.Next,
dayMatches), constantdelay.go (Every, ConstantDelaySchedule.Next).
"""
from __future__ import annotations

import datetime as dt
import functools
import math
import re
import zoneinfo
from dataclasses import dataclass
from typing import Protocol

from ..errors import go_quote

# (min, max, names) of second, minute, hour, day of month, month, day of week.
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
Bounds = tuple[int, int, "dict[str, int] | None"]
SECONDS: Bounds = (0, 59, None)
MINUTES: Bounds = (0, 59, None)
HOURS: Bounds = (0, 23, None)
DOM: Bounds = (1, 31, None)
MONTHS: Bounds = (1, 12, _MONTHS)
DOW: Bounds = (0, 6, _DAYS)
_FIELDS = (SECONDS, MINUTES, HOURS, DOM, MONTHS, DOW)

STAR_BIT = 1 << 63          # set when a field was "*" or "?" (unstepped): dayMatches ANDs then
ZERO_TIME = -62135596800    # Go's zero time.Time (0001-01-01T00:00:00Z): Next found nothing


class CronError(ValueError):
    pass


class Schedule(Protocol):
    def next(self, t: float) -> int:
        """The next activation strictly after t (epoch seconds), or ZERO_TIME if none."""


# --- parser.go ----------------------------------------------------------------------------------

def load_location(name: str) -> dt.tzinfo | None:
    """Go's time.LoadLocation: "" and "UTC" are UTC (None), as is "Local" (see the module
    docstring); else the tz database's zone."""
    if name in ("", "UTC", "Local"):
        return None
    if ".." in name or name[0] in "/\\":
        raise CronError("time: invalid location name")
    try:
        return _zone(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None


@functools.lru_cache(maxsize=256)
def _zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def parse_standard(spec: str) -> Schedule:
    """Upstream: ParseStandard — minute, hour, day of month, month, day of week, or a descriptor."""
    return parse(spec, seconds=False)


def parse(spec: str, *, seconds: bool) -> Schedule:
    """Upstream: Parser.Parse, with the standard options (seconds=True adds a leading seconds
    field, as robfig's tests parse)."""
    if not spec:
        raise CronError("empty spec string")
    loc = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        # Upstream slices up to the first space and panics without one: the rest is the zone.
        space, eq = spec.find(" "), spec.find("=")
        name = spec[eq + 1:space] if space >= 0 else spec[eq + 1:]
        try:
            loc = load_location(name)
        except CronError as e:
            raise CronError(f"provided bad location {name}: {e}") from None
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        return _parse_descriptor(spec, loc)
    fields = spec.split()
    want = 6 if seconds else 5
    if len(fields) != want:
        raise CronError(f"expected exactly {want} fields, found {len(fields)}: [{' '.join(fields)}]")
    if not seconds:
        fields.insert(0, "0")
    second, minute, hour, dom, month, dow = (get_field(f, b) for f, b in zip(fields, _FIELDS))
    return SpecSchedule(second, minute, hour, dom, month, dow, location=loc)


def get_field(field: str, bounds: Bounds) -> int:
    """The bits of a comma-separated list of ranges (empty items are skipped, as FieldsFunc does)."""
    bits = 0
    for expr in field.split(","):
        if expr:
            bits |= get_range(expr, bounds)
    return bits


def get_range(expr: str, bounds: Bounds) -> int:
    """number | number "-" number [ "/" number ], or * / ?, with names where the field has them."""
    lo, hi, names = bounds
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = lo, hi, STAR_BIT          # "*-5" is "*": the rest is never read
    else:
        start = _parse_int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:                          # "N/step" means "N-max/step"
            end = hi
        if step > 1:
            extra = 0
    elif len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    if start < lo:
        raise CronError(f"beginning of range ({start}) below minimum ({lo}): {expr}")
    if end > hi:
        raise CronError(f"end of range ({end}) above maximum ({hi}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return get_bits(start, end, step) | extra


def get_bits(lo: int, hi: int, step: int) -> int:
    return sum(1 << i for i in range(lo, hi + 1, step))


def _must_parse_int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise CronError(f"failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: invalid syntax")
    num = int(expr)
    if not -2**63 <= num < 2**63:       # strconv.Atoi's int is 64-bit
        raise CronError(f"failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: "
                        "value out of range")
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _all(bounds: Bounds) -> int:
    return get_bits(bounds[0], bounds[1], 1) | STAR_BIT


def _first(bounds: Bounds) -> int:
    return 1 << bounds[0]


_DESCRIPTORS = {
    # second, minute, hour, dom, month, dow
    "@yearly": lambda: (_first(SECONDS), _first(MINUTES), _first(HOURS), _first(DOM), _first(MONTHS), _all(DOW)),
    "@monthly": lambda: (_first(SECONDS), _first(MINUTES), _first(HOURS), _first(DOM), _all(MONTHS), _all(DOW)),
    "@weekly": lambda: (_first(SECONDS), _first(MINUTES), _first(HOURS), _all(DOM), _all(MONTHS), _first(DOW)),
    "@daily": lambda: (_first(SECONDS), _first(MINUTES), _first(HOURS), _all(DOM), _all(MONTHS), _all(DOW)),
    "@hourly": lambda: (_first(SECONDS), _first(MINUTES), _all(HOURS), _all(DOM), _all(MONTHS), _all(DOW)),
}
_DESCRIPTORS["@annually"] = _DESCRIPTORS["@yearly"]
_DESCRIPTORS["@midnight"] = _DESCRIPTORS["@daily"]


def _parse_descriptor(spec: str, loc: dt.tzinfo | None) -> Schedule:
    if (bits := _DESCRIPTORS.get(spec)) is not None:
        return SpecSchedule(*bits(), location=loc)
    if spec.startswith("@every "):
        from ...utils.goduration import parse_go_duration
        try:
            seconds = parse_go_duration(spec[len("@every "):])
        except ValueError as e:
            raise CronError(f"failed to parse duration {spec}: {e}") from None
        return every(seconds)
    raise CronError(f"unrecognized descriptor: {spec}")


# --- constantdelay.go ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConstantDelaySchedule:
    """A fixed delay, whole seconds. Upstream: ConstantDelaySchedule"""

    delay: int

    def next(self, t: float) -> int:
        """Upstream: Next — rounded so the activation falls on a whole second."""
        return math.floor(t) + self.delay


def every(seconds: float) -> ConstantDelaySchedule:
    """Upstream: Every — at least a second; the fraction of a second is dropped."""
    return ConstantDelaySchedule(int(seconds) if seconds >= 1 else 1)


# --- spec.go --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SpecSchedule:
    """Bit sets of the activation times, to the second. Upstream: SpecSchedule"""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: dt.tzinfo | None = None      # None: UTC

    def next(self, t: float) -> int:
        """The first activation after t, or ZERO_TIME if none within five years. Upstream: Next

        Each field is checked from the month down; a field that does not match is incremented
        (the finer ones reset on the first increment), and wrapping a field around starts over.
        """
        w = _Wall(math.floor(t) + 1, self.location)       # the upcoming second
        added = False
        year_limit = w.year + 5
        while True:                                        # upstream: WRAP
            if w.year > year_limit:
                return ZERO_TIME
            wrapped = False
            while not (1 << w.month) & self.month:
                if not added:
                    added = True
                    w = w.date(w.year, w.month, 1)
                w = w.add_date(months=1)
                if w.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self.day_matches(w):
                if not added:
                    added = True
                    w = w.date(w.year, w.month, w.day)
                w = w.add_date(days=1)
                # Midnight may not exist (DST at 00:00): step back to it, or forward past it.
                if w.hour != 0:
                    w = w.add((24 - w.hour) * 3600 if w.hour > 12 else -w.hour * 3600)
                if w.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << w.hour) & self.hour:
                if not added:
                    added = True
                    w = w.date(w.year, w.month, w.day, w.hour)
                w = w.add(3600)
                if w.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << w.minute) & self.minute:
                if not added:
                    added = True
                    w = w.truncate(60)
                w = w.add(60)
                if w.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << w.second) & self.second:
                added = True
                w = w.add(1)
                if w.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return w.unix

    def day_matches(self, w: _Wall) -> bool:
        """Both day fields must match if either is a star; otherwise either. Upstream: dayMatches"""
        dom_match = bool((1 << w.day) & self.dom)
        dow_match = bool((1 << w.weekday) & self.dow)
        if self.dom & STAR_BIT or self.dow & STAR_BIT:
            return dom_match and dow_match
        return dom_match or dow_match


# --- the parts of Go's time package Next uses, on integer epoch seconds --------------------------

_MIN_LOOKUP = ZERO_TIME + 3 * 86400             # datetime's range, for the zone lookups
_MAX_LOOKUP = 253402300799 - 3 * 86400


def _offset(unix: int, loc: dt.tzinfo | None) -> int:
    """The zone's UTC offset (seconds) at an instant; before or after datetime's range, the
    offset at its edge."""
    if loc is None:
        return 0
    clamped = min(max(unix, _MIN_LOOKUP), _MAX_LOOKUP)
    off = dt.datetime.fromtimestamp(clamped, loc).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, month 1-12)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


class _Wall:
    """An instant and its wall clock in a zone: Go's time.Time for what Next needs."""

    __slots__ = ("unix", "loc", "year", "month", "day", "hour", "minute", "second", "weekday")

    def __init__(self, unix: int, loc: dt.tzinfo | None) -> None:
        self.unix, self.loc = unix, loc
        days, secs = divmod(unix + _offset(unix, loc), 86400)
        self.year, self.month, self.day = _civil_from_days(days)
        self.hour, rest = divmod(secs, 3600)
        self.minute, self.second = divmod(rest, 60)
        self.weekday = (days + 4) % 7               # 1970-01-01 was a Thursday; Sunday is 0

    def add(self, seconds: int) -> _Wall:
        return _Wall(self.unix + seconds, self.loc)

    def truncate(self, seconds: int) -> _Wall:
        """Go's Truncate: a multiple of `seconds` since the zero time (so in UTC, not the wall)."""
        return _Wall(self.unix - (self.unix - ZERO_TIME) % seconds, self.loc)

    def add_date(self, months: int = 0, days: int = 0) -> _Wall:
        return self.date(self.year, self.month + months, self.day + days, self.hour, self.minute, self.second)

    def date(self, year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> _Wall:
        """Go's time.Date: out-of-range values normalize (month 13 is next January); a wall time
        a zone skips or repeats takes the offset Go's lookup finds (the one in force at the
        wall time read as UTC, unless that instant falls outside its period)."""
        year += (month - 1) // 12
        month = (month - 1) % 12 + 1
        unix = (_days_from_civil(year, month, 1) + day - 1) * 86400 + hour * 3600 + minute * 60 + second
        off = _offset(unix, self.loc)
        if off:
            off2 = _offset(unix - off, self.loc)
            unix -= off2 if off2 != off else off
        return _Wall(unix, self.loc)
