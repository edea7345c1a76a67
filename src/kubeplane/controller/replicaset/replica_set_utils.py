"""ReplicaSet status: compute it from the claimed pods, write it with one retry, conditions.

Upstream: pkg/controller/replicaset/replica_set_utils.go
"""
from __future__ import annotations

import copy
import logging
from typing import Any, Sequence

from ...api import labels
from ...api.types import apps_v1, core_v1
from ...utils.clock import parse_rfc3339, rfc3339
from ..controller_utils import (
    FAILED_CREATE_POD_REASON, FAILED_DELETE_POD_REASON, get_pod_ready_condition, label_matcher,
)

log = logging.getLogger(__name__)

# The number of times we retry updating a ReplicaSet's status (after the first try).
STATUS_UPDATE_RETRIES = 1

REPLICA_SET_REPLICA_FAILURE = "ReplicaFailure"
CONDITION_TRUE = "True"


async def update_replica_set_status(c: Any, rs: apps_v1.ReplicaSet,
                                    new_status: apps_v1.ReplicaSetStatus) -> apps_v1.ReplicaSet:
    """Write new_status (with observedGeneration = rs.generation) unless nothing changed.

    c is the namespaced ReplicaSet client. On a failed PUT the RS is re-read once (GET) and the
    PUT retried; a failed GET is raised instead, being the more interesting error. rs may be
    the cache's object: it is not modified (a shallow copy carries the new status), and
    returned as it is when nothing changed. Upstream: updateReplicaSetStatus
    """
    if _status_unchanged(rs, new_status):
        return rs                             # the steady state: no write at all
    rs = copy.copy(rs)                        # only .status is replaced below
    # Save the generation we acted on, otherwise a retry might claim a spec it never saw.
    new_status.observed_generation = rs.metadata.generation
    i = 0
    while True:
        log.debug("Updating status for ReplicaSet", extra={"rs": f"{rs.metadata.namespace}/{rs.metadata.name}",
                                                            "replicas": new_status.replicas})
        rs.status = new_status
        try:
            return await c.update_status(rs)
        except Exception:
            if i >= STATUS_UPDATE_RETRIES:
                raise                          # the RS is requeued with rate limiting
        rs = await c.get(rs.metadata.name)     # latest resourceVersion for the retry
        i += 1


def _status_unchanged(rs: apps_v1.ReplicaSet, new: apps_v1.ReplicaSetStatus) -> bool:
    old = rs.status or apps_v1.ReplicaSetStatus()
    return ((old.replicas or 0) == (new.replicas or 0)
            and (old.fully_labeled_replicas or 0) == (new.fully_labeled_replicas or 0)
            and (old.ready_replicas or 0) == (new.ready_replicas or 0)
            and (old.available_replicas or 0) == (new.available_replicas or 0)
            and old.terminating_replicas == new.terminating_replicas
            and (rs.metadata.generation or 0) == (old.observed_generation or 0)
            and old.conditions == new.conditions)


def calculate_status(rs: apps_v1.ReplicaSet, active_pods: Sequence[core_v1.Pod],
                     terminating_pods: Sequence[core_v1.Pod] | None, manage_replicas_err: BaseException | None,
                     now: float) -> apps_v1.ReplicaSetStatus:
    """The status the RS should have given its claimed pods and the pod-management outcome.

    terminating_pods None means the DeploymentReplicaSetTerminatingReplicas feature is off
    (terminatingReplicas left unset). A failed create/delete adds a ReplicaFailure condition
    (FailedCreate when pods are missing, FailedDelete when there are too many) unless one
    exists; a successful pass removes it. Upstream: calculateStatus
    """
    template_labels = (rs.spec.template.metadata.labels if rs.spec.template and rs.spec.template.metadata else None)
    fully_labeled_match = template_labels_matcher(template_labels)
    min_ready = rs.spec.min_ready_seconds or 0
    fully_labeled = ready = available = 0
    for pod in active_pods:
        if fully_labeled_match(pod.metadata.labels):
            fully_labeled += 1
        # is_pod_ready + is_pod_available with one lookup of the Ready condition
        c = get_pod_ready_condition(pod)
        if c is not None and c.status == CONDITION_TRUE:
            ready += 1
            if not min_ready or _ready_for(c, min_ready, now):
                available += 1
    return status_from_counts(rs, len(active_pods), fully_labeled, ready, available,
                              None if terminating_pods is None else len(terminating_pods), manage_replicas_err, now)


def template_labels_matcher(template_labels: dict[str, str] | None) -> Any:
    """Whether a pod's labels include all of the template's: a fully labeled replica."""
    return label_matcher(tuple(labels.Requirement(k, "=", (v,)) for k, v in (template_labels or {}).items()))


def status_from_counts(rs: apps_v1.ReplicaSet, replicas: int, fully_labeled: int, ready: int, available: int,
                       terminating: int | None, manage_replicas_err: BaseException | None,
                       now: float) -> apps_v1.ReplicaSetStatus:
    """calculate_status's result from the counts of the claimed pods (the controller keeps them
    from sync to sync: claimed_pods.ClaimedPods)."""
    new_status = (rs.status or apps_v1.ReplicaSetStatus()).deep_copy()
    _update_failure_condition(rs, new_status, replicas, manage_replicas_err, now)
    new_status.replicas = replicas
    new_status.fully_labeled_replicas = fully_labeled
    new_status.ready_replicas = ready
    new_status.available_replicas = available
    new_status.terminating_replicas = terminating
    return new_status


def _ready_for(c: core_v1.PodCondition, min_ready: int, now: float) -> bool:
    """The second half of is_pod_available: Ready since strictly before now - min_ready."""
    return bool(c.last_transition_time) and parse_rfc3339(c.last_transition_time) + min_ready < now


def _update_failure_condition(rs: apps_v1.ReplicaSet, new_status: apps_v1.ReplicaSetStatus, n_active: int,
                              manage_replicas_err: BaseException | None, now: float) -> None:
    failure_cond = get_condition(rs.status, REPLICA_SET_REPLICA_FAILURE)
    if manage_replicas_err is not None and failure_cond is None:
        diff = n_active - (rs.spec.replicas or 0)
        reason = FAILED_CREATE_POD_REASON if diff < 0 else (FAILED_DELETE_POD_REASON if diff > 0 else "")
        cond = new_replica_set_condition(REPLICA_SET_REPLICA_FAILURE, CONDITION_TRUE, reason,
                                         str(manage_replicas_err), now)
        set_condition(new_status, cond)
    elif manage_replicas_err is None and failure_cond is not None:
        remove_condition(new_status, REPLICA_SET_REPLICA_FAILURE)


def new_replica_set_condition(cond_type: str, status: str, reason: str, msg: str,
                              now: float) -> apps_v1.ReplicaSetCondition:
    """Upstream: NewReplicaSetCondition (lastTransitionTime = now)."""
    return apps_v1.ReplicaSetCondition(type=cond_type, status=status, last_transition_time=rfc3339(now),
                                       reason=reason, message=msg)


def get_condition(status: apps_v1.ReplicaSetStatus | None, cond_type: str) -> apps_v1.ReplicaSetCondition | None:
    """Upstream: GetCondition"""
    for c in (status.conditions if status is not None else None) or ():
        if c.type == cond_type:
            return c
    return None


def set_condition(status: apps_v1.ReplicaSetStatus, condition: apps_v1.ReplicaSetCondition) -> None:
    """Add or replace condition; a same-status, same-reason one is left as it is. Upstream: SetCondition"""
    current = get_condition(status, condition.type)
    if current is not None and current.status == condition.status and current.reason == condition.reason:
        return
    status.conditions = (_filter_out_condition(status.conditions, condition.type) or []) + [condition]


def remove_condition(status: apps_v1.ReplicaSetStatus, cond_type: str) -> None:
    """Upstream: RemoveCondition"""
    status.conditions = _filter_out_condition(status.conditions, cond_type)


def _filter_out_condition(conditions: list[apps_v1.ReplicaSetCondition] | None,
                          cond_type: str) -> list[apps_v1.ReplicaSetCondition] | None:
    # None, not [], when nothing is left: Go's filterOutCondition returns a nil slice.
    kept = [c for c in conditions or () if c.type != cond_type]
    return kept or None
