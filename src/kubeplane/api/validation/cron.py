"""The standard cron schedule parser the CronJob validation runs (robfig/cron v3
ParseStandard: five fields or a descriptor, an optional TZ=/CRON_TZ= prefix), with its error
texts, which upstream puts verbatim into `spec.schedule: Invalid value: "...": <error>`.

Upstream: github.com/robfig/cron/v3 parser.go (Parse, normalizeFields, getField, getRange,
parseIntOrName, mustParseInt, parseDescriptor).
"""
from __future__ import annotations

import re
import zoneinfo

# (min, max, names) of minute, hour, day of month, month, day of week.
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_BOUNDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS), (0, 6, _DAYS))
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
# Go's time.ParseDuration: an optional sign, then one or more <decimal><unit>, or "0".
_DURATION = re.compile(r"[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)")


class CronError(ValueError):
    pass


def load_location(name: str) -> None:
    """time.LoadLocation: "" and UTC are UTC, Local the host's; else the tz database's."""
    if name in ("", "UTC", "Local"):
        return
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None


def parse_standard(spec: str) -> None:
    """Raise CronError with robfig/cron's message when `spec` is not a standard schedule."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        eq = spec.find("=")
        location = spec[eq + 1:space] if space >= 0 else spec[eq + 1:]
        try:
            load_location(location)
        except CronError as e:
            raise CronError(f"provided bad location {location}: {e}") from None
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        _parse_descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for value, bounds in zip(fields, _BOUNDS):
        for expr in value.split(","):
            _get_range(expr, *bounds)


def _parse_descriptor(spec: str) -> None:
    if spec in _DESCRIPTORS:
        return
    if spec.startswith("@every "):
        duration = spec[len("@every "):]
        if not _DURATION.fullmatch(duration):
            raise CronError(f'failed to parse duration {spec}: time: invalid duration "{duration}"')
        return
    raise CronError(f"unrecognized descriptor: {spec}")


def _must_parse_int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise CronError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    num = int(expr)
    if not -2**63 <= num < 2**63:       # strconv.Atoi's int is 64-bit
        raise CronError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": value out of range')
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _get_range(expr: str, lo: int, hi: int, names: dict[str, int] | None) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = lo, hi
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
        if len(low_and_high) == 1:          # "N/step" means "N-max/step"
            end = hi
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
