"""Job predicates shared by the Job, CronJob and TTL-after-finished controllers.

Upstream: pkg/controller/job/util/utils.go and the batch/v1 constants the controller uses.
"""
from __future__ import annotations

from ...api.types import batch_v1
from ...utils.clock import parse_rfc3339

# Upstream: batch.JobTrackingFinalizer, JobCompletionIndexAnnotation, JobIndexFailureCountAnnotation ...
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
JOB_INDEX_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-failure-count"
JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-ignored-failure-count"
JOB_COMPLETION_INDEX_ENV_NAME = "JOB_COMPLETION_INDEX"
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"          # spec.managedBy of Jobs we sync

# Condition types and reasons. Upstream: batch.JobConditionType, batch.JobReason*
JOB_COMPLETE, JOB_FAILED, JOB_SUSPENDED = "Complete", "Failed", "Suspended"
JOB_FAILURE_TARGET, JOB_SUCCESS_CRITERIA_MET = "FailureTarget", "SuccessCriteriaMet"
JOB_REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
JOB_REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
JOB_REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED = "MaxFailedIndexesExceeded"
JOB_REASON_FAILED_INDEXES = "FailedIndexes"
JOB_REASON_SUCCESS_POLICY = "SuccessPolicy"
JOB_REASON_COMPLETIONS_REACHED = "CompletionsReached"

NON_INDEXED, INDEXED = "NonIndexed", "Indexed"


def finished_condition(job: batch_v1.Job) -> tuple[bool, str]:
    """(finished, "Complete"/"Failed") from a True Complete or Failed condition.

    Upstream: FinishedCondition (util/utils.go)
    """
    for c in (job.status.conditions if job.status else None) or ():
        if c.type in (JOB_COMPLETE, JOB_FAILED) and c.status == "True":
            return True, c.type
    return False, ""


def is_job_finished(job: batch_v1.Job) -> bool:
    """Upstream: IsJobFinished"""
    return finished_condition(job)[0]


def is_job_succeeded(job: batch_v1.Job) -> bool:
    """Upstream: IsJobSucceeded"""
    return any(c.type == JOB_COMPLETE and c.status == "True"
               for c in (job.status.conditions if job.status else None) or ())


def find_condition_by_type(conditions: list[batch_v1.JobCondition] | None,
                           type_: str) -> batch_v1.JobCondition | None:
    """Upstream: findConditionByType"""
    for c in conditions or ():
        if c.type == type_:
            return c
    return None


def parse_time(value: str | None) -> float | None:
    """A metav1.Time string as epoch seconds; None when absent or unreadable (status is written by
    users too: a bad time must not fail a sync or an event handler)."""
    if not value:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None
