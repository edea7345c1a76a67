"""The CronJob controller's time arithmetic and Job template.

Tables reproduce upstream's pkg/controller/cronjob/utils_test.go (TestGetJobFromTemplate2,
TestNextScheduleTime, TestByJobStartTime, TestMostRecentScheduleTime,
TestNextScheduleTimeDuration). Times are epoch seconds; the hour is 2016-05-19T10:00:00Z.
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import batch_v1
from kubeplane.api.validation.cron import parse_standard
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.cronjob import utils
from kubeplane.controller.cronjob.utils import MissedSchedules
from kubeplane.utils.clock import parse_rfc3339, rfc3339

TOP = parse_rfc3339("2016-05-19T10:00:00Z")      # topOfTheHour
H, M = 3600.0, 60.0


def after(seconds: float) -> float:
    """deltaTimeAfterTopOfTheHour"""
    return TOP + seconds


def cron_job(schedule: str, *, created: float = TOP, last: float | None = None, deadline: int | None = None,
             **spec: Any) -> batch_v1.CronJob:
    d: dict[str, Any] = {"metadata": {"name": "mycronjob", "namespace": "default", "uid": "1a2b3c",
                                      "creationTimestamp": rfc3339(created)},
                         "spec": {"schedule": schedule, "concurrencyPolicy": "Allow", **spec}}
    if deadline is not None:
        d["spec"]["startingDeadlineSeconds"] = deadline
    if last is not None:
        d["status"] = {"lastScheduleTime": rfc3339(last)}
    return types.from_dict(d, batch_v1.CronJob)


@pytest.mark.parametrize("time_zone,annotations,expected_time,count", [
    ("UTC", {"x": "y"}, "2016-05-19T10:00:00Z", 2),
    (None, {"x": "y"}, "2016-05-19T10:00:00Z", 2),
    ("Europe/Rome", {"x": "y", "z": "x"}, "2016-05-19T12:00:00+02:00", 3),
])
def test_get_job_from_template2(time_zone: str | None, annotations: dict[str, str], expected_time: str,
                                count: int) -> None:
    """Upstream: TestGetJobFromTemplate2"""
    cj = types.from_dict({
        "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c"},
        "spec": {"schedule": "* * * * ?", "concurrencyPolicy": "Allow", "timeZone": time_zone,
                 "jobTemplate": {"metadata": {"labels": {"a": "b"}, "annotations": annotations},
                                 "spec": {"activeDeadlineSeconds": 1, "manualSelector": False,
                                          "template": {"metadata": {"labels": {"foo": "bar"}},
                                                       "spec": {"containers": [{"image": "foo/bar"}]}}}}}},
        batch_v1.CronJob)
    job = utils.get_job_from_template2(cj, TOP)
    assert job.metadata.name == f"mycronjob-{int(TOP) // 60}"
    assert job.metadata.labels == {"a": "b"}
    assert len(job.metadata.annotations) == count
    assert job.metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] == expected_time
    [ref] = job.metadata.owner_references
    assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == \
        ("batch/v1", "CronJob", "mycronjob", "1a2b3c", True, True)
    assert job.spec.active_deadline_seconds == 1 and job.spec.template.metadata.labels == {"foo": "bar"}
    job.spec.template.metadata.labels["foo"] = "changed"               # a copy, not the template
    assert cj.spec.job_template.spec.template.metadata.labels == {"foo": "bar"}


def test_next_schedule_time() -> None:
    """Upstream: TestNextScheduleTime — hourly on the hour; T1 = 10:00, T2 = 11:00."""
    sched = parse_standard("0 * * * ?")
    rec = FakeRecorder()
    t1, t2 = TOP, TOP + H

    def nxt(cj: batch_v1.CronJob, now: float, s: Any = sched) -> tuple[float | None, str | None]:
        return utils.next_schedule_time(cj, now, s, rec)

    # Case 1: no known start times, and none needed yet.
    assert nxt(cron_job("0 * * * ?", created=t1 - 10 * M), t1 - 7 * M)[0] is None
    # Case 2: no known start times, and one needed.
    assert nxt(cron_job("0 * * * ?", created=t1 - 10 * M), t1 + 2)[0] == t1
    # Case 3: known LastScheduleTime, no start needed.
    assert nxt(cron_job("0 * * * ?", created=t1 - 10 * M, last=t1), t1 + 2 * M)[0] is None
    # Case 4: known LastScheduleTime, a start needed
    assert nxt(cron_job("0 * * * ?", created=t1 - 10 * M, last=t1), t2 + 5 * M)[0] == t2
    # Case 5: known LastScheduleTime, two starts needed
    assert nxt(cron_job("0 * * * ?", created=t1 - 2 * H, last=t1 - H), t2 + 5 * M)[0] == t2
    # Case 6: now is way way ahead of last start time, and there is no deadline.
    assert nxt(cron_job("0 * * * ?", created=t1 - 2 * H, last=t1 - H), t2 + 240 * H)[0] is not None
    # Case 7: now is way way ahead of last start time, but there is a short deadline.
    assert nxt(cron_job("0 * * * ?", created=t1 - 2 * H, last=t1 - H, deadline=2 * 3600), t2 + 240 * H)[0] \
        is not None
    # Case 8: the error of mostRecentScheduleTime gets populated up
    when, err = nxt(cron_job("0 * * * ?", created=t1 + 10), TOP + H, parse_standard("59 23 31 2 *"))
    assert when is None and err == "time difference between two schedules is less than 1 second"
    # Case 6 missed more than 100 times: upstream's warning (once)
    assert rec.events == ["Warning TooManyMissedTimes too many missed start times. Set or decrease "
                          ".spec.startingDeadlineSeconds or check clock skew"]


def _job(name: str, start: float | None) -> batch_v1.Job:
    return types.from_dict({"metadata": {"name": name},
                            "status": {"startTime": rfc3339(start)} if start is not None else {}}, batch_v1.Job)


@pytest.mark.parametrize("given,expected", [
    (["bNil", "aNil"], ["aNil", "bNil"]),             # both have nil start times
    (["aNil", "bSet"], ["bSet", "aNil"]),             # only the first has a nil start time
    (["aSet", "bNil"], ["aSet", "bNil"]),             # only the second has a nil start time
    (["bSet", "aSet"], ["aSet", "bSet"]),             # both non-nil, equal start time
    (["aSetLater", "bSet"], ["bSet", "aSetLater"]),   # both non-nil, different start time
])
def test_by_job_start_time(given: list[str], expected: list[str]) -> None:
    """Upstream: TestByJobStartTime"""
    now, later = parse_rfc3339("2018-01-01T02:03:04Z"), parse_rfc3339("2019-01-01T02:03:04Z")
    jobs = {"aNil": _job("a", None), "bNil": _job("b", None), "aSet": _job("a", now), "bSet": _job("b", now),
            "aSetLater": _job("a", later)}
    out = sorted((jobs[n] for n in given), key=utils.by_job_start_time)
    assert out == [jobs[n] for n in expected]


@pytest.mark.parametrize("name,cj,include_sds,now,earliest,recent,missed,err", [
    ("now before next schedule", cron_job("0 * * * *"), False, TOP + 30, TOP, None, MissedSchedules.NONE, False),
    ("now just after next schedule", cron_job("0 * * * *"), False, TOP + 61 * M, TOP, after(60 * M),
     MissedSchedules.NONE, False),
    ("missed 5 schedules", cron_job("0 * * * *", created=after(10)), False, after(301 * M), after(10),
     after(300 * M), MissedSchedules.FEW, False),
    ("complex schedule", cron_job("30 6-16/4 * * 1-5", last=after(30 * M)), False, after(24 * H + 31 * M),
     after(30 * M), after(24 * H + 30 * M), MissedSchedules.FEW, False),
    ("another complex schedule", cron_job("30 10,11,12 * * 1-5", last=after(30 * M)), False,
     after(30 * H + 30 * M), after(30 * M), None, MissedSchedules.FEW, False),
    ("complex schedule with longer diff between executions", cron_job("30 6-16/4 * * 1-5", last=after(30 * M)),
     False, after(96 * H + 31 * M), after(30 * M), after(96 * H + 30 * M), MissedSchedules.FEW, False),
    ("complex schedule with shorter diff between executions", cron_job("30 6-16/4 * * 1-5"), False,
     after(24 * H + 31 * M), TOP, after(24 * H + 30 * M), MissedSchedules.FEW, False),
    ("@every schedule", cron_job("@every 1h", created=after(-59 * M), deadline=10, last=after(1 * M)), False,
     after(7 * 24 * H), after(1 * M), after(6 * 24 * H + 23 * H + 1 * M), MissedSchedules.MANY, False),
    ("rogue cronjob", cron_job("59 23 31 2 *", created=after(10)), False, after(1 * H), after(10), None,
     MissedSchedules.NONE, True),
    ("earliestTime being CreationTimestamp and LastScheduleTime", cron_job("0 * * * *", last=TOP), False,
     after(30), TOP, None, MissedSchedules.NONE, False),
    ("earliestTime being LastScheduleTime", cron_job("*/5 * * * *", last=after(30 * M)), False, after(31 * M),
     after(30 * M), None, MissedSchedules.NONE, False),
    ("earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
     cron_job("*/5 * * * *", last=after(30 * M), deadline=60), False, after(31 * M), after(30 * M), None,
     MissedSchedules.NONE, False),
    ("earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
     cron_job("*/5 * * * *", last=after(30 * M), deadline=60), True, after(32 * M), after(31 * M), None,
     MissedSchedules.NONE, False),
])
def test_most_recent_schedule_time(name: str, cj: batch_v1.CronJob, include_sds: bool, now: float, earliest: float,
                                   recent: float | None, missed: MissedSchedules, err: bool) -> None:
    """Upstream: TestMostRecentScheduleTime"""
    got_earliest, got_recent, got_missed, got_err = utils.most_recent_schedule_time(
        cj, now, parse_standard(cj.spec.schedule), include_sds)
    if err:
        assert got_err is not None
        return
    assert got_err is None
    assert (got_earliest, got_recent, got_missed) == (earliest, recent, missed)


@pytest.mark.parametrize("name,cj,now,expected", [
    ("complex schedule skipping weekend", cron_job("30 6-16/4 * * 1-5", last=after(30 * M)),
     after(24 * H + 31 * M), 3 * H + 59 * M),
    ("another complex schedule skipping weekend", cron_job("30 10,11,12 * * 1-5", last=after(30 * M)),
     after(30 * H + 30 * M), 66 * H),
    ("once a week cronjob, missed two runs", cron_job("0 12 * * 4", last=after(2 * H)),
     after(19 * 24 * H + 1 * H + 30 * M), 48 * H + 30 * M),
    ("no previous run of a cronjob", cron_job("0 12 * * 5"), after(6 * H), 20 * H),
])
def test_next_schedule_time_duration(name: str, cj: batch_v1.CronJob, now: float, expected: float) -> None:
    """Upstream: TestNextScheduleTimeDuration (each duration + nextScheduleDelta)"""
    got = utils.next_schedule_time_duration(cj, now, parse_standard(cj.spec.schedule))
    assert got == pytest.approx(expected + 0.1)


def test_active_list_helpers() -> None:
    cj = types.from_dict({"metadata": {"name": "c", "namespace": "ns"},
                          "status": {"active": [{"name": "j1", "namespace": "ns", "uid": "u1"},
                                                {"name": "j2", "namespace": "ns", "uid": "u2"}]}}, batch_v1.CronJob)
    assert utils.in_active_list(cj, "u1") and not utils.in_active_list(cj, "u3")
    assert utils.in_active_list_by_name(cj, "ns", "j2") and not utils.in_active_list_by_name(cj, "other", "j2")
    utils.delete_from_active_list(cj, "u1")
    assert [r.name for r in cj.status.active] == ["j2"]


def test_a_schedule_with_no_activation_within_five_years_is_not_requeued() -> None:
    """29 February from 2097-03-01: robfig's Next finds none before 2102 (2100 is no leap year)
    and returns the zero time; upstream would requeue at once, forever. Here: no requeue."""
    now = parse_rfc3339("2097-03-01T00:00:00Z")
    cj = cron_job("0 0 29 2 *", created=now - H, last=parse_rfc3339("2096-02-29T00:00:00Z"))
    assert utils.next_schedule_time_duration(cj, now, parse_standard("0 0 29 2 *")) is None
    # Next(last) is the zero time, whose next is 0004-02-29: the estimate walks back to the last
    # schedule time itself, which the controller finds already processed.
    when, _ = utils.next_schedule_time(cj, now, parse_standard("0 0 29 2 *"), FakeRecorder())
    assert when == parse_rfc3339("2096-02-29T00:00:00Z")
