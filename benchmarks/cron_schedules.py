"""CronJob schedules: croniter and cronsim against robfig/cron v3 (kubeplane's port), on
robfig's own tables and on the cases where Kubernetes users meet robfig's rules; then the
speed of next() for a few schedules.

    pip install --target /tmp/cronlibs croniter cronsim
    PYTHONPATH=src:/tmp/cronlibs python benchmarks/cron_schedules.py [--n 20000]

Correctness is "the same next activation as robfig" (robfig's expected values, from
spec_test.go; the extra cases were worked out from robfig's spec.go/parser.go). A library that
refuses a spec robfig accepts counts as wrong. Only standard five-field specs (robfig's seconds
field 0): neither library has robfig's seconds field.
"""
from __future__ import annotations

import argparse
import datetime as dt
import time
import zoneinfo
from typing import Any, Callable

from kubeplane.api.validation.cron import ZERO_TIME, parse_standard

UTC = dt.timezone.utc


def at(value: str) -> dt.datetime:
    for layout in ("%a %b %d %H:%M %Y", "%a %b %d %H:%M:%S %Y"):
        try:
            return dt.datetime.strptime(value, layout).replace(tzinfo=UTC)
        except ValueError:
            pass
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z")


# (time, five-field spec, zone or None, robfig's next)
CASES: list[tuple[str, str, str | None, str]] = [
    # robfig TestNext (the cases with seconds 0, the seconds field dropped)
    ("Mon Jul 9 14:45 2012", "0/15 * * * *", None, "Mon Jul 9 15:00 2012"),
    ("Mon Jul 9 14:59 2012", "0/15 * * * *", None, "Mon Jul 9 15:00 2012"),
    ("Mon Jul 9 15:45 2012", "20-35/15 * * * *", None, "Mon Jul 9 16:20 2012"),
    ("Mon Jul 9 23:46 2012", "*/15 * * * *", None, "Tue Jul 10 00:00 2012"),
    ("Mon Jul 9 23:45 2012", "20-35/15 * * * *", None, "Tue Jul 10 00:20 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 9 Apr-Oct ?", None, "Thu Aug 9 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 */5 Apr,Aug,Oct Mon", None, "Tue Aug 1 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 */5 Oct Mon", None, "Mon Oct 1 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 * Feb Mon", None, "Mon Feb 4 00:00 2013"),
    ("Mon Jul 9 23:35 2012", "0 0 * Feb Mon/2", None, "Fri Feb 1 00:00 2013"),
    ("Mon Dec 31 23:59:45 2012", "* * * * *", None, "Tue Jan 1 00:00:00 2013"),
    ("Mon Jul 9 23:35 2012", "0 0 29 Feb ?", None, "Mon Feb 29 00:00 2016"),
    ("2012-03-11T00:00:00-0500", "30 2 11 Mar ?", "America/New_York", "2013-03-11T02:30:00-0400"),
    ("2012-03-11T01:00:00-0500", "0 * * * ?", "America/New_York", "2012-03-11T03:00:00-0400"),
    ("2012-03-11T01:00:00-0500", "0 1 * * ?", "America/New_York", "2012-03-12T01:00:00-0400"),
    ("2012-03-11T00:00:00-0500", "0 2 * * ?", "America/New_York", "2012-03-12T02:00:00-0400"),
    ("2012-11-04T00:00:00-0400", "30 2 04 Nov ?", "America/New_York", "2012-11-04T02:30:00-0500"),
    ("2012-11-04T01:45:00-0400", "30 1 04 Nov ?", "America/New_York", "2012-11-04T01:30:00-0500"),
    ("2012-11-04T01:00:00-0400", "0 * * * ?", "America/New_York", "2012-11-04T01:00:00-0500"),
    ("2012-11-04T01:00:00-0400", "0 1 * * ?", "America/New_York", "2012-11-04T01:00:00-0500"),
    ("2012-11-04T00:00:00-0400", "0 2 * * ?", "America/New_York", "2012-11-04T02:00:00-0500"),
    ("2012-11-04T00:00:00-0400", "0 3 3 * ?", "America/New_York", "2012-12-03T03:00:00-0500"),
    ("2018-10-17T05:00:00-0400", "0 9 10 * ?", "America/Sao_Paulo", "2018-11-10T06:00:00-0500"),
    ("2018-02-14T05:00:00-0500", "0 9 22 * ?", "America/Sao_Paulo", "2018-02-22T07:00:00-0500"),
    # robfig TestActivation's day-of-month/day-of-week cases (next from a minute before)
    ("Sat Jul 14 23:59 2012", "* * 1,15 * Sun", None, "Sun Jul 15 00:00 2012"),
    ("Thu Jun 14 23:59 2012", "* * 1,15 * Sun", None, "Fri Jun 15 00:00 2012"),
    ("Sat Jul 14 23:59 2012", "* * */10 * Sun", None, "Sun Jul 15 00:00 2012"),
    ("Sat Jul 14 23:59 2012", "* * */2 * Sun", None, "Sun Jul 15 00:00 2012"),
    # robfig's rules Kubernetes users meet: "*/2" is no star once stepped (OR with Monday),
    # an empty list item, "*-5" read as "*", a daily 2:30 skipped on the spring-forward day
    ("Sun Jul 8 00:00 2012", "0 0 */2 * Mon", None, "Mon Jul 9 00:00 2012"),
    ("Mon Jul 9 14:45 2012", "1,,50 * * * *", None, "Mon Jul 9 14:50 2012"),
    ("Mon Jul 9 14:45 2012", "*-5 * * * *", None, "Mon Jul 9 14:46 2012"),
    ("2012-03-10T03:00:00-0500", "30 2 * * *", "America/New_York", "2012-03-12T02:30:00-0400"),
]


def croniter_next(spec: str, start: dt.datetime) -> dt.datetime:
    from croniter import croniter
    return croniter(spec, start).get_next(dt.datetime)


def cronsim_next(spec: str, start: dt.datetime) -> dt.datetime:
    from cronsim import CronSim
    return next(CronSim(spec, start))


def port_next(spec: str, start: dt.datetime) -> dt.datetime:
    t = parse_standard(spec).next(start.timestamp())
    return dt.datetime.fromtimestamp(t, UTC) if t != ZERO_TIME else dt.datetime.min.replace(tzinfo=UTC)


def check(name: str, nxt: Callable[[str, dt.datetime], dt.datetime]) -> list[str]:
    wrong = []
    for time_s, spec, zone, want_s in CASES:
        start, want = at(time_s), at(want_s)
        if zone:
            start = start.astimezone(zoneinfo.ZoneInfo(zone))
        try:
            got: Any = nxt(spec if not zone or name != "robfig port" else f"TZ={zone} {spec}", start)
        except Exception as e:                      # noqa: BLE001 - a refusal is a wrong answer
            got = f"error: {type(e).__name__}: {e}"
        if not isinstance(got, dt.datetime) or got.timestamp() != want.timestamp():
            wrong.append(f"{spec!r} from {time_s} ({zone or 'UTC'}): want {want.isoformat()}, got {got}")
    return wrong


def speed(nxt: Callable[[str, dt.datetime], dt.datetime], n: int) -> float:
    start = dt.datetime(2026, 1, 1, tzinfo=UTC)
    specs = ["*/1 * * * *", "30 6-16/4 * * 1-5", "0 0 29 2 *"]
    t0 = time.perf_counter()
    for i in range(n):
        nxt(specs[i % 3], start + dt.timedelta(minutes=i))
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    for name, fn in (("robfig port", port_next), ("croniter", croniter_next), ("cronsim", cronsim_next)):
        wrong = check(name, fn)
        print(f"{name}: {len(CASES) - len(wrong)}/{len(CASES)} as robfig; parse+next {speed(fn, args.n):,.0f}/s")
        for w in wrong:
            print("   ", w)


if __name__ == "__main__":
    main()
