"""robfig/cron v3's own tables, reproduced as facts about kubeplane's port (api/validation/cron.py).

Upstream: github.com/robfig/cron/v3 spec_test.go (TestActivation, TestNext, TestErrors,
TestNextWithTz, TestSlash0NoHang) and parser_test.go (TestRange, TestField, TestAll, TestBits,
TestParseScheduleErrors, TestStandardSpecSchedule). Their times without a zone are time.Local;
here Local is UTC (as in kube-controller-manager's container), and a spec without TZ= runs in
the zone of the time it is given, so the cases whose time carries a zone name give the spec that
zone with TZ=, and the fixed +0530 cases give it a fixed-offset zone.
"""
from __future__ import annotations

import datetime as dt

import pytest

from kubeplane.api.validation import cron
from kubeplane.api.validation.cron import (DOM, DOW, HOURS, MINUTES, MONTHS, STAR_BIT, ZERO_TIME, CronError,
                                           SpecSchedule, parse, parse_standard)

UTC = dt.timezone.utc


def at(value: str, tz: dt.tzinfo = UTC) -> int:
    """robfig's getTime: "Mon Jul 9 15:00 2012" (Local), "...:05 2012", or "2012-03-11T00:00:00-0500"."""
    if not value:
        return ZERO_TIME
    for layout in ("%a %b %d %H:%M %Y", "%a %b %d %H:%M:%S %Y"):
        try:
            return int(dt.datetime.strptime(value, layout).replace(tzinfo=tz).timestamp())
        except ValueError:
            pass
    return int(dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp())


@pytest.mark.parametrize("time,spec,expected", [
    # Every fifteen minutes.
    ("Mon Jul 9 15:00 2012", "0/15 * * * *", True),
    ("Mon Jul 9 15:45 2012", "0/15 * * * *", True),
    ("Mon Jul 9 15:40 2012", "0/15 * * * *", False),
    # Every fifteen minutes, starting at 5 minutes.
    ("Mon Jul 9 15:05 2012", "5/15 * * * *", True),
    ("Mon Jul 9 15:20 2012", "5/15 * * * *", True),
    ("Mon Jul 9 15:50 2012", "5/15 * * * *", True),
    # Named months
    ("Sun Jul 15 15:00 2012", "0/15 * * Jul *", True),
    ("Sun Jul 15 15:00 2012", "0/15 * * Jun *", False),
    # Everything set.
    ("Sun Jul 15 08:30 2012", "30 08 ? Jul Sun", True),
    ("Sun Jul 15 08:30 2012", "30 08 15 Jul ?", True),
    ("Mon Jul 16 08:30 2012", "30 08 ? Jul Sun", False),
    ("Mon Jul 16 08:30 2012", "30 08 15 Jul ?", False),
    # Predefined schedules
    ("Mon Jul 9 15:00 2012", "@hourly", True),
    ("Mon Jul 9 15:04 2012", "@hourly", False),
    ("Mon Jul 9 15:00 2012", "@daily", False),
    ("Mon Jul 9 00:00 2012", "@daily", True),
    ("Mon Jul 9 00:00 2012", "@weekly", False),
    ("Sun Jul 8 00:00 2012", "@weekly", True),
    ("Sun Jul 8 01:00 2012", "@weekly", False),
    ("Sun Jul 8 00:00 2012", "@monthly", False),
    ("Sun Jul 1 00:00 2012", "@monthly", True),
    # Test interaction of DOW and DOM. If both are restricted, then only one needs to match.
    ("Sun Jul 15 00:00 2012", "* * 1,15 * Sun", True),
    ("Fri Jun 15 00:00 2012", "* * 1,15 * Sun", True),
    ("Wed Aug 1 00:00 2012", "* * 1,15 * Sun", True),
    ("Sun Jul 15 00:00 2012", "* * */10 * Sun", True),    # verifies robfig#70
    # However, if one has a star, then both need to match.
    ("Sun Jul 15 00:00 2012", "* * * * Mon", False),
    ("Mon Jul 9 00:00 2012", "* * 1,15 * *", False),
    ("Sun Jul 15 00:00 2012", "* * 1,15 * *", True),
    ("Sun Jul 15 00:00 2012", "* * */2 * Sun", True),
])
def test_activation(time: str, spec: str, expected: bool) -> None:
    """Upstream: TestActivation"""
    assert (parse_standard(spec).next(at(time) - 1) == at(time)) is expected


NY = "TZ=America/New_York "


@pytest.mark.parametrize("time,spec,expected", [
    # Simple cases
    ("Mon Jul 9 14:45 2012", "0 0/15 * * * *", "Mon Jul 9 15:00 2012"),
    ("Mon Jul 9 14:59 2012", "0 0/15 * * * *", "Mon Jul 9 15:00 2012"),
    ("Mon Jul 9 14:59:59 2012", "0 0/15 * * * *", "Mon Jul 9 15:00 2012"),
    # Wrap around hours
    ("Mon Jul 9 15:45 2012", "0 20-35/15 * * * *", "Mon Jul 9 16:20 2012"),
    # Wrap around days
    ("Mon Jul 9 23:46 2012", "0 */15 * * * *", "Tue Jul 10 00:00 2012"),
    ("Mon Jul 9 23:45 2012", "0 20-35/15 * * * *", "Tue Jul 10 00:20 2012"),
    ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 * * * *", "Tue Jul 10 00:20:15 2012"),
    ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 1/2 * * *", "Tue Jul 10 01:20:15 2012"),
    ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 10-12 * * *", "Tue Jul 10 10:20:15 2012"),
    ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 1/2 */2 * *", "Thu Jul 11 01:20:15 2012"),
    ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 * 9-20 * *", "Wed Jul 10 00:20:15 2012"),
    ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 * 9-20 Jul *", "Wed Jul 10 00:20:15 2012"),
    # Wrap around months
    ("Mon Jul 9 23:35 2012", "0 0 0 9 Apr-Oct ?", "Thu Aug 9 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 0 */5 Apr,Aug,Oct Mon", "Tue Aug 1 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 0 */5 Oct Mon", "Mon Oct 1 00:00 2012"),
    # Wrap around years
    ("Mon Jul 9 23:35 2012", "0 0 0 * Feb Mon", "Mon Feb 4 00:00 2013"),
    ("Mon Jul 9 23:35 2012", "0 0 0 * Feb Mon/2", "Fri Feb 1 00:00 2013"),
    # Wrap around minute, hour, day, month, and year
    ("Mon Dec 31 23:59:45 2012", "0 * * * * *", "Tue Jan 1 00:00:00 2013"),
    # Leap year
    ("Mon Jul 9 23:35 2012", "0 0 0 29 Feb ?", "Mon Feb 29 00:00 2016"),
    # Daylight savings time 2am EST (-5) -> 3am EDT (-4)
    ("2012-03-11T00:00:00-0500", NY + "0 30 2 11 Mar ?", "2013-03-11T02:30:00-0400"),
    # hourly job
    ("2012-03-11T00:00:00-0500", NY + "0 0 * * * ?", "2012-03-11T01:00:00-0500"),
    ("2012-03-11T01:00:00-0500", NY + "0 0 * * * ?", "2012-03-11T03:00:00-0400"),
    ("2012-03-11T03:00:00-0400", NY + "0 0 * * * ?", "2012-03-11T04:00:00-0400"),
    ("2012-03-11T04:00:00-0400", NY + "0 0 * * * ?", "2012-03-11T05:00:00-0400"),
    # hourly job using CRON_TZ
    ("2012-03-11T00:00:00-0500", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T01:00:00-0500"),
    ("2012-03-11T01:00:00-0500", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T03:00:00-0400"),
    ("2012-03-11T03:00:00-0400", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T04:00:00-0400"),
    ("2012-03-11T04:00:00-0400", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T05:00:00-0400"),
    # 1am nightly job
    ("2012-03-11T00:00:00-0500", NY + "0 0 1 * * ?", "2012-03-11T01:00:00-0500"),
    ("2012-03-11T01:00:00-0500", NY + "0 0 1 * * ?", "2012-03-12T01:00:00-0400"),
    # 2am nightly job (skipped)
    ("2012-03-11T00:00:00-0500", NY + "0 0 2 * * ?", "2012-03-12T02:00:00-0400"),
    # Daylight savings time 2am EDT (-4) => 1am EST (-5)
    ("2012-11-04T00:00:00-0400", NY + "0 30 2 04 Nov ?", "2012-11-04T02:30:00-0500"),
    ("2012-11-04T01:45:00-0400", NY + "0 30 1 04 Nov ?", "2012-11-04T01:30:00-0500"),
    # hourly job
    ("2012-11-04T00:00:00-0400", NY + "0 0 * * * ?", "2012-11-04T01:00:00-0400"),
    ("2012-11-04T01:00:00-0400", NY + "0 0 * * * ?", "2012-11-04T01:00:00-0500"),
    ("2012-11-04T01:00:00-0500", NY + "0 0 * * * ?", "2012-11-04T02:00:00-0500"),
    # 1am nightly job (runs twice)
    ("2012-11-04T00:00:00-0400", NY + "0 0 1 * * ?", "2012-11-04T01:00:00-0400"),
    ("2012-11-04T01:00:00-0400", NY + "0 0 1 * * ?", "2012-11-04T01:00:00-0500"),
    ("2012-11-04T01:00:00-0500", NY + "0 0 1 * * ?", "2012-11-05T01:00:00-0500"),
    # 2am nightly job
    ("2012-11-04T00:00:00-0400", NY + "0 0 2 * * ?", "2012-11-04T02:00:00-0500"),
    ("2012-11-04T02:00:00-0500", NY + "0 0 2 * * ?", "2012-11-05T02:00:00-0500"),
    # 3am nightly job
    ("2012-11-04T00:00:00-0400", NY + "0 0 3 * * ?", "2012-11-04T03:00:00-0500"),
    ("2012-11-04T03:00:00-0500", NY + "0 0 3 * * ?", "2012-11-05T03:00:00-0500"),
    # the same hourly, nightly jobs with the zone on the time ("TZ=America/New_York 2012-...")
    # upstream: here the spec carries the zone, which a Local spec takes from the time
    # Unsatisfiable
    ("Mon Jul 9 23:35 2012", "0 0 0 30 Feb ?", ""),
    ("Mon Jul 9 23:35 2012", "0 0 0 31 Apr ?", ""),
    # Monthly job
    ("2012-11-04T00:00:00-0400", NY + "0 0 3 3 * ?", "2012-12-03T03:00:00-0500"),
    # DST resulting in midnight not being a valid time (robfig#157)
    ("2018-10-17T05:00:00-0400", "TZ=America/Sao_Paulo 0 0 9 10 * ?", "2018-11-10T06:00:00-0500"),
    ("2018-02-14T05:00:00-0500", "TZ=America/Sao_Paulo 0 0 9 22 * ?", "2018-02-22T07:00:00-0500"),
])
def test_next(time: str, spec: str, expected: str) -> None:
    """Upstream: TestNext (robfig's secondParser: a leading seconds field)."""
    assert parse(spec, seconds=True).next(at(time)) == at(expected)


@pytest.mark.parametrize("time,spec,expected", [
    ("2016-01-03T13:09:03+0530", "14 14 * * *", "2016-01-03T14:14:00+0530"),
    ("2016-01-03T04:09:03+0530", "14 14 * * ?", "2016-01-03T14:14:00+0530"),
    ("2016-01-03T14:09:03+0530", "14 14 * * *", "2016-01-03T14:14:00+0530"),
    ("2016-01-03T14:00:00+0530", "14 14 * * ?", "2016-01-03T14:14:00+0530"),
])
def test_next_with_tz(time: str, spec: str, expected: str) -> None:
    """Upstream: TestNextWithTz — a Local spec in the time's own fixed zone."""
    sched = parse_standard(spec)
    assert isinstance(sched, SpecSchedule)
    fixed = SpecSchedule(sched.second, sched.minute, sched.hour, sched.dom, sched.month, sched.dow,
                         location=dt.timezone(dt.timedelta(hours=5, minutes=30)))
    assert fixed.next(at(time)) == at(expected)


@pytest.mark.parametrize("spec", ["xyz", "60 0 * * *", "0 60 * * *", "0 0 * * XYZ",
                                  "TZ=America/New_York 15/0 * * * *"])
def test_errors(spec: str) -> None:
    """Upstream: TestErrors, TestSlash0NoHang"""
    with pytest.raises(CronError):
        parse_standard(spec)


@pytest.mark.parametrize("expr,bounds,expected,err", [
    ("5", MINUTES, 1 << 5, ""),
    ("0", MINUTES, 1 << 0, ""),
    ("59", MINUTES, 1 << 59, ""),
    ("5-5", MINUTES, 1 << 5, ""),
    ("5-6", MINUTES, 1 << 5 | 1 << 6, ""),
    ("5-7", MINUTES, 1 << 5 | 1 << 6 | 1 << 7, ""),
    ("5-6/2", MINUTES, 1 << 5, ""),
    ("5-7/2", MINUTES, 1 << 5 | 1 << 7, ""),
    ("5-7/1", MINUTES, 1 << 5 | 1 << 6 | 1 << 7, ""),
    ("*", MINUTES, cron.get_bits(0, 59, 1) | STAR_BIT, ""),
    ("*/2", MINUTES, cron.get_bits(0, 59, 2), ""),
    ("5--5", MINUTES, 0, "too many hyphens"),
    ("jan-x", MONTHS, 0, "failed to parse int from"),
    ("2-x", (1, 12, None), 0, "failed to parse int from"),
    ("*/-12", MINUTES, 0, "negative number"),
    ("*//2", MINUTES, 0, "too many slashes"),
    ("1", (3, 5, None), 0, "below minimum"),
    ("6", (3, 5, None), 0, "above maximum"),
    ("5-3", (3, 5, None), 0, "beyond end of range"),
    ("*/0", (0, 0, None), 0, "should be a positive number"),
])
def test_range(expr: str, bounds: cron.Bounds, expected: int, err: str) -> None:
    """Upstream: TestRange"""
    if err:
        with pytest.raises(CronError, match=err):
            cron.get_range(expr, bounds)
    else:
        assert cron.get_range(expr, bounds) == expected


@pytest.mark.parametrize("expr,bounds,expected", [
    ("5", MINUTES, 1 << 5),
    ("5,6", MINUTES, 1 << 5 | 1 << 6),
    ("5,6,7", MINUTES, 1 << 5 | 1 << 6 | 1 << 7),
    ("1,5-7/2,3", MINUTES, 1 << 1 | 1 << 5 | 1 << 7 | 1 << 3),
    ("1,,3", MINUTES, 1 << 1 | 1 << 3),            # FieldsFunc drops the empty item
])
def test_field(expr: str, bounds: cron.Bounds, expected: int) -> None:
    """Upstream: TestField"""
    assert cron.get_field(expr, bounds) == expected


def test_bits() -> None:
    """Upstream: TestAll, TestBits"""
    assert cron.get_bits(0, 0, 1) == 1
    assert cron.get_bits(1, 1, 1) == 2
    assert cron.get_bits(1, 5, 2) == 0b101010
    assert cron.get_bits(1, 4, 2) == 0b1010
    for lo, hi, _ in (MINUTES, HOURS, DOM, MONTHS, DOW):
        assert cron._all((lo, hi, None)) == sum(1 << i for i in range(lo, hi + 1)) | STAR_BIT


@pytest.mark.parametrize("spec,err", [
    ("* 5 j * * *", "failed to parse int from"),
    ("@every Xm", "failed to parse duration"),
    ("@unrecognized", "unrecognized descriptor"),
    ("* * * *", "expected exactly 5 fields"),
    ("", "empty spec string"),
])
def test_parse_schedule_errors(spec: str, err: str) -> None:
    """Upstream: TestParseScheduleErrors (its first case with robfig's seconds parser)"""
    with pytest.raises(CronError, match=err):
        parse(spec, seconds=spec.count(" ") == 5)


def _every_day(hour: int, minute: int) -> SpecSchedule:
    return SpecSchedule(1, 1 << minute, 1 << hour, cron._all(DOM), cron._all(MONTHS), cron._all(DOW))


@pytest.mark.parametrize("spec,expected", [
    ("5 * * * *", SpecSchedule(1, 1 << 5, cron._all(HOURS), cron._all(DOM), cron._all(MONTHS), cron._all(DOW))),
    ("@every 5m", cron.ConstantDelaySchedule(300)),
    ("@midnight", _every_day(0, 0)),
    ("@daily", _every_day(0, 0)),
    ("@hourly", SpecSchedule(1, 1, cron._all(HOURS), cron._all(DOM), cron._all(MONTHS), cron._all(DOW))),
    ("@weekly", SpecSchedule(1, 1, 1, cron._all(DOM), cron._all(MONTHS), 1)),
    ("@monthly", SpecSchedule(1, 1, 1, 2, cron._all(MONTHS), cron._all(DOW))),
    ("@yearly", SpecSchedule(1, 1, 1, 2, 2, cron._all(DOW))),
    ("@annually", SpecSchedule(1, 1, 1, 2, 2, cron._all(DOW))),
    ("TZ=UTC  0 9 * * *", _every_day(9, 0)),
    ("0 9 ? * Mon-Fri", SpecSchedule(1, 1, 1 << 9, cron._all(DOM), cron._all(MONTHS),
                                     cron.get_bits(1, 5, 1))),
])
def test_standard_spec_schedule(spec: str, expected: object) -> None:
    """Upstream: TestStandardSpecSchedule, TestNormalizeFields, parseDescriptor"""
    assert parse_standard(spec) == expected


@pytest.mark.parametrize("duration,delay", [("1h30m", 5400), ("500ms", 1), ("-1h", 1), ("1.9s", 1), ("61s", 61)])
def test_every_rounds_to_whole_seconds(duration: str, delay: int) -> None:
    """Upstream: Every — at least a second, the fraction dropped; Next lands on whole seconds."""
    sched = parse_standard("@every " + duration)
    assert sched == cron.ConstantDelaySchedule(delay)
    assert sched.next(100.7) == 100 + delay


def test_next_in_a_zone_and_the_go_date_gap_rule() -> None:
    """Beyond robfig's tables: a daily 02:30 in New York skips the spring-forward day's gap to the
    next day, and a day-of-month/day-of-week OR with a stepped star."""
    sched = parse_standard("TZ=America/New_York 30 2 * * *")
    assert sched.next(at("2012-03-11T00:00:00-0500")) == at("2012-03-12T02:30:00-0400")
    # "*/2" is not a star once stepped: OR with Monday (9 Jul 2012 is a Monday, day 9 is odd)
    assert parse_standard("0 0 */2 * Mon").next(at("Sun Jul 8 00:00 2012")) == at("Mon Jul 9 00:00 2012")


def test_no_activation_within_five_years_is_the_zero_time() -> None:
    assert parse_standard("59 23 31 2 *").next(at("Mon Jul 9 23:35 2012")) == ZERO_TIME
    assert parse_standard("59 23 31 2 *").next(ZERO_TIME) == ZERO_TIME
