"""What every strategy shares: finding/creating the new ReplicaSet, revisions, scaling
events (proportional scaling), history cleanup and the status calculation.

Deployments passed in are the sync's own deep copy (modified freely, as upstream does);
ReplicaSets are cache objects, copied before any change. As upstream, the Deployment
returned by a status write is discarded: a second write in the same sync carries the old
resourceVersion and fails with a Conflict, and the rate-limited retry finishes the job.

Upstream: pkg/controller/deployment/sync.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api import errors
from ...api.types import apps_v1, meta_v1
from .. import controller_utils as cu
from .rollback import get_rollback_to
from .util import deployment_util as du
from .util.hash import compute_hash
from .util.replicaset_util import (
    filter_active_replica_sets, filter_replica_sets, sort_by_size_newer, sort_by_size_older, spec_replicas,
)

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController

log = logging.getLogger(__name__)

Deployment = apps_v1.Deployment
ReplicaSet = apps_v1.ReplicaSet

# Limit the revision history to ~100 entries (~2000 chars). Upstream: maxRevHistoryLengthInChars
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000

SCALING_REPLICA_SET_REASON = "ScalingReplicaSet"


async def sync_status_only(dc: DeploymentController, d: Deployment, rs_list: list[ReplicaSet]) -> None:
    """Only update the status; take no other action. Upstream: syncStatusOnly"""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    all_rss = old_rss + [new_rs]
    await sync_deployment_status(dc, all_rss, new_rs, d)


async def sync(dc: DeploymentController, d: Deployment, rs_list: list[ReplicaSet]) -> None:
    """Reconcile a scaling event or a paused Deployment: scale, clean up history, write status.

    Upstream: sync
    """
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    # An error aborts the sync; the Deployment is requeued.
    await scale(dc, d, new_rs, old_rss)
    # Clean up when paused and no rollback is in flight.
    if d.spec.paused and get_rollback_to(d) is None:
        await cleanup_deployment(dc, old_rss, d)
    all_rss = old_rss + [new_rs]
    await sync_deployment_status(dc, all_rss, new_rs, d)


async def check_paused_conditions(dc: DeploymentController, d: Deployment) -> None:
    """Set Progressing=Unknown DeploymentPaused/DeploymentResumed when pausing/resuming.

    Without it a Deployment resumed after longer than progressDeadlineSeconds would time out
    at once. A timed-out Deployment keeps its ProgressDeadlineExceeded condition.
    Upstream: checkPausedConditions
    """
    if not du.has_progress_deadline(d):
        return
    cond = du.get_deployment_condition(d.status, du.DEPLOYMENT_PROGRESSING)
    if cond is not None and cond.reason == du.TIMED_OUT_REASON:
        return                          # do not overwrite reported lack of progress
    paused_cond_exists = cond is not None and cond.reason == du.PAUSED_DEPLOY_REASON
    if d.spec.paused and not paused_cond_exists:
        condition = du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_UNKNOWN,
                                                du.PAUSED_DEPLOY_REASON, "Deployment is paused", dc.now())
    elif not d.spec.paused and paused_cond_exists:
        condition = du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_UNKNOWN,
                                                du.RESUMED_DEPLOY_REASON, "Deployment is resumed", dc.now())
    else:
        return
    d.status = d.status or apps_v1.DeploymentStatus()
    du.set_deployment_condition(d.status, condition)
    await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)


async def get_all_replica_sets_and_sync_revision(
        dc: DeploymentController, d: Deployment, rs_list: list[ReplicaSet],
        create_if_not_existed: bool) -> tuple[ReplicaSet | None, list[ReplicaSet]]:
    """(new RS or None, all old RSs), with the new RS's and d's revision brought up to date.

    rs_list comes from get_replica_sets_for_deployment(d).
    1. Find the old RSs; their highest revision is maxOldV.
    2. Find the new RS (template equal to d's) and raise its revision to maxOldV + 1 if
       lower. If this step fails, the next sync retries it.
    3. Copy the new RS's revision onto d. If this fails, the next sync retries it.
    The caches may be stale, so the status computed from these RSs may be too.
    Upstream: getAllReplicaSetsAndSyncRevision
    """
    _, all_old_rss = du.find_old_replica_sets(d, rs_list)
    new_rs = await get_new_replica_set(dc, d, rs_list, all_old_rss, create_if_not_existed)
    return new_rs, all_old_rss


async def get_new_replica_set(dc: DeploymentController, d: Deployment, rs_list: list[ReplicaSet],
                              old_rss: list[ReplicaSet], create_if_not_existed: bool) -> ReplicaSet | None:
    """The RS matching d's template, its annotations synced; created if missing and asked to.

    1. An existing new RS gets d's annotations, revision maxOldRevision + 1 (if higher)
       and d's minReadySeconds; if any changed it is updated and returned at once (d's
       revision follows on the next sync). Otherwise d gets the RS's revision and, with a
       deadline but no Progressing condition yet, FoundNewReplicaSet.
    2. Without one (and create_if_not_existed) create it, named <d>-<pod-template-hash>.
    Upstream: getNewReplicaSet
    """
    existing_new_rs = du.find_new_replica_set(d, rs_list)
    new_revision = str(du.max_revision(old_rss) + 1)
    if existing_new_rs is not None:
        return await _sync_existing_new_replica_set(dc, d, existing_new_rs, new_revision)
    if not create_if_not_existed:
        return None
    return await _create_new_replica_set(dc, d, old_rss, new_revision)


async def _sync_existing_new_replica_set(dc: DeploymentController, d: Deployment, existing_new_rs: ReplicaSet,
                                         new_revision: str) -> ReplicaSet:
    rs_copy = existing_new_rs.deep_copy()
    annotations_updated = du.set_new_replica_set_annotations(d, rs_copy, new_revision, True,
                                                             MAX_REV_HISTORY_LENGTH_IN_CHARS)
    min_ready_seconds_needs_update = (rs_copy.spec.min_ready_seconds or 0) != (d.spec.min_ready_seconds or 0)
    if annotations_updated or min_ready_seconds_needs_update:
        rs_copy.spec.min_ready_seconds = d.spec.min_ready_seconds
        return await dc.client.apps_v1().replicasets(rs_copy.metadata.namespace).update(rs_copy)
    # The RS's own revision annotation is the reliable one: it was set first.
    needs_update = du.set_deployment_revision(d, du.annotations_of(rs_copy).get(du.REVISION_ANNOTATION, ""))
    # Older Deployments may have no Progressing condition yet: start the clock at the first
    # sight of their new RS.
    cond = du.get_deployment_condition(d.status, du.DEPLOYMENT_PROGRESSING)
    if du.has_progress_deadline(d) and cond is None:
        msg = f"Found new replica set {errors.go_quote(rs_copy.metadata.name)}"
        _set_condition(d, du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_TRUE,
                                                      du.FOUND_NEW_RS_REASON, msg, dc.now()))
        needs_update = True
    if needs_update:
        await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)
    return rs_copy


def _set_condition(d: Deployment, condition: apps_v1.DeploymentCondition) -> None:
    d.status = d.status or apps_v1.DeploymentStatus()
    du.set_deployment_condition(d.status, condition)


def new_replica_set_object(d: Deployment, collision_count: int | None) -> ReplicaSet:
    """The new RS for d before sizing: template and selector get the pod-template-hash label,
    the name is <d>-<hash> (deterministic, so creation is idempotent), d is the controller."""
    template = d.spec.template.deep_copy()
    pod_template_spec_hash = compute_hash(template, collision_count)
    template.metadata = template.metadata or meta_v1.ObjectMeta()
    template.metadata.labels = {**(template.metadata.labels or {}),
                                du.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: pod_template_spec_hash}
    sel = d.spec.selector or meta_v1.LabelSelector()
    selector = meta_v1.LabelSelector(
        match_labels={**(sel.match_labels or {}), du.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: pod_template_spec_hash},
        match_expressions=[e.deep_copy() for e in sel.match_expressions] if sel.match_expressions is not None
        else None)
    return ReplicaSet(
        metadata=meta_v1.ObjectMeta(name=f"{d.metadata.name}-{pod_template_spec_hash}", namespace=d.metadata.namespace,
                                    owner_references=[cu.new_controller_ref(d, _controller_kind())],
                                    labels=template.metadata.labels),
        spec=apps_v1.ReplicaSetSpec(replicas=0, min_ready_seconds=d.spec.min_ready_seconds, selector=selector,
                                    template=template))


def _controller_kind() -> cu.GroupVersionKind:
    from .deployment_controller import CONTROLLER_KIND
    return CONTROLLER_KIND


async def _create_new_replica_set(dc: DeploymentController, d: Deployment, old_rss: list[ReplicaSet],
                                  new_revision: str) -> ReplicaSet:
    collision_count = d.status.collision_count if d.status is not None else None
    new_rs = new_replica_set_object(d, collision_count)
    new_replicas_count = du.new_rs_new_replicas(d, old_rss + [new_rs], new_rs)
    new_rs.spec.replicas = new_replicas_count
    du.set_new_replica_set_annotations(d, new_rs, new_revision, False, MAX_REV_HISTORY_LENGTH_IN_CHARS)
    # Create it. AlreadyExists means a slow cache or a hash collision; other errors are
    # reported in the Deployment's status.
    already_exists = False
    try:
        created_rs = await dc.client.apps_v1().replicasets(d.metadata.namespace).create(new_rs)
    except errors.AlreadyExists as err:
        already_exists = True
        created_rs = await _handle_already_exists(dc, d, new_rs, err)
    except Exception as err:
        await _report_create_error(dc, d, new_rs, err)
        raise
    if not already_exists and new_replicas_count > 0:
        dc.event_recorder.eventf(d, cu.EVENT_TYPE_NORMAL, SCALING_REPLICA_SET_REASON, "Scaled up replica set %s to %d",
                                 created_rs.metadata.name, new_replicas_count)
    needs_update = du.set_deployment_revision(d, new_revision)
    if not already_exists and du.has_progress_deadline(d):
        msg = f"Created new replica set {errors.go_quote(created_rs.metadata.name)}"
        _set_condition(d, du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_TRUE,
                                                      du.NEW_REPLICA_SET_REASON, msg, dc.now()))
        needs_update = True
    if needs_update:
        await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)
    return created_rs


async def _handle_already_exists(dc: DeploymentController, d: Deployment, new_rs: ReplicaSet,
                                 err: errors.AlreadyExists) -> ReplicaSet:
    """Our own RS (slow cache, fast resync): use it. Anyone else's, or another template: a hash
    collision, so bump status.collisionCount (nil -> 1) and fail; the retry hashes anew."""
    rs = dc.rs_lister.replicasets(new_rs.metadata.namespace).get(new_rs.metadata.name)   # NotFound raises
    controller_ref = cu.get_controller_of(rs)
    if controller_ref is not None and controller_ref.uid == d.metadata.uid and \
            du.equal_ignore_hash(d.spec.template, rs.spec.template):
        return rs
    d.status = d.status or apps_v1.DeploymentStatus()
    pre_collision_count = d.status.collision_count or 0
    d.status.collision_count = pre_collision_count + 1
    try:
        await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)
    except errors.StatusError:
        pass                                 # the returned AlreadyExists requeues us anyway
    else:
        log.info("Found a hash collision for deployment - bumping collisionCount to resolve it",
                 extra={"deployment": d.metadata.name, "oldCollisionCount": pre_collision_count,
                        "newCollisionCount": d.status.collision_count})
    raise err


async def _report_create_error(dc: DeploymentController, d: Deployment, new_rs: ReplicaSet, err: Exception) -> None:
    if cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
        return                               # every later create fails too: nothing to report
    msg = f"Failed to create new replica set {errors.go_quote(new_rs.metadata.name)}: {err}"
    if du.has_progress_deadline(d):
        _set_condition(d, du.new_deployment_condition(du.DEPLOYMENT_PROGRESSING, du.CONDITION_FALSE,
                                                      du.FAILED_RS_CREATE_REASON, msg, dc.now()))
        try:
            # The create error is the bigger issue; this write's error does not matter (#18568).
            await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)
        except errors.StatusError:
            pass
    dc.event_recorder.eventf(d, cu.EVENT_TYPE_WARNING, du.FAILED_RS_CREATE_REASON, msg)


async def scale(dc: DeploymentController, deployment: Deployment, new_rs: ReplicaSet | None,
                old_rss: list[ReplicaSet]) -> None:
    """Scale the RSs for a scaling event, proportionally while a rollout is in flight.

    Scaling only the new RS up (or only old ones down) would hasten the rollout and expose
    more replicas to a possibly broken template, so each active RS gets its share instead.
    1. At most one active RS: scale it (or, with none active, the newest) to replicas.
    2. New RS saturated: scale all old ones to 0.
    3. RollingUpdate: spread replicas + maxSurge - Σ active sizes over the active RSs by
       their proportions (util.get_proportion), largest first; the leftover goes to the
       first RS in that order. Example (TestScale "7 -> 10"): RSs 2 (new), 3, 2 annotated
       for 7; 3 to add; 3*10/7 = 4.3 -> +1, 2*10/7 = 2.9 -> +1 (newer first), the other
       2 -> +1: result 3, 4, 3.
    Upstream: scale
    """
    replicas = du.spec_replicas_of(deployment)
    active_or_latest = du.find_active_or_latest(new_rs, old_rss)
    if active_or_latest is not None:
        if spec_replicas(active_or_latest) == replicas:
            return
        await scale_replica_set_and_record_event(dc, active_or_latest, replicas, deployment)
        return
    # A saturated new RS means old ones must go; this covers adoption during saturation.
    if du.is_saturated(deployment, new_rs):
        for old in filter_active_replica_sets(old_rss):
            await scale_replica_set_and_record_event(dc, old, 0, deployment)
        return
    if du.is_rolling_update(deployment):
        await _scale_proportionally(dc, deployment, new_rs, old_rss)


async def _scale_proportionally(dc: DeploymentController, deployment: Deployment, new_rs: ReplicaSet | None,
                                old_rss: list[ReplicaSet]) -> None:
    all_rss = filter_active_replica_sets(old_rss + [new_rs])
    all_rss_replicas = du.get_replica_count_for_replica_sets(all_rss)
    replicas = du.spec_replicas_of(deployment)
    allowed_size = replicas + du.max_surge(deployment) if replicas > 0 else 0
    # Replicas to add (or, negative, remove) across the active RSs.
    deployment_replicas_to_add = allowed_size - all_rss_replicas
    # Larger RSs first; on equal sizes newer ones grow first and older ones shrink first.
    scaling_operation = ""
    if deployment_replicas_to_add > 0:
        all_rss, scaling_operation = sort_by_size_newer(all_rss), "up"
    elif deployment_replicas_to_add < 0:
        all_rss, scaling_operation = sort_by_size_older(all_rss), "down"
    # |added| never exceeds |to_add|.
    deployment_replicas_added = 0
    name_to_size: dict[str, int] = {}
    for rs in all_rss:
        if deployment_replicas_to_add != 0:
            proportion = du.get_proportion(rs, deployment, deployment_replicas_to_add, deployment_replicas_added)
            name_to_size[rs.metadata.name] = spec_replicas(rs) + proportion
            deployment_replicas_added += proportion
        else:
            name_to_size[rs.metadata.name] = spec_replicas(rs)
    for i, rs in enumerate(all_rss):
        if i == 0 and deployment_replicas_to_add != 0:
            # Leftovers go to the largest RS.
            leftover = deployment_replicas_to_add - deployment_replicas_added
            name_to_size[rs.metadata.name] = max(name_to_size[rs.metadata.name] + leftover, 0)
        # Stop at the first failure; the Deployment is requeued.
        await scale_replica_set(dc, rs, name_to_size[rs.metadata.name], deployment, scaling_operation)


async def scale_replica_set_and_record_event(dc: DeploymentController, rs: ReplicaSet, new_scale: int,
                                             deployment: Deployment) -> tuple[bool, ReplicaSet]:
    """Scale rs to new_scale unless it already has that size. Upstream: scaleReplicaSetAndRecordEvent"""
    if spec_replicas(rs) == new_scale:
        return False, rs
    scaling_operation = "up" if spec_replicas(rs) < new_scale else "down"
    return await scale_replica_set(dc, rs, new_scale, deployment, scaling_operation)


async def scale_replica_set(dc: DeploymentController, rs: ReplicaSet, new_scale: int, deployment: Deployment,
                            scaling_operation: str) -> tuple[bool, ReplicaSet]:
    """Write rs's size and desired/max-replicas annotations if either is off; (scaled, rs).

    An event is recorded only when the size changed. Raises the update's error.
    Upstream: scaleReplicaSet
    """
    replicas = du.spec_replicas_of(deployment)
    max_replicas = replicas + du.max_surge(deployment)
    size_needs_update = spec_replicas(rs) != new_scale
    annotations_need_update = du.replicas_annotations_need_update(rs, replicas, max_replicas)
    if not (size_needs_update or annotations_need_update):
        return False, rs
    old_scale = spec_replicas(rs)
    rs_copy = rs.deep_copy()
    rs_copy.spec.replicas = new_scale
    du.set_replicas_annotations(rs_copy, replicas, max_replicas)
    rs = await dc.client.apps_v1().replicasets(rs_copy.metadata.namespace).update(rs_copy)
    if size_needs_update:
        dc.event_recorder.eventf(deployment, cu.EVENT_TYPE_NORMAL, SCALING_REPLICA_SET_REASON,
                                 "Scaled %s replica set %s to %d from %d", scaling_operation, rs.metadata.name,
                                 new_scale, old_scale)
    return size_needs_update, rs


async def cleanup_deployment(dc: DeploymentController, old_rss: list[ReplicaSet], deployment: Deployment) -> None:
    """Delete the oldest old RSs beyond revisionHistoryLimit.

    Old RSs are kept for history and for rollback. Candidates are old RSs not being deleted,
    lowest revision first; the first `count - limit` are deleted unless they still have
    replicas (spec or status) or a generation their controller has not observed — those
    are skipped and still count against the budget. Example: limit 1, three empty old RSs
    -> the two lowest revisions go. The first delete error (but NotFound) stops the loop,
    so as not to overload the API server. Upstream: cleanupDeployment
    """
    if not du.has_revision_history_limit(deployment):
        return
    cleanable_rss = filter_replica_sets(old_rss, lambda rs: rs is not None and rs.metadata.deletion_timestamp is None)
    diff = len(cleanable_rss) - (deployment.spec.revision_history_limit or 0)
    if diff <= 0:
        return
    cleanable_rss = du.sort_by_revision(cleanable_rss)
    log.debug("Looking to cleanup old replica sets for deployment", extra={"deployment": deployment.metadata.name})
    for rs in cleanable_rss[:diff]:
        st = rs.status or apps_v1.ReplicaSetStatus()
        if (st.replicas or 0) != 0 or spec_replicas(rs) != 0 or \
                (rs.metadata.generation or 0) > (st.observed_generation or 0) or rs.metadata.deletion_timestamp:
            continue                         # never delete an RS with (possibly) running pods
        log.debug("Trying to cleanup replica set for deployment", extra={"rs": rs.metadata.name})
        try:
            await dc.client.apps_v1().replicasets(rs.metadata.namespace).delete(rs.metadata.name)
        except errors.NotFound:
            pass


async def sync_deployment_status(dc: DeploymentController, all_rss: list[ReplicaSet | None],
                                 new_rs: ReplicaSet | None, d: Deployment) -> None:
    """Write the calculated status if it differs from the stored one. Upstream: syncDeploymentStatus"""
    new_status = calculate_status(all_rss, new_rs, d, dc.now(), dc.options.status_terminating_replicas)
    if (d.status or apps_v1.DeploymentStatus()) == new_status:
        return
    d.status = new_status
    await dc.client.apps_v1().deployments(d.metadata.namespace).update_status(d)


def _omit_zero(v: int) -> int | None:
    """Deployment status counts are omitempty in Go: 0 is not sent."""
    return v or None


def calculate_status(all_rss: list[ReplicaSet | None], new_rs: ReplicaSet | None, deployment: Deployment,
                     now: float, with_terminating_replicas: bool = True) -> apps_v1.DeploymentStatus:
    """The status the RSs imply, keeping d's conditions and setting Available.

    replicas, readyReplicas, availableReplicas: Σ over all RSs' status; updatedReplicas: the
    new RS's status.replicas; unavailableReplicas: Σ spec.replicas - available (floor 0, so
    pods not created yet count). Available=True iff available >= replicas - maxUnavailable
    (example: 10 replicas, 25% -> needs 8).
    Upstream: calculateStatus
    """
    available_replicas = du.get_available_replica_count_for_replica_sets(all_rss)
    total_replicas = du.get_replica_count_for_replica_sets(all_rss)
    # Negative while scaling down (more available than desired): report 0.
    unavailable_replicas = max(total_replicas - available_replicas, 0)
    old = deployment.status or apps_v1.DeploymentStatus()
    status = apps_v1.DeploymentStatus(
        observed_generation=deployment.metadata.generation or None,
        replicas=_omit_zero(du.get_actual_replica_count_for_replica_sets(all_rss)),
        updated_replicas=_omit_zero(du.get_actual_replica_count_for_replica_sets([new_rs])),
        ready_replicas=_omit_zero(du.get_ready_replica_count_for_replica_sets(all_rss)),
        available_replicas=_omit_zero(available_replicas),
        unavailable_replicas=_omit_zero(unavailable_replicas),
        collision_count=old.collision_count,
        # Copied list, shared conditions: conditions are only ever replaced, never edited.
        conditions=list(old.conditions) if old.conditions else None)
    if with_terminating_replicas:
        status.terminating_replicas = du.get_terminating_replica_count_for_replica_sets(all_rss)
    if available_replicas >= du.spec_replicas_of(deployment) - du.max_unavailable(deployment):
        cond = du.new_deployment_condition(du.DEPLOYMENT_AVAILABLE, du.CONDITION_TRUE, du.MINIMUM_REPLICAS_AVAILABLE,
                                           "Deployment has minimum availability.", now)
    else:
        cond = du.new_deployment_condition(du.DEPLOYMENT_AVAILABLE, du.CONDITION_FALSE,
                                           du.MINIMUM_REPLICAS_UNAVAILABLE,
                                           "Deployment does not have minimum availability.", now)
    du.set_deployment_condition(status, cond)
    return status


async def is_scaling_event(dc: DeploymentController, d: Deployment, rs_list: list[ReplicaSet]) -> bool:
    """Whether an active RS's desired-replicas annotation differs from spec.replicas.

    rs_list comes from get_replica_sets_for_deployment(d). Upstream: isScalingEvent
    """
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    for rs in filter_active_replica_sets(old_rss + [new_rs]):
        desired, ok = du.get_desired_replicas_annotation(rs)
        if ok and desired != du.spec_replicas_of(d):
            return True
    return False
