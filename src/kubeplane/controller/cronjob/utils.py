"""Pure functions of the CronJob controller: which scheduled time is due, when to look again,
the Job a CronJob makes for a scheduled time, and the active list.

Times are epoch seconds (floats); a schedule's activations are whole seconds.

Example, "0 * * * ?" created at 09:59, last scheduled 10:00, now 12:05: the activations after
10:00 are 11:00 and 12:00, both not after now, so the most recent unmet time is 12:00 (11:00 was
missed: "few missed"); the controller starts 12:00's Job and requeues for 13:00 + 100ms.

Upstream: pkg/controller/cronjob/utils.go; the Job predicates of pkg/controller/job/util.
"""
from __future__ import annotations

import datetime as dt
import enum
import math
from typing import TYPE_CHECKING, Any

from ...api.types import batch_v1, core_v1, meta_v1
from ...api.validation.cron import ZERO_TIME, Schedule, load_location
from ...utils.clock import parse_rfc3339, rfc3339
from .. import controller_utils as cu

if TYPE_CHECKING:
    from ...client.tools.record import EventRecorder

CONTROLLER_KIND = cu.GroupVersionKind("batch", "v1", "CronJob")
# Upstream: nextScheduleDelta — requeue a little after the scheduled time, for clock skew.
NEXT_SCHEDULE_DELTA = 0.1
# Upstream: batchv1.CronJobScheduledTimestampAnnotation
CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
# More missed start times than this is "many": a warning, likely a clock or deadline problem.
TOO_MANY_MISSED = 100


class MissedSchedules(enum.Enum):
    """Upstream: missedSchedulesType"""

    NONE = "none"
    FEW = "few"
    MANY = "many"


# --- the Job predicates (pkg/controller/job/util) -----------------------------------------------

def finished_condition(job: batch_v1.Job) -> tuple[bool, str]:
    """Whether the Job finished, and as Complete or Failed. Upstream: jobutil.FinishedCondition"""
    for c in (job.status.conditions if job.status else None) or ():
        if c.type in ("Complete", "Failed") and c.status == "True":
            return True, c.type
    return False, ""


def is_job_finished(job: batch_v1.Job) -> bool:
    return finished_condition(job)[0]


def is_job_succeeded(job: batch_v1.Job) -> bool:
    """Upstream: jobutil.IsJobSucceeded"""
    return any(c.type == "Complete" and c.status == "True"
               for c in (job.status.conditions if job.status else None) or ())


# --- the active list ----------------------------------------------------------------------------

def in_active_list(cj: batch_v1.CronJob, uid: str | None) -> bool:
    return any(r.uid == uid for r in _active(cj))


def in_active_list_by_name(cj: batch_v1.CronJob, namespace: str | None, name: str) -> bool:
    return any(r.name == name and r.namespace == namespace for r in _active(cj))


def delete_from_active_list(cj: batch_v1.CronJob, uid: str | None) -> None:
    status = _status(cj)
    status.active = [r for r in status.active or () if r.uid != uid]


def _active(cj: batch_v1.CronJob) -> list[core_v1.ObjectReference]:
    return (cj.status.active if cj.status else None) or []


def _status(cj: batch_v1.CronJob) -> batch_v1.CronJobStatus:
    if cj.status is None:
        cj.status = batch_v1.CronJobStatus()
    return cj.status


# --- schedule times -----------------------------------------------------------------------------

def most_recent_schedule_time(cj: batch_v1.CronJob, now: float, schedule: Schedule, include_starting_deadline: bool
                              ) -> tuple[float, float | None, MissedSchedules, str | None]:
    """(earliest, most recent unmet time or None, how many were missed, error).

    earliest is the last schedule time, else the CronJob's creation (moved up to now -
    startingDeadlineSeconds when asked). The error is for a schedule that parses but never
    fires (e.g. 31 February), where two successive activations are not a second apart.
    Upstream: mostRecentScheduleTime
    """
    created = cj.metadata.creation_timestamp if cj.metadata else None
    earliest = _last_schedule_time(cj) or (parse_rfc3339(created) if created else float(ZERO_TIME))
    missed = MissedSchedules.NONE
    deadline = cj.spec.starting_deadline_seconds if cj.spec else None
    if include_starting_deadline and deadline is not None:
        earliest = max(earliest, now - deadline)         # nothing before this is started any more
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1)
    if now < t1:
        return earliest, None, missed, None
    if now < t2:
        return earliest, float(t1), missed, None
    between = round(t2 - t1)
    if between < 1:
        return earliest, None, missed, "time difference between two schedules is less than 1 second"
    # A rough count: how many intervals of (t2 - t1) fit between t1 and now. Start one interval
    # early and let the schedule find the exact times, for irregular ones like "30 6-16/4 * * 1-5".
    n = int(now - t1) // between + 1
    most_recent: float | None = None
    t = schedule.next(t1 + (n - 2) * between)
    while t <= now and t != ZERO_TIME:                   # upstream loops forever on the zero time
        most_recent = float(t)
        t = schedule.next(t)
    if n > TOO_MANY_MISSED:
        missed = MissedSchedules.MANY
    elif n > 0:
        missed = MissedSchedules.FEW
    return earliest, most_recent, missed, None


def next_schedule_time_duration(cj: batch_v1.CronJob, now: float, schedule: Schedule) -> float | None:
    """Seconds until the next activation after the most recent one, plus 100ms for clock skew;
    None when the schedule has no activation within five years (e.g. 29 February from 2097):
    upstream requeues such a CronJob at once, forever. Upstream: nextScheduleTimeDuration"""
    earliest, most_recent, missed, err = most_recent_schedule_time(cj, now, schedule, False)
    if err is not None:
        most_recent = now                # still requeue: aim for the next slot from now
    elif most_recent is None:
        most_recent = earliest if missed is MissedSchedules.NONE else now
    nxt = schedule.next(most_recent)
    return None if nxt == ZERO_TIME else nxt + NEXT_SCHEDULE_DELTA - now


def next_schedule_time(cj: batch_v1.CronJob, now: float, schedule: Schedule, recorder: EventRecorder
                       ) -> tuple[float | None, str | None]:
    """The most recent unmet scheduled time not after now (None if none), and an error; warns
    when more than 100 start times were missed. Upstream: nextScheduleTime"""
    _, most_recent, missed, err = most_recent_schedule_time(cj, now, schedule, True)
    if most_recent is None or most_recent > now:
        return None, err
    if missed is MissedSchedules.MANY:
        recorder.eventf(cj, "Warning", "TooManyMissedTimes",
                        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
    return most_recent, err


def _last_schedule_time(cj: batch_v1.CronJob) -> float | None:
    t = cj.status.last_schedule_time if cj.status else None
    return parse_rfc3339(t) if t else None


# --- the Job of a scheduled time ------------------------------------------------------------------

def get_job_name(cj: batch_v1.CronJob, scheduled_time: float) -> str:
    """<cronjob>-<scheduled time in minutes since the epoch>: one name per scheduled time, so a
    Job is never created twice for it. Upstream: getJobName, getTimeHashInMinutes"""
    return f"{cj.metadata.name}-{math.floor(scheduled_time) // 60}"


def get_job_from_template2(cj: batch_v1.CronJob, scheduled_time: float) -> batch_v1.Job:
    """The Job for a scheduled time: the template's labels, annotations (plus the scheduled
    time, RFC 3339 in the CronJob's time zone) and spec, owned by the CronJob.
    Raises CronError for a time zone that does not load. Upstream: getJobFromTemplate2"""
    template = cj.spec.job_template if cj.spec and cj.spec.job_template else batch_v1.JobTemplateSpec()
    tmeta = template.metadata or meta_v1.ObjectMeta()
    annotations = dict(tmeta.annotations or {})
    loc = load_location((cj.spec.time_zone if cj.spec else None) or "")
    annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] = format_rfc3339_in(scheduled_time, loc)
    spec = template.spec.deep_copy() if template.spec else batch_v1.JobSpec()
    return batch_v1.Job(
        metadata=meta_v1.ObjectMeta(
            name=get_job_name(cj, scheduled_time), labels=dict(tmeta.labels or {}), annotations=annotations,
            creation_timestamp=rfc3339(scheduled_time),
            owner_references=[cu.new_controller_ref(cj, CONTROLLER_KIND)]),
        spec=spec)


def format_rfc3339_in(t: float, loc: dt.tzinfo | None) -> str:
    """Go's Format(time.RFC3339) of t in a zone: "2016-05-19T06:00:00-04:00", or "...Z" in UTC."""
    when = dt.datetime.fromtimestamp(math.floor(t), loc or dt.timezone.utc)
    if when.utcoffset() == dt.timedelta(0):
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return when.isoformat()


def get_ref(job: batch_v1.Job) -> core_v1.ObjectReference:
    """The active list's reference to a Job. Upstream: getRef (reference.GetReference)"""
    m = job.metadata
    return core_v1.ObjectReference(kind="Job", namespace=m.namespace, name=m.name, uid=m.uid, api_version="batch/v1",
                                   resource_version=m.resource_version)


def by_job_start_time(job: batch_v1.Job) -> tuple[Any, ...]:
    """Sort key: oldest start first, Jobs not started last, ties by name. Upstream: byJobStartTime"""
    start = job.status.start_time if job.status else None
    return (start is None, parse_rfc3339(start) if start else 0.0, job.metadata.name or "")

