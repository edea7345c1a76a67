"""The CronJob controller: upstream's sync table, the handlers, history cleanup, and a run on real
informers where minutes pass on a fake clock.

Tables reproduce upstream's pkg/controller/cronjob/cronjob_controllerv2_test.go
(TestControllerV2SyncCronJob, TestControllerV2UpdateCronJob, TestControllerV2GetJobsToBeReconciled,
TestControllerV2CleanupFinishedJobs, TestControllerV2JobAlreadyExistsButNotInActiveStatus,
TestControllerV2JobAlreadyExistsButDifferentOwner). Like upstream, the sync table drives
sync_cron_job with fake job and CronJob controls; the rest run against FakeClientset (the real
API server in-process).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import batch_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.cronjob import ControllerV2
from kubeplane.controller.cronjob import cronjob_controllerv2 as cjv2
from kubeplane.controller.cronjob import utils
from kubeplane.controller.cronjob.injection import FakeCJControl, FakeJobControl
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, parse_rfc3339, rfc3339

SHORT_DEAD, MEDIUM_DEAD, LONG_DEAD = 10, 2 * 60 * 60, 1000000
ON_THE_HOUR, EVERY_HOUR, ERROR_SCHEDULE = "0 * * * ?", "@every 1h", "obvious error schedule"
NEW_YORK = "America/New_York"
M, H = 60.0, 3600.0
DELTA = 0.1                                                   # nextScheduleDelta


def t(s: str) -> float:
    return parse_rfc3339(s)


JUST_A_SECOND_BEFORE_THE_HOUR = t("2016-05-19T09:59:59Z")
JUST_AFTER_THE_PRIOR_HOUR = t("2016-05-19T09:01:00Z")
JUST_BEFORE_THE_PRIOR_HOUR = t("2016-05-19T08:59:00Z")
JUST_AFTER_THE_HOUR = t("2016-05-19T10:01:00Z")
JUST_BEFORE_THE_HOUR = t("2016-05-19T09:59:00Z")
JUST_BEFORE_THE_NEXT_HOUR = t("2016-05-19T10:59:00Z")
WEEK_AFTER_THE_HOUR = t("2016-05-26T10:00:00Z")
TOP_OF_THE_HOUR = t("2016-05-19T10:00:00Z")


def cron_job_dict(**spec: Any) -> dict[str, Any]:
    """Upstream: cronJob() — "* * * * ?", Allow, a one-pod Job template."""
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c",
                         "creationTimestamp": rfc3339(JUST_BEFORE_THE_HOUR)},
            "spec": {"schedule": "* * * * ?", "concurrencyPolicy": "Allow",
                     "jobTemplate": {"metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                                     "spec": {"parallelism": 1, "completions": 1,
                                              "template": {"metadata": {"labels": {"foo": "bar"}},
                                                           "spec": {"containers": [{"image": "foo/bar"}]}}}},
                     **spec}}


@dataclass
class Case:
    concurrency_policy: str = "Allow"
    schedule: str = ON_THE_HOUR
    suspend: bool = False
    time_zone: str | None = None
    deadline: int | None = None
    ran_previously: bool = False
    still_active: bool = False
    cronjob_creation_time: float = 0.0
    job_creation_time: float = JUST_AFTER_THE_PRIOR_HOUR
    last_schedule_time: float = 0.0
    now: float = 0.0
    job_create_error: Exception | None = None
    job_get_err: Exception | None = None
    expect_create: bool = False
    expect_delete: bool = False
    expect_active: int = 0
    expected_warnings: int = 0
    expect_err: bool = False
    expect_requeue_after: bool = False
    expected_requeue_duration: float = 0.0
    expect_update_status: bool = False
    job_still_not_found_in_lister: bool = False
    job_present_in_cj_active_status: bool = True
    extra_normal_events: int = 0


def _already_exists() -> errors.StatusError:
    return errors.AlreadyExists("batch", "job", "")


def _namespace_terminating() -> errors.StatusError:
    return errors.StatusError(500, "", "", {"causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                                        "message": "namespace default is being terminated"}]})


NOT_TIME = dict(job_creation_time=JUST_AFTER_THE_PRIOR_HOUR, now=JUST_BEFORE_THE_HOUR, expect_requeue_after=True,
                expected_requeue_duration=1 * M + DELTA)
IS_TIME = dict(job_creation_time=JUST_AFTER_THE_PRIOR_HOUR, now=JUST_AFTER_THE_HOUR, expect_create=True,
               expect_active=1, expect_requeue_after=True, expected_requeue_duration=1 * H - 1 * M + DELTA,
               expect_update_status=True)
LONG_OVERDUE = dict(ran_previously=True, now=WEEK_AFTER_THE_HOUR, expect_create=True, expect_active=1,
                    expect_requeue_after=True, expected_requeue_duration=1 * H + DELTA, expect_update_status=True)
MISSING = dict(deadline=LONG_DEAD, ran_previously=True, still_active=True, job_creation_time=TOP_OF_THE_HOUR + 0.1,
               now=JUST_AFTER_THE_HOUR + 0.1, expect_active=1, expect_requeue_after=True,
               expected_requeue_duration=1 * H - 1 * M - 0.1 + DELTA)

CASES: dict[str, Case] = {
    "never ran, not valid schedule, A": Case(schedule=ERROR_SCHEDULE, now=JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, not valid schedule, F": Case("Forbid", ERROR_SCHEDULE, now=JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, not valid schedule, R": Case("Forbid", ERROR_SCHEDULE, now=JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, not valid time zone": Case(time_zone="bad timezone", now=JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, not time, A": Case(**NOT_TIME),
    "never ran, not time, F": Case("Forbid", **NOT_TIME),
    "never ran, not time, R": Case("Replace", **NOT_TIME),
    "never ran, not time in zone": Case(time_zone=NEW_YORK, **NOT_TIME),
    "never ran, is time, A": Case(**IS_TIME),
    "never ran, is time, F": Case("Forbid", **IS_TIME),
    "never ran, is time, R": Case("Replace", **IS_TIME),
    "never ran, is time in zone, but time zone disabled": Case(time_zone=NEW_YORK, **IS_TIME),
    "never ran, is time in zone": Case(time_zone=NEW_YORK, **IS_TIME),
    "never ran, is time in zone, but TZ is also set in schedule": Case(
        schedule="TZ=UTC " + ON_THE_HOUR, time_zone=NEW_YORK, expected_warnings=1, **IS_TIME),
    "never ran, is time, suspended": Case(suspend=True, now=JUST_AFTER_THE_HOUR),
    "never ran, is time, past deadline": Case(
        deadline=SHORT_DEAD, now=JUST_AFTER_THE_HOUR + M * (SHORT_DEAD + 1), expect_requeue_after=True,
        expected_requeue_duration=1 * H - 1 * M - M * (SHORT_DEAD + 1) + DELTA),
    "never ran, is time, not past deadline": Case(deadline=LONG_DEAD, **IS_TIME),

    "prev ran but done, not time, A": Case(ran_previously=True, expect_update_status=True, **NOT_TIME),
    "prev ran but done, not time, F": Case("Forbid", ran_previously=True, expect_update_status=True, **NOT_TIME),
    "prev ran but done, not time, R": Case("Replace", ran_previously=True, expect_update_status=True, **NOT_TIME),
    "prev ran but done, is time, A": Case(ran_previously=True, **IS_TIME),
    "prev ran but done, is time, create job failed, A": Case(
        ran_previously=True, now=JUST_AFTER_THE_HOUR, job_create_error=_already_exists(), expect_update_status=True,
        expect_active=1),
    "prev ran but done, is time, job not present in CJ active status, create job failed, A": Case(
        ran_previously=True, now=JUST_AFTER_THE_HOUR, job_create_error=_already_exists(), expect_update_status=True,
        job_present_in_cj_active_status=False, expect_active=1),
    "prev ran but done, is time, F": Case("Forbid", ran_previously=True, **IS_TIME),
    "prev ran but done, is time, R": Case("Replace", ran_previously=True, **IS_TIME),
    "prev ran but done, is time, suspended": Case(suspend=True, ran_previously=True, now=JUST_AFTER_THE_HOUR,
                                                  expect_update_status=True),
    "prev ran but done, is time, past deadline": Case(
        deadline=SHORT_DEAD, ran_previously=True, now=JUST_AFTER_THE_HOUR, expect_requeue_after=True,
        expected_requeue_duration=1 * H - 1 * M + DELTA, expect_update_status=True),
    "prev ran but done, is time, not past deadline": Case(deadline=LONG_DEAD, ran_previously=True, **IS_TIME),

    "still active, not time, A": Case(ran_previously=True, still_active=True, **{**NOT_TIME, "expect_active": 1}),
    "still active, not time, F": Case("Forbid", ran_previously=True, still_active=True,
                                      **{**NOT_TIME, "expect_active": 1}),
    "still active, not time, R": Case("Replace", ran_previously=True, still_active=True,
                                      **{**NOT_TIME, "expect_active": 1}),
    "still active, is time, A": Case(ran_previously=True, still_active=True, **{**IS_TIME, "expect_active": 2}),
    "still active, is time, F": Case(
        "Forbid", ran_previously=True, still_active=True, now=JUST_AFTER_THE_HOUR, expect_active=1,
        expect_requeue_after=True, expected_requeue_duration=1 * H - 1 * M + DELTA, extra_normal_events=1),
    "still active, is time, R": Case("Replace", ran_previously=True, still_active=True, expect_delete=True,
                                     **IS_TIME),
    "still active, is time, get job failed, R": Case(
        "Replace", ran_previously=True, still_active=True, now=JUST_AFTER_THE_HOUR,
        job_get_err=errors.BadRequest("request is invalid"), expect_active=1, expected_warnings=1),
    "still active, is time, suspended": Case(suspend=True, ran_previously=True, still_active=True,
                                             now=JUST_AFTER_THE_HOUR, expect_active=1),
    "still active, is time, past deadline": Case(
        deadline=SHORT_DEAD, ran_previously=True, still_active=True, now=JUST_AFTER_THE_HOUR, expect_active=1,
        expect_requeue_after=True, expected_requeue_duration=1 * H - 1 * M + DELTA),
    "still active, is time, not past deadline": Case(deadline=LONG_DEAD, ran_previously=True, still_active=True,
                                                     **{**IS_TIME, "expect_active": 2}),

    # Too many missed start times with no deadline or a long one: a warning, and the last one starts.
    "prev ran but done, long overdue, not past deadline, A": Case(deadline=LONG_DEAD, expected_warnings=1,
                                                                  **LONG_OVERDUE),
    "prev ran but done, long overdue, not past deadline, R": Case("Replace", deadline=LONG_DEAD, expected_warnings=1,
                                                                  **LONG_OVERDUE),
    "prev ran but done, long overdue, not past deadline, F": Case("Forbid", deadline=LONG_DEAD, expected_warnings=1,
                                                                  **LONG_OVERDUE),
    "prev ran but done, long overdue, no deadline, A": Case(expected_warnings=1, **LONG_OVERDUE),
    "prev ran but done, long overdue, no deadline, R": Case("Replace", expected_warnings=1, **LONG_OVERDUE),
    "prev ran but done, long overdue, no deadline, F": Case("Forbid", expected_warnings=1, **LONG_OVERDUE),
    "prev ran but done, long overdue, past medium deadline, A": Case(deadline=MEDIUM_DEAD, **LONG_OVERDUE),
    "prev ran but done, long overdue, past short deadline, A": Case(deadline=SHORT_DEAD, **LONG_OVERDUE),
    "prev ran but done, long overdue, past medium deadline, R": Case("Replace", deadline=MEDIUM_DEAD, **LONG_OVERDUE),
    "prev ran but done, long overdue, past short deadline, R": Case("Replace", deadline=SHORT_DEAD, **LONG_OVERDUE),
    "prev ran but done, long overdue, past medium deadline, F": Case("Forbid", deadline=MEDIUM_DEAD, **LONG_OVERDUE),
    "prev ran but done, long overdue, past short deadline, F": Case("Forbid", deadline=SHORT_DEAD, **LONG_OVERDUE),

    # Time skew: the controller sees the Job was created, takes no action.
    "this ran but done, time drifted back, F": Case(
        "Forbid", ran_previously=True, job_creation_time=JUST_AFTER_THE_HOUR, now=JUST_BEFORE_THE_HOUR,
        job_create_error=_already_exists(), expect_requeue_after=True, expected_requeue_duration=1 * M + DELTA,
        expect_update_status=True, job_present_in_cj_active_status=False),

    # A slow Job lister.
    "this started but went missing, not past deadline, A": Case(job_still_not_found_in_lister=True, **MISSING),
    "this started but went missing, not past deadline, f": Case("Forbid", job_still_not_found_in_lister=True,
                                                                **MISSING),
    "this started but went missing, not past deadline, R": Case("Replace", job_still_not_found_in_lister=True,
                                                                **MISSING),
    # A slow CronJob lister.
    "this started but is not present in cronjob active list, not past deadline, A": Case(
        job_present_in_cj_active_status=False, **MISSING),
    "this started but is not present in cronjob active list, not past deadline, f": Case(
        "Forbid", job_present_in_cj_active_status=False, **MISSING),
    "this started but is not present in cronjob active list, not past deadline, R": Case(
        "Replace", job_present_in_cj_active_status=False, **MISSING),

    # @every schedules
    "with @every schedule, never ran, not time": Case(
        schedule=EVERY_HOUR, cronjob_creation_time=JUST_BEFORE_THE_HOUR, job_creation_time=JUST_BEFORE_THE_HOUR,
        now=TOP_OF_THE_HOUR, expect_requeue_after=True, expected_requeue_duration=1 * H - 1 * M + DELTA),
    "with @every schedule, never ran, is time": Case(
        schedule=EVERY_HOUR, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, now=JUST_BEFORE_THE_HOUR, expect_requeue_after=True,
        expected_requeue_duration=1 * H + DELTA, expect_create=True, expect_active=1, expect_update_status=True),
    "with @every schedule, never ran, is time, past deadline": Case(
        schedule=EVERY_HOUR, deadline=SHORT_DEAD, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, now=JUST_BEFORE_THE_HOUR + SHORT_DEAD + 1,
        expect_requeue_after=True, expected_requeue_duration=1 * H - (SHORT_DEAD + 1) + DELTA),
    "with @every schedule, never ran, is time, not past deadline": Case(
        schedule=EVERY_HOUR, deadline=LONG_DEAD, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, now=JUST_BEFORE_THE_HOUR + SHORT_DEAD - 1, expect_create=True,
        expect_active=1, expect_requeue_after=True, expected_requeue_duration=1 * H - (SHORT_DEAD - 1) + DELTA,
        expect_update_status=True),
    "with @every schedule, prev ran but done, not time": Case(
        schedule=EVERY_HOUR, ran_previously=True, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, last_schedule_time=JUST_BEFORE_THE_HOUR, now=TOP_OF_THE_HOUR,
        expect_requeue_after=True, expected_requeue_duration=1 * H - 1 * M + DELTA, expect_update_status=True),
    "with @every schedule, prev ran but done, is time": Case(
        schedule=EVERY_HOUR, ran_previously=True, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=TOP_OF_THE_HOUR + 1 * H, expect_create=True, expect_active=1, expect_requeue_after=True,
        expected_requeue_duration=1 * H - 1 * M + DELTA, expect_update_status=True),
    "with @every schedule, prev ran but done, is time, past deadline": Case(
        schedule=EVERY_HOUR, deadline=SHORT_DEAD, ran_previously=True, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=JUST_BEFORE_THE_NEXT_HOUR + SHORT_DEAD + 1, expect_requeue_after=True,
        expected_requeue_duration=1 * H - (SHORT_DEAD + 1) + DELTA, expect_update_status=True),
    "with @every schedule, still active, not time": Case(
        schedule=EVERY_HOUR, ran_previously=True, still_active=True, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_HOUR, last_schedule_time=JUST_BEFORE_THE_HOUR, now=TOP_OF_THE_HOUR,
        expect_active=1, expect_requeue_after=True, expected_requeue_duration=1 * H - 1 * M + DELTA),
    "with @every schedule, still active, is time": Case(
        schedule=EVERY_HOUR, ran_previously=True, still_active=True, cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, last_schedule_time=JUST_BEFORE_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR, expect_create=True, expect_active=2, expect_requeue_after=True,
        expected_requeue_duration=1 * H - 2 * M + DELTA, expect_update_status=True),
    "with @every schedule, still active, is time, past deadline": Case(
        schedule=EVERY_HOUR, deadline=SHORT_DEAD, ran_previously=True, still_active=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR, now=JUST_BEFORE_THE_NEXT_HOUR + SHORT_DEAD + 1, expect_active=1,
        expect_requeue_after=True, expected_requeue_duration=1 * H - (SHORT_DEAD + 1) + DELTA),
    "with @every schedule, still active, is time, not past deadline": Case(
        schedule=EVERY_HOUR, deadline=LONG_DEAD, ran_previously=True, still_active=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR, now=JUST_BEFORE_THE_NEXT_HOUR + SHORT_DEAD - 1, expect_create=True,
        expect_active=2, expect_requeue_after=True, expected_requeue_duration=1 * H - (SHORT_DEAD - 1) + DELTA,
        expect_update_status=True),
    "with @every schedule, prev ran but done, long overdue, no deadline": Case(
        schedule=EVERY_HOUR, ran_previously=True, cronjob_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        last_schedule_time=JUST_AFTER_THE_HOUR, job_creation_time=JUST_AFTER_THE_PRIOR_HOUR, now=WEEK_AFTER_THE_HOUR,
        expect_create=True, expect_active=1, expected_warnings=1, expect_requeue_after=True,
        expected_requeue_duration=1 * M + DELTA, expect_update_status=True),
    "with @every schedule, prev ran but done, long overdue, past deadline": Case(
        schedule=EVERY_HOUR, deadline=SHORT_DEAD, ran_previously=True, cronjob_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        last_schedule_time=JUST_AFTER_THE_HOUR, job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=WEEK_AFTER_THE_HOUR + 1 * M + SHORT_DEAD + 1, expect_active=1, expect_requeue_after=True,
        expected_requeue_duration=1 * H - (SHORT_DEAD + 1) + DELTA, expect_update_status=True),
    "do nothing if the namespace is terminating": Case(
        job_create_error=_namespace_terminating(), ran_previously=True, still_active=True, now=JUST_AFTER_THE_HOUR,
        expect_err=True, job_present_in_cj_active_status=False),
}


def bare_controller(now: float, jc: Any, cjc: Any, recorder: FakeRecorder) -> ControllerV2:
    """Upstream's ControllerV2{jobControl, cronJobControl, recorder, now} literal: no informers."""
    jm = ControllerV2.__new__(ControllerV2)
    jm.job_control, jm.cron_job_control, jm.recorder, jm.now = jc, cjc, recorder, lambda: now
    return jm


def setup_case(tc: Case) -> tuple[batch_v1.CronJob, batch_v1.CronJob, list[batch_v1.Job], batch_v1.Job | None]:
    spec: dict[str, Any] = {"concurrencyPolicy": tc.concurrency_policy, "suspend": tc.suspend,
                            "schedule": tc.schedule, "timeZone": tc.time_zone}
    if tc.deadline is not None:
        spec["startingDeadlineSeconds"] = tc.deadline
    cj = types.from_dict(cron_job_dict(**spec), batch_v1.CronJob)
    real_cj = cj.deep_copy()
    jobs: list[batch_v1.Job] = []
    job = None
    if tc.ran_previously:
        cj.metadata.creation_timestamp = rfc3339(tc.cronjob_creation_time or JUST_BEFORE_THE_PRIOR_HOUR)
        cj.status = batch_v1.CronJobStatus(last_schedule_time=rfc3339(tc.last_schedule_time
                                                                      or JUST_AFTER_THE_PRIOR_HOUR))
        job = utils.get_job_from_template2(cj, tc.job_creation_time)
        job.metadata.uid, job.metadata.namespace = "1234", cj.metadata.namespace
        if tc.still_active:
            ref = utils.get_ref(job)
            if tc.job_present_in_cj_active_status:
                cj.status.active = [ref]
            real_cj.status = batch_v1.CronJobStatus(active=[ref])
        else:
            job.status = types.from_dict({"completionTime": rfc3339(tc.job_creation_time + 10),
                                          "conditions": [{"type": "Complete", "status": "True"}]},
                                         batch_v1.JobStatus)
        if not tc.job_still_not_found_in_lister:
            jobs.append(job)
    else:
        cj.metadata.creation_timestamp = rfc3339(tc.cronjob_creation_time or JUST_BEFORE_THE_HOUR)
    return cj, real_cj, jobs, job


@pytest.mark.parametrize("name", list(CASES))
async def test_sync_cron_job(name: str) -> None:
    """Upstream: TestControllerV2SyncCronJob"""
    tc = CASES[name]
    cj, real_cj, jobs, job = setup_case(tc)
    jc = FakeJobControl(job, create_err=tc.job_create_error, err=tc.job_get_err)
    cjc = FakeCJControl(real_cj)
    recorder = FakeRecorder()
    jm = bare_controller(tc.now, jc, cjc, recorder)
    cj_copy = cj.deep_copy()
    err = None
    try:
        requeue_after, update_status = await jm.sync_cron_job(cj_copy, jobs)
    except cjv2._SyncError as e:
        requeue_after, update_status, err = None, e.update_status, e.err
    if tc.expect_err:
        assert err is not None
    if tc.expect_requeue_after:
        assert requeue_after == pytest.approx(tc.expected_requeue_duration)
    assert update_status == tc.expect_update_status
    if tc.ran_previously and not tc.still_active:
        assert cj_copy.status.last_successful_time == rfc3339(tc.job_creation_time + 10)
    assert len(jc.jobs) == (1 if tc.expect_create else 0)
    for created in jc.jobs:
        [ref] = created.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller) == \
            ("batch/v1", "CronJob", "mycronjob", "1a2b3c", True)
    assert len(jc.delete_job_name) == (1 if tc.expect_delete else 0)
    expected_events = int(tc.expect_create) + int(tc.expect_delete) + tc.extra_normal_events + tc.expected_warnings
    assert len(recorder.events) == expected_events, recorder.events
    assert sum(e.startswith("Warning") for e in recorder.events) == tc.expected_warnings
    if update_status and tc.expect_create:
        assert len(cj_copy.status.active) == tc.expect_active


async def test_sync_events_carry_upstream_messages() -> None:
    """The reasons and texts of the events a sync records."""
    tc = CASES["still active, is time, R"]
    cj, real_cj, jobs, job = setup_case(tc)
    jm = bare_controller(tc.now, FakeJobControl(job), FakeCJControl(real_cj), rec := FakeRecorder())
    await jm.sync_cron_job(cj, jobs)
    name = f"mycronjob-{int(TOP_OF_THE_HOUR) // 60}"
    assert rec.events == ["Normal SuccessfulDelete Deleted job " + job.metadata.name,
                          "Normal SuccessfulCreate Created job " + name]
    assert cj.status.last_schedule_time == "2016-05-19T10:00:00Z"
    assert [r.name for r in cj.status.active] == [name]

    for case, want in [
        ("never ran, not valid schedule, A", 'Warning UnparseableSchedule unparseable schedule: '
                                             '"obvious error schedule" : expected exactly 5 fields, found 3: '
                                             '[obvious error schedule]'),
        ("never ran, not valid time zone", 'Warning UnknownTimeZone invalid timeZone: "bad timezone": '
                                           'unknown time zone bad timezone'),
        ("still active, is time, F", "Normal JobAlreadyActive Not starting job because prior execution is running "
                                     "and concurrency policy is Forbid"),
        ("still active, is time, get job failed, R", "Warning FailedGet Get job: request is invalid"),
        ("never ran, is time in zone, but TZ is also set in schedule",
         'Warning UnsupportedSchedule CRON_TZ or TZ used in schedule "TZ=UTC 0 * * * ?" is not officially '
         'supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details'),
    ]:
        tc = CASES[case]
        cj, real_cj, jobs, job = setup_case(tc)
        jm = bare_controller(tc.now, FakeJobControl(job, err=tc.job_get_err), FakeCJControl(real_cj),
                             rec := FakeRecorder())
        try:
            await jm.sync_cron_job(cj, jobs)
        except cjv2._SyncError:
            pass
        assert want in rec.events, (case, rec.events)


async def test_sync_cron_job_sees_completed_and_missing_jobs() -> None:
    """An active Job that finished leaves the active list (SawCompletedJob); one that is gone from
    the lister and the API server too (MissingJob)."""
    cj, _, _, job = setup_case(Case(ran_previously=True, still_active=True))
    done = job.deep_copy()
    done.status = types.from_dict({"completionTime": rfc3339(JUST_AFTER_THE_PRIOR_HOUR + 10),
                                   "conditions": [{"type": "Failed", "status": "True"}]}, batch_v1.JobStatus)
    jm = bare_controller(JUST_BEFORE_THE_HOUR, FakeJobControl(done), FakeCJControl(), rec := FakeRecorder())
    c = cj.deep_copy()
    _, update = await jm.sync_cron_job(c, [done])
    assert update and c.status.active == [] and c.status.last_successful_time is None   # failed: not successful
    assert rec.events == [f"Normal SawCompletedJob Saw completed job: {job.metadata.name}, condition: Failed"]

    jm = bare_controller(JUST_BEFORE_THE_HOUR, FakeJobControl(None), FakeCJControl(), rec := FakeRecorder())
    c = cj.deep_copy()
    _, update = await jm.sync_cron_job(c, [])
    assert update and c.status.active == []
    assert rec.events == [f"Normal MissingJob Active job went missing: {job.metadata.name}"]


# --- the handlers, cleanup and adoption, on FakeClientset ----------------------------------------------

@dataclass
class Fixture:
    fake: FakeClientset
    clock: FakeClock
    factory: SharedInformerFactory
    jm: ControllerV2
    recorder: FakeRecorder
    delays: list[tuple[str, float]] = field(default_factory=list)

    def add_to_cache(self, *objs: Any) -> None:
        for o in objs:
            inf = (self.factory.batch_v1().cronjobs() if isinstance(o, batch_v1.CronJob)
                   else self.factory.batch_v1().jobs())
            inf.informer().get_indexer().add(o)


async def new_fixture(now: float = JUST_BEFORE_THE_HOUR) -> Fixture:
    clock = FakeClock(start=now)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    jm = ControllerV2(factory.batch_v1().jobs(), factory.batch_v1().cronjobs(), fake, clock=clock, recorder=recorder)
    return Fixture(fake, clock, factory, jm, recorder)


def _cj(schedule: str = "", *, last: float | None = None, time_zone: str | None = None,
        labels: dict[str, str] | None = None) -> batch_v1.CronJob:
    d = cron_job_dict(schedule=schedule, timeZone=time_zone)
    d["spec"]["jobTemplate"]["metadata"]["labels"] = labels or {"a": "b"}
    if last is not None:
        d["status"] = {"lastScheduleTime": rfc3339(last)}
    return types.from_dict(d, batch_v1.CronJob)


@pytest.mark.parametrize("name,old,new,expected", [
    ("spec.template changed", _cj(), _cj(labels={"a": "foo"}), None),
    ("spec.schedule changed", _cj("30 * * * *", last=JUST_BEFORE_THE_HOUR),
     _cj("*/1 * * * *", last=JUST_BEFORE_THE_HOUR, labels={"a": "foo"}), 1 + DELTA),
    ("spec.schedule with @every changed - cadence decrease", _cj("@every 1m", last=JUST_BEFORE_THE_HOUR),
     _cj("@every 3m", last=JUST_BEFORE_THE_HOUR, labels={"a": "foo"}), 2 * M + 1 + DELTA),
    ("spec.schedule with @every changed - cadence increase", _cj("@every 3m", last=JUST_BEFORE_THE_HOUR),
     _cj("@every 1m", last=JUST_BEFORE_THE_HOUR, labels={"a": "foo"}), 1 + DELTA),
    ("spec.timeZone not changed", _cj(time_zone=NEW_YORK), _cj(time_zone=NEW_YORK, labels={"a": "foo"}), None),
    ("spec.timeZone changed", _cj(time_zone=NEW_YORK), _cj(labels={"a": "foo"}), None),
])
async def test_update_cron_job(name: str, old: batch_v1.CronJob, new: batch_v1.CronJob, expected: float | None
                               ) -> None:
    """Upstream: TestControllerV2UpdateCronJob — a new schedule requeues for its next time."""
    f = await new_fixture(JUST_A_SECOND_BEFORE_THE_HOUR)
    delays: list[float] = []
    f.jm.queue.add_after = lambda key, d: delays.append(d)              # type: ignore[method-assign]
    f.jm.update_cron_job(old, new)
    if expected is None:
        assert delays == []
    else:
        assert delays == [pytest.approx(expected)]


def _job_dict(name: str, ns: str = "foo-ns", owner: str | None = None, **meta: Any) -> batch_v1.Job:
    m: dict[str, Any] = {"name": name, "namespace": ns, **meta}
    if owner:
        m["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": owner, "uid": "u",
                                 "controller": True}]
    return types.from_dict({"metadata": m}, batch_v1.Job)


@pytest.mark.parametrize("name,jobs,labels,expected", [
    ("test getting jobs in namespace without controller reference",
     [_job_dict("foo"), _job_dict("foo1"), _job_dict("foo2")], None, []),
    ("test getting jobs in namespace with a controller reference",
     [_job_dict("foo"), _job_dict("foo1", owner="fooer"), _job_dict("foo2")], None, ["foo1"]),
    ("test getting jobs in other namespaces",
     [_job_dict("foo", "bar-ns"), _job_dict("foo1", "bar-ns"), _job_dict("foo2", "bar-ns")], None, []),
    ("test getting jobs whose labels do not match job template",
     [_job_dict("foo-fooer-owner-ref", owner="fooer", labels={"key": "different-value"}),
      _job_dict("foo-other-owner-ref", owner="another-cronjob", labels={"key": "different-value"})],
     {"key": "value"}, ["foo-fooer-owner-ref"]),
])
async def test_get_jobs_to_be_reconciled(name: str, jobs: list[batch_v1.Job], labels: Any, expected: list[str]
                                         ) -> None:
    """Upstream: TestControllerV2GetJobsToBeReconciled"""
    f = await new_fixture()
    f.add_to_cache(*jobs)
    cj = types.from_dict({"metadata": {"namespace": "foo-ns", "name": "fooer"},
                          "spec": {"jobTemplate": {"metadata": {"labels": labels}}}}, batch_v1.CronJob)
    assert sorted(j.metadata.name for j in f.jm.get_jobs_to_be_reconciled(cj)) == expected


@pytest.mark.parametrize("now,limit,finished,create_err,deleted", [
    # jobs are still deleted when a cronjob cannot create jobs (quota reached): no deadlock
    (JUST_AFTER_THE_HOUR, 1, [("finished-job-started-hour-ago", JUST_BEFORE_THE_PRIOR_HOUR),
                              ("finished-job-started-minute-ago", JUST_BEFORE_THE_HOUR)],
     errors.InternalError("quota for # of jobs reached"), ["finished-job-started-hour-ago"]),
    # jobs are not deleted if history limit not reached
    (JUST_BEFORE_THE_HOUR, 2, [("finished-job-started-hour-ago", JUST_BEFORE_THE_PRIOR_HOUR)], None, []),
])
async def test_cleanup_finished_jobs(now: float, limit: int, finished: list[tuple[str, float]],
                                     create_err: Exception | None, deleted: list[str]) -> None:
    """Upstream: TestControllerV2CleanupFinishedJobs"""
    f = await new_fixture(now)
    cj = types.from_dict({"metadata": {"namespace": "foo-ns", "name": "fooer"},
                          "spec": {"schedule": ON_THE_HOUR, "successfulJobsHistoryLimit": limit,
                                   "jobTemplate": {"metadata": {"labels": {"key": "value"}}}},
                          "status": {"lastScheduleTime": rfc3339(JUST_AFTER_THE_PRIOR_HOUR)}}, batch_v1.CronJob)
    jobs = []
    for name, start in finished:
        j = _job_dict(name, owner="fooer")
        j.status = types.from_dict({"startTime": rfc3339(start), "conditions": [{"type": "Complete",
                                                                                "status": "True"}]},
                                   batch_v1.JobStatus)
        jobs.append(j)
    f.add_to_cache(cj, *jobs)
    f.jm.job_control = jc = FakeJobControl(create_err=create_err)
    f.jm.cron_job_control = FakeCJControl()
    f.jm.enqueue_controller(cj)
    await f.jm.process_next_work_item()
    assert sorted(jc.delete_job_name) == deleted


def _already_created(f: Fixture, owned: bool) -> tuple[batch_v1.CronJob, batch_v1.Job]:
    cj = types.from_dict(cron_job_dict(concurrencyPolicy="Forbid", schedule=EVERY_HOUR), batch_v1.CronJob)
    cj.status = batch_v1.CronJobStatus(last_schedule_time=rfc3339(JUST_BEFORE_THE_PRIOR_HOUR), active=[])
    job = utils.get_job_from_template2(cj, JUST_AFTER_THE_PRIOR_HOUR)
    job.metadata.uid, job.metadata.namespace = "1234", cj.metadata.namespace
    if not owned:
        job.metadata.owner_references = []
    f.add_to_cache(cj)
    return cj, job


async def test_job_already_exists_but_not_in_active_status() -> None:
    """Upstream: TestControllerV2JobAlreadyExistsButNotInActiveStatus — a Job created before a
    failed status write is put back in the active list, not created again forever."""
    f = await new_fixture(JUST_BEFORE_THE_HOUR)
    cj, job = _already_created(f, owned=True)
    f.jm.job_control = FakeJobControl(job, create_err=_already_exists())
    f.jm.cron_job_control = cjc = FakeCJControl()
    f.jm.enqueue_controller(cj)
    await f.jm.process_next_work_item()
    [update] = cjc.updates
    assert update.status.active == [utils.get_ref(job)]


async def test_job_already_exists_but_different_owner() -> None:
    """Upstream: TestControllerV2JobAlreadyExistsButDifferentOwner — someone else's Job is ignored."""
    f = await new_fixture(JUST_BEFORE_THE_HOUR)
    cj, job = _already_created(f, owned=False)
    f.jm.job_control = FakeJobControl(job, create_err=_already_exists())
    f.jm.cron_job_control = cjc = FakeCJControl()
    f.jm.enqueue_controller(cj)
    await f.jm.process_next_work_item()
    assert cjc.updates == []


async def test_job_handlers_wake_the_owning_cron_job() -> None:
    """Upstream: addJob, updateJob, deleteJob — a Job wakes the CronJob its controller ref names
    (right kind, name and UID); orphans and other owners' Jobs wake nothing."""
    f = await new_fixture()
    cj = types.from_dict(cron_job_dict(), batch_v1.CronJob)
    f.add_to_cache(cj)
    owned = utils.get_job_from_template2(cj, TOP_OF_THE_HOUR)
    owned.metadata.namespace, owned.metadata.resource_version = "snazzycats", "1"
    stranger = owned.deep_copy()
    stranger.metadata.owner_references[0].uid = "someone-else"
    orphan = owned.deep_copy()
    orphan.metadata.owner_references = None

    def drained() -> list[str]:
        keys = []
        while f.jm.queue.len():
            key = f.jm.queue._queue.popleft()
            f.jm.queue._dirty.discard(key)
            keys.append(key)
        return keys

    f.jm.add_job(owned)
    assert drained() == ["snazzycats/mycronjob"]
    f.jm.add_job(stranger)
    f.jm.add_job(orphan)
    assert drained() == []
    newer = owned.deep_copy()
    newer.metadata.resource_version = "2"
    f.jm.update_job(owned, owned)                       # a resync: same resourceVersion
    assert drained() == []
    f.jm.update_job(owned, newer)
    assert drained() == ["snazzycats/mycronjob"]
    f.jm.delete_job(newer)
    assert drained() == ["snazzycats/mycronjob"]


# --- a run on real informers: minutes pass on the fake clock ---------------------------------------------

async def _until(cond: Callable[[], Awaitable[bool]], what: str, turns: int = 400) -> None:
    """Let the controller's tasks run (loop turns, not wall-clock waits) until cond holds."""
    for _ in range(turns):
        if await cond():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never: {what}")


async def test_run_creates_a_job_each_minute_and_keeps_history() -> None:
    """*/1 * * * * with successfulJobsHistoryLimit 1: each fake minute a Job
    `<name>-<minutes>` with the scheduled-timestamp annotation; a completed Job leaves
    status.active (lastSuccessfulTime set), and older completed Jobs are deleted."""
    start = t("2026-01-01T00:00:30Z")
    f = await new_fixture(start)
    jobs = f.fake.batch_v1().jobs("default")
    cjs = f.fake.batch_v1().cronjobs("default")
    d = cron_job_dict(schedule="*/1 * * * *", successfulJobsHistoryLimit=1)
    d["metadata"] = {"name": "x", "namespace": "default"}
    d["spec"]["jobTemplate"]["spec"]["template"]["spec"] = {"restartPolicy": "OnFailure",
                                                            "containers": [{"name": "c", "image": "foo/bar"}]}
    await cjs.create(d)
    skews = _skew_count()
    f.factory.start()
    run = asyncio.create_task(f.jm.run(2))
    try:
        await _until(lambda: _has_waiters(f.clock), "the CronJob waits for 00:01")
        assert (await jobs.list()).items == []

        f.clock.step(30)                                                     # 00:01:00.0 + 100ms margin
        f.clock.step(0.1)
        first = f"x-{int(t('2026-01-01T00:01:00Z')) // 60}"
        await _until(lambda: _names(jobs, [first]), "the 00:01 Job")
        job = await jobs.get(first)
        assert job.metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2026-01-01T00:01:00Z"
        assert job.metadata.labels == {"a": "b"} and job.metadata.owner_references[0].kind == "CronJob"
        assert _skew_count() == skews + 1                   # created within a second of 00:01: le="1.0"

        async def active_is(names: list[str]) -> bool:
            cj = await cjs.get("x")
            return [r.name for r in (cj.status.active if cj.status else None) or []] == names
        await _until(lambda: active_is([first]), "status.active lists the Job")
        cj = await cjs.get("x")
        assert cj.status.last_schedule_time == "2026-01-01T00:01:00Z"

        await _complete(jobs, first, f.clock.now())
        await _until(lambda: active_is([]), "the completed Job leaves status.active")
        assert (await cjs.get("x")).status.last_successful_time == rfc3339(f.clock.now())

        f.clock.step(60)                                                     # 00:02: a second Job
        second = f"x-{int(t('2026-01-01T00:02:00Z')) // 60}"
        await _until(lambda: _names(jobs, [first, second]), "the 00:02 Job")
        await _complete(jobs, second, f.clock.now())
        await _until(lambda: _names(jobs, [second]), "the older completed Job is deleted (history limit 1)")
        assert any("SuccessfulDelete Deleted job " + first in e for e in f.recorder.events)
        assert any("SawCompletedJob Saw completed job: " + second + ", condition: Complete" in e
                   for e in f.recorder.events)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await f.factory.shutdown()


def _skew_count() -> float:
    from prometheus_client import REGISTRY
    name = "cronjob_controller_job_creation_skew_duration_seconds_bucket"
    return REGISTRY.get_sample_value(name, {"le": "1.0"}) or 0.0


async def _has_waiters(clock: FakeClock) -> bool:
    return clock.has_waiters()


async def _names(jobs: Any, want: list[str]) -> bool:
    return sorted(j.metadata.name for j in (await jobs.list()).items) == sorted(want)


async def _complete(jobs: Any, name: str, now: float) -> None:
    """What the Job controller writes when its pods succeed."""
    job = await jobs.get(name)
    job.status = types.from_dict({"startTime": rfc3339(now), "completionTime": rfc3339(now), "succeeded": 1,
                                  "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                                 {"type": "Complete", "status": "True"}]}, batch_v1.JobStatus)
    await jobs.update_status(job)
