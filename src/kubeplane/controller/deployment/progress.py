"""The Progressing and ReplicaFailure conditions of a rollout, and the deadline requeue.

Upstream: pkg/controller/deployment/progress.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api import errors
from ...api.types import apps_v1
from ...utils.clock import parse_rfc3339
from .sync import calculate_status
from .util import deployment_util as du

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController

log = logging.getLogger(__name__)


async def sync_rollout_status(dc: DeploymentController, all_rss: list[apps_v1.ReplicaSet | None],
                              new_rs: apps_v1.ReplicaSet | None, d: apps_v1.Deployment) -> None:
    """Write the status of a Deployment during a rollout, with its Progressing condition.

    With a deadline, and unless the rollout already completed (all pods updated and the
    condition NewReplicaSetAvailable — e.g. a resync after a scale), the first that holds:
    1. complete -> True NewReplicaSetAvailable;
    2. progress since the stored status -> True ReplicaSetUpdated with a fresh lastUpdateTime;
    3. no progress for longer than the deadline -> False ProgressDeadlineExceeded.
    Without a deadline the Progressing condition is removed. ReplicaFailure mirrors the
    RSs'. Nothing new -> no write, but a requeue for the deadline check.
    Upstream: syncRolloutStatus
    """
    new_status = calculate_status(all_rss, new_rs, d, dc.now(), dc.options.status_terminating_replicas)
    if not du.has_progress_deadline(d):
        du.remove_deployment_condition(new_status, du.DEPLOYMENT_PROGRESSING)
    current_cond = du.get_deployment_condition(d.status, du.DEPLOYMENT_PROGRESSING)
    is_complete_deployment = (new_status.replicas or 0) == (new_status.updated_replicas or 0) and \
        current_cond is not None and current_cond.reason == du.NEW_RS_AVAILABLE_REASON
    if du.has_progress_deadline(d) and not is_complete_deployment:
        _set_progressing_condition(dc, d, new_rs, new_status, current_cond)
    replica_failure_cond = get_replica_failures(all_rss, new_rs)
    if replica_failure_cond:
        # There is only one ReplicaFailure condition per replica set.
        du.set_deployment_condition(new_status, replica_failure_cond[0])
    else:
        du.remove_deployment_condition(new_status, du.DEPLOYMENT_REPLICA_FAILURE)
    if (d.status or apps_v1.DeploymentStatus()) == new_status:
        requeue_stuck_deployment(dc, d, new_status)
        return
    d.status = new_status
    await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)


def _subject(d: apps_v1.Deployment, new_rs: apps_v1.ReplicaSet | None) -> str:
    """'ReplicaSet "x"' or, without a new RS, 'Deployment "d"' for the condition messages."""
    if new_rs is not None:
        return f"ReplicaSet {errors.go_quote(new_rs.metadata.name)}"
    return f"Deployment {errors.go_quote(d.metadata.name)}"


def _set_progressing_condition(dc: DeploymentController, d: apps_v1.Deployment, new_rs: apps_v1.ReplicaSet | None,
                               new_status: apps_v1.DeploymentStatus,
                               current_cond: apps_v1.DeploymentCondition | None) -> None:
    now = dc.now()
    if du.deployment_complete(d, new_status):
        # If the condition already says so, this is a no-op (times kept).
        condition = du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_TRUE, du.NEW_RS_AVAILABLE_REASON,
                                                f"{_subject(d, new_rs)} has successfully progressed.", now)
        du.set_deployment_condition(new_status, condition)
    elif du.deployment_progressing(d, new_status):
        # Progress: unlike set_deployment_condition's same-reason no-op, lastUpdateTime must
        # move on every sign of progress (lastTransitionTime is kept while it stays True).
        condition = du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_TRUE,
                                                du.REPLICA_SET_UPDATED_REASON,
                                                f"{_subject(d, new_rs)} is progressing.", now)
        if current_cond is not None:
            if current_cond.status == du.CONDITION_TRUE:
                condition.last_transition_time = current_cond.last_transition_time
            du.remove_deployment_condition(new_status, du.DEPLOYMENT_PROGRESSING)
        du.set_deployment_condition(new_status, condition)
    elif du.deployment_timed_out(d, new_status, now):
        # If the condition already says so, this is a no-op.
        condition = du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_FALSE, du.TIMED_OUT_REASON,
                                                f"{_subject(d, new_rs)} has timed out progressing.", now)
        du.set_deployment_condition(new_status, condition)


def get_replica_failures(all_rss: list[apps_v1.ReplicaSet | None],
                         new_rs: apps_v1.ReplicaSet | None) -> list[apps_v1.DeploymentCondition]:
    """The ReplicaFailure conditions as Deployment conditions; the new RS's take precedence.

    Upstream: getReplicaFailures
    """
    conditions = [du.replica_set_to_deployment_condition(c)
                  for c in _rs_conditions(new_rs) if c.type == du.REPLICA_SET_REPLICA_FAILURE]
    if conditions:
        return conditions
    for rs in all_rss:
        conditions += [du.replica_set_to_deployment_condition(c)
                       for c in _rs_conditions(rs) if c.type == du.REPLICA_SET_REPLICA_FAILURE]
    return conditions


def _rs_conditions(rs: apps_v1.ReplicaSet | None) -> list[apps_v1.ReplicaSetCondition]:
    if rs is None or rs.status is None:
        return []
    return rs.status.conditions or []


def requeue_stuck_deployment(dc: DeploymentController, d: apps_v1.Deployment,
                             new_status: apps_v1.DeploymentStatus) -> float:
    """Requeue d for a progress check when its deadline would pass; seconds until then, 0
    for now, -1 for no requeue.

    Without this, a stuck rollout would only time out at the next resync (#34458). The
    check is due at lastUpdateTime + progressDeadlineSeconds:
        lastUpdated 00:00:00, now 00:03:00, deadline 600 s -> 00:10:00 - 00:03:00 = 7:00.
    Under a second left: requeue now, rate-limited, so the Deployment reaches Complete or
    TimedOut soon. Otherwise one extra second absorbs the skew of add_after (#39785).
    No requeue without a deadline or a Progressing condition, or when complete or timed out.
    Upstream: requeueStuckDeployment
    """
    current_cond = du.get_deployment_condition(d.status, du.DEPLOYMENT_PROGRESSING)
    if not du.has_progress_deadline(d) or current_cond is None:
        return -1
    if du.deployment_complete(d, new_status) or current_cond.reason == du.TIMED_OUT_REASON:
        return -1
    last_update = parse_rfc3339(current_cond.last_update_time) if current_cond.last_update_time else 0.0
    after = last_update + (d.spec.progress_deadline_seconds or 0) - dc.now()
    if after < 1:
        log.debug("Queueing up deployment for a progress check now", extra={"deployment": d.metadata.name})
        dc.enqueue_rate_limited(d)
        return 0
    log.debug("Queueing up deployment for a progress check", extra={"deployment": d.metadata.name,
                                                                     "queueAfter": int(after)})
    dc.enqueue_after(d, after + 1)
    return after
