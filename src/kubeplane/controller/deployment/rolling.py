"""The RollingUpdate strategy: grow the new ReplicaSet within maxSurge, shrink old ones
within maxUnavailable, one step per sync.

Upstream: pkg/controller/deployment/rolling.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api.types import apps_v1
from . import progress, sync
from .util import deployment_util as du
from .util.replicaset_util import filter_active_replica_sets, sort_by_creation_timestamp, spec_replicas

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController

log = logging.getLogger(__name__)

ReplicaSet = apps_v1.ReplicaSet


async def rollout_rolling(dc: DeploymentController, d: apps_v1.Deployment, rs_list: list[ReplicaSet]) -> None:
    """One step of a rolling update: scale up, else scale down, else clean up; then status.

    Upstream: rolloutRolling
    """
    new_rs, old_rss = await sync.get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
    assert new_rs is not None                 # created if missing
    all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
    if await reconcile_new_replica_set(dc, all_rss, new_rs, d):
        return await progress.sync_rollout_status(dc, all_rss, new_rs, d)
    if await reconcile_old_replica_sets(dc, all_rss, filter_active_replica_sets(old_rss), new_rs, d):
        return await progress.sync_rollout_status(dc, all_rss, new_rs, d)
    if du.deployment_complete(d, d.status):
        await sync.cleanup_deployment(dc, old_rss, d)
    await progress.sync_rollout_status(dc, all_rss, new_rs, d)


async def reconcile_new_replica_set(dc: DeploymentController, all_rss: list[ReplicaSet | None], new_rs: ReplicaSet,
                                    deployment: apps_v1.Deployment) -> bool:
    """Scale the new RS down to replicas if above, else up as far as maxSurge allows.

    Example: 10 replicas, maxSurge 2, old RS 5, new RS 0 -> 0 + min(12 - 5, 10) = 7.
    Upstream: reconcileNewReplicaSet
    """
    replicas = du.spec_replicas_of(deployment)
    if spec_replicas(new_rs) == replicas:
        return False                          # scaling not required
    if spec_replicas(new_rs) > replicas:
        scaled, _ = await sync.scale_replica_set_and_record_event(dc, new_rs, replicas, deployment)
        return scaled
    new_replicas_count = du.new_rs_new_replicas(deployment, all_rss, new_rs)
    scaled, _ = await sync.scale_replica_set_and_record_event(dc, new_rs, new_replicas_count, deployment)
    return scaled


def max_scaled_down(all_pods_count: int, min_available: int, new_rs_unavailable_pod_count: int) -> int:
    """How many old replicas may go now: allPods - minAvailable - newRSUnavailable.

    Unavailable new pods count against the budget, so a crash-looping new RS cannot eat
    into old, healthy capacity. Concrete example (upstream's): 10 replicas, maxUnavailable 2,
    maxSurge 3.
    Case 1: new RS created with 3, old scaled to 8, new to 5; new pods crash-loop. 13 - 8 - 5
    = 0: even if a node failure makes an old pod unavailable, no old RS is scaled down.
    After `kubectl rollout undo` the new RS is the good one with 1 unavailable pod:
    13 - 8 - 1 = 4, so 4 crash-looping pods go, 9 remain, and the new RS grows to 10.
    Case 2: a new template is pushed instead (roll over): the newest RS starts at 0 because
    13 pods exist, its unavailable count is 0, so the two old RSs may lose 13 - 8 - 0 = 5,
    after which the newest grows by 5.
    """
    return all_pods_count - min_available - new_rs_unavailable_pod_count


async def reconcile_old_replica_sets(dc: DeploymentController, all_rss: list[ReplicaSet | None],
                                     old_rss: list[ReplicaSet], new_rs: ReplicaSet,
                                     deployment: apps_v1.Deployment) -> bool:
    """Scale old RSs down where that does not cost availability: first their unhealthy
    replicas, then healthy ones beyond minAvailable. Errors are logged and swallowed, as
    upstream (the step reports "nothing scaled"). Upstream: reconcileOldReplicaSets
    """
    old_pods_count = du.get_replica_count_for_replica_sets(old_rss)
    if old_pods_count == 0:
        return False                          # cannot scale down further
    all_pods_count = du.get_replica_count_for_replica_sets(all_rss)
    min_available = du.spec_replicas_of(deployment) - du.max_unavailable(deployment)
    new_rs_unavailable_pod_count = spec_replicas(new_rs) - ((new_rs.status.available_replicas or 0)
                                                            if new_rs.status is not None else 0)
    budget = max_scaled_down(all_pods_count, min_available, new_rs_unavailable_pod_count)
    if budget <= 0:
        return False
    # Unhealthy replicas first: they would block the rollout until it times out (#16737).
    try:
        old_rss, cleanup_count = await cleanup_unhealthy_replicas(dc, old_rss, deployment, budget)
    except Exception as err:
        log.info("cleaning up unhealthy replicas failed", extra={"deployment": deployment.metadata.name,
                                                                 "err": repr(err)})
        return False
    log.debug("Cleaned up unhealthy replicas from old RSes", extra={"count": cleanup_count})
    all_rss = [*old_rss, new_rs]
    try:
        scaled_down_count = await scale_down_old_replica_sets_for_rolling_update(dc, all_rss, old_rss, deployment)
    except Exception as err:
        log.info("scaling down old replica sets failed", extra={"deployment": deployment.metadata.name,
                                                                "err": repr(err)})
        return False
    log.debug("Scaled down old RSes", extra={"deployment": deployment.metadata.name, "count": scaled_down_count})
    return cleanup_count + scaled_down_count > 0


async def cleanup_unhealthy_replicas(dc: DeploymentController, old_rss: list[ReplicaSet],
                                     deployment: apps_v1.Deployment,
                                     max_cleanup_count: int) -> tuple[list[ReplicaSet], int]:
    """Scale old RSs (oldest first) down by their unavailable replicas, at most max_cleanup_count.

    The RS controller deletes not-ready, unscheduled and pending pods first, so this does
    not reduce availability. Example: old RS 10 with 8 available, budget 1 -> 9.
    Returns the old RSs (scaled ones replaced by the API's answer) and the count.
    Upstream: cleanupUnhealthyReplicas
    """
    old_rss = sort_by_creation_timestamp(old_rss)
    total_scaled_down = 0
    for i, target_rs in enumerate(old_rss):
        if total_scaled_down >= max_cleanup_count:
            break
        replicas = spec_replicas(target_rs)
        if replicas == 0:
            continue                          # cannot scale down this replica set
        available = (target_rs.status.available_replicas or 0) if target_rs.status is not None else 0
        if replicas == available:
            continue                          # no unhealthy replicas
        scaled_down_count = min(max_cleanup_count - total_scaled_down, replicas - available)
        new_replicas_count = replicas - scaled_down_count
        if new_replicas_count > replicas:
            raise ValueError(f"when cleaning up unhealthy replicas, got invalid request to scale down "
                             f"{target_rs.metadata.namespace}/{target_rs.metadata.name} {replicas} -> "
                             f"{new_replicas_count}")
        _, updated_old_rs = await sync.scale_replica_set_and_record_event(dc, target_rs, new_replicas_count, deployment)
        total_scaled_down += scaled_down_count
        old_rss[i] = updated_old_rs
    return old_rss, total_scaled_down


async def scale_down_old_replica_sets_for_rolling_update(dc: DeploymentController, all_rss: list[ReplicaSet | None],
                                                         old_rss: list[ReplicaSet],
                                                         deployment: apps_v1.Deployment) -> int:
    """Scale old RSs (oldest first) down by the available pods beyond minAvailable.

    Example: 10 replicas, maxUnavailable 2 -> minAvailable 8; 10 available -> 2 go from the
    oldest RS; 8 available -> none. Upstream: scaleDownOldReplicaSetsForRollingUpdate
    """
    min_available = du.spec_replicas_of(deployment) - du.max_unavailable(deployment)
    available_pod_count = du.get_available_replica_count_for_replica_sets(all_rss)
    if available_pod_count <= min_available:
        return 0                              # cannot scale down
    log.debug("Found available pods in deployment, scaling down old RSes",
              extra={"deployment": deployment.metadata.name, "availableReplicas": available_pod_count})
    total_scaled_down = 0
    total_scale_down_count = available_pod_count - min_available
    for target_rs in sort_by_creation_timestamp(old_rss):
        if total_scaled_down >= total_scale_down_count:
            break                             # no further scaling required
        replicas = spec_replicas(target_rs)
        if replicas == 0:
            continue
        scale_down_count = min(replicas, total_scale_down_count - total_scaled_down)
        new_replicas_count = replicas - scale_down_count
        if new_replicas_count > replicas:
            raise ValueError(f"when scaling down old RS, got invalid request to scale down "
                             f"{target_rs.metadata.namespace}/{target_rs.metadata.name} {replicas} -> "
                             f"{new_replicas_count}")
        await sync.scale_replica_set_and_record_event(dc, target_rs, new_replicas_count, deployment)
        total_scaled_down += scale_down_count
    return total_scaled_down
