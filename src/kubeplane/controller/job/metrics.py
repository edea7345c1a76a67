"""Job controller metrics, registered once in prometheus_client's default REGISTRY.

    job_controller_job_syncs_total{completion_mode, result, action}
    job_controller_job_sync_duration_seconds{completion_mode, result, action}   4 ms .. 65 s
    job_controller_jobs_finished_total{completion_mode, result, reason}
    job_controller_job_pods_finished_total{completion_mode, result}
    job_controller_pod_failures_handled_by_failure_policy_total{action}
    job_controller_terminated_pods_tracking_finalizer_total{event}          add | delete
    job_controller_job_finished_indexes_total{status, backoffLimit}         perIndex | global
    job_controller_job_pods_creation_total{reason, status}
    job_controller_jobs_by_external_controller_total{controller_name}       spec.managedBy

action: reconciling | tracking | pods_created | pods_deleted; result: success | error (syncs),
succeeded | failed (jobs and pods). Once per sync or per finished Job: nothing per pod but the
finished-pods counter, incremented by the count of a status write.

Upstream: pkg/controller/job/metrics/metrics.go (names, help, buckets, stability).
"""
from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Histogram

RECONCILING, TRACKING, PODS_CREATED, PODS_DELETED = "reconciling", "tracking", "pods_created", "pods_deleted"
SUCCEEDED, FAILED = "succeeded", "failed"

JOB_SYNC_DURATION_SECONDS = Histogram(
    "job_controller_job_sync_duration_seconds", "[STABLE] The time it took to sync a job",
    ["completion_mode", "result", "action"],
    buckets=[0.004 * 2 ** i for i in range(15)])          # Upstream: ExponentialBuckets(0.004, 2, 15)
JOB_SYNCS = Counter("job_controller_job_syncs", "[STABLE] The number of job syncs",
                    ["completion_mode", "result", "action"])
JOBS_FINISHED = Counter("job_controller_jobs_finished", "[STABLE] The number of finished jobs",
                        ["completion_mode", "result", "reason"])
JOB_PODS_FINISHED = Counter("job_controller_job_pods_finished",
                            "[STABLE] The number of finished Pods that are fully tracked",
                            ["completion_mode", "result"])
POD_FAILURES_HANDLED_BY_FAILURE_POLICY = Counter(
    "job_controller_pod_failures_handled_by_failure_policy",
    "[BETA] The number of failed Pods handled by failure policy with respect to the failure policy action "
    "applied based on the matched rule. Possible values of the action label correspond to the possible values "
    'for the failure policy rule action, which are: "FailJob", "Ignore" and "Count".', ["action"])

TERMINATED_PODS_TRACKING_FINALIZER = Counter(
    "job_controller_terminated_pods_tracking_finalizer",
    "[BETA] The number of terminated pods (phase=Failed|Succeeded) that have the finalizer "
    'batch.kubernetes.io/job-tracking. The event label can be "add" or "delete".', ["event"])
JOB_FINISHED_INDEXES = Counter(
    "job_controller_job_finished_indexes",
    '[ALPHA] The number of finished indexes. Possible values for the\n\t\t\tstatus label are: "succeeded", '
    '"failed". Possible values for the\n\t\t\tbackoffLimit label are: "perIndex" and "global"',
    ["status", "backoffLimit"])
JOB_PODS_CREATION = Counter(
    "job_controller_job_pods_creation",
    "[ALPHA] The number of Pods created by the Job controller labelled with a reason for the Pod creation.\n"
    "This metric also distinguishes between Pods created using different PodReplacementPolicy settings.\n"
    'Possible values of the "reason" label are:\n"new", "recreate_terminating_or_failed", "recreate_failed".\n'
    'Possible values of the "status" label are:\n"succeeded", "failed".', ["reason", "status"])
JOBS_BY_EXTERNAL_CONTROLLER = Counter(
    "job_controller_jobs_by_external_controller", "[ALPHA] The number of Jobs managed by an external controller",
    ["controller_name"])

ADD, DELETE = "add", "delete"
POD_CREATE_NEW, POD_RECREATE_TERMINATING_OR_FAILED, POD_RECREATE_FAILED = (
    "new", "recreate_terminating_or_failed", "recreate_failed")

_children: dict[tuple[Any, ...], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    """labels() validates and locks on every call: children are kept by label values."""
    key = (metric, *labels)
    c = _children.get(key)
    if c is None:
        c = _children[key] = metric.labels(*labels)
    return c


def observe_sync(completion_mode: str, result: str, action: str, seconds: float) -> None:
    """Upstream: syncJob's deferred JobSyncDurationSeconds / JobSyncNum."""
    _child(JOB_SYNC_DURATION_SECONDS, completion_mode, result, action).observe(seconds)
    _child(JOB_SYNCS, completion_mode, result, action).inc()


def job_finished(completion_mode: str, result: str, reason: str) -> None:
    _child(JOBS_FINISHED, completion_mode, result, reason).inc()


def pods_finished(completion_mode: str, succeeded: int, failed: int) -> None:
    """Upstream: recordJobPodFinished (the counters' growth since the last write)."""
    if succeeded > 0:
        _child(JOB_PODS_FINISHED, completion_mode, SUCCEEDED).inc(succeeded)
    if failed > 0:
        _child(JOB_PODS_FINISHED, completion_mode, FAILED).inc(failed)


def pod_failure_policy_actions(counts: dict[str, int]) -> None:
    """Upstream: recordJobPodFailurePolicyActions"""
    for action, n in counts.items():
        _child(POD_FAILURES_HANDLED_BY_FAILURE_POLICY, action).inc(n)


def finished_pod_with_tracking_finalizer(was: bool, is_: bool) -> None:
    """Upstream: recordFinishedPodWithTrackingFinalizer (a pod that became, or stopped being,
    terminated with the tracking finalizer)."""
    if was != is_:
        _child(TERMINATED_PODS_TRACKING_FINALIZER, ADD if is_ else DELETE).inc()


def finished_indexes(succeeded: int, failed: int, per_index: bool) -> None:
    """Upstream: recordJobPodFinished's JobFinishedIndexesTotal."""
    label = "perIndex" if per_index else "global"
    if succeeded:
        _child(JOB_FINISHED_INDEXES, SUCCEEDED, label).inc(succeeded)
    if failed > 0:
        _child(JOB_FINISHED_INDEXES, FAILED, label).inc(failed)


def pods_created(reason: str, succeeded: int, failed: int) -> None:
    """Upstream: recordJobPodsCreationTotal"""
    if succeeded > 0:
        _child(JOB_PODS_CREATION, reason, SUCCEEDED).inc(succeeded)
    if failed > 0:
        _child(JOB_PODS_CREATION, reason, FAILED).inc(failed)


def job_by_external_controller(controller_name: str) -> None:
    _child(JOBS_BY_EXTERNAL_CONTROLLER, controller_name).inc()
