"""The Recreate strategy: all old pods go before any new pod is created.

Upstream: pkg/controller/deployment/recreate.go (the alpha PodReplacementPolicy branch is
not implemented: the field is not in our apps/v1 schema, and the gate is off by default).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...api.types import apps_v1
from .. import controller_utils as cu
from . import progress, sync
from .util import deployment_util as du
from .util.replicaset_util import filter_active_replica_sets, spec_replicas

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController, PodMap

ReplicaSet = apps_v1.ReplicaSet


async def rollout_recreate(dc: DeploymentController, d: apps_v1.Deployment, rs_list: list[ReplicaSet],
                           pod_map: PodMap) -> None:
    """One step of a Recreate rollout: scale old RSs to 0; once no old pod runs, create and
    scale up the new RS; clean up; write status. Upstream: rolloutRecreate
    """
    # Do not create the new RS yet, so nothing scales up before everything old is down.
    new_rs, old_rss = await sync.get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
    active_old_rss = filter_active_replica_sets(old_rss)
    if await scale_down_old_replica_sets_for_recreate(dc, active_old_rss, d):
        return await progress.sync_rollout_status(dc, all_rss, new_rs, d)
    if old_pods_running(new_rs, old_rss, pod_map):
        # A pod deletion event (delete_pod) brings us back once the last one is gone.
        return await progress.sync_rollout_status(dc, all_rss, new_rs, d)
    if new_rs is None:
        new_rs, old_rss = await sync.get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
        all_rss = [*old_rss, new_rs]
    assert new_rs is not None
    await scale_up_new_replica_set_for_recreate(dc, new_rs, d)
    if du.deployment_complete(d, d.status):
        await sync.cleanup_deployment(dc, old_rss, d)
    await progress.sync_rollout_status(dc, all_rss, new_rs, d)


async def scale_down_old_replica_sets_for_recreate(dc: DeploymentController, old_rss: list[ReplicaSet],
                                                   deployment: apps_v1.Deployment) -> bool:
    """Scale every old RS to 0; whether any was scaled (old_rss entries are replaced by the
    API's answers). Upstream: scaleDownOldReplicaSetsForRecreate
    """
    scaled = False
    for i, rs in enumerate(old_rss):
        if spec_replicas(rs) == 0:
            continue
        scaled_rs, updated_rs = await sync.scale_replica_set_and_record_event(dc, rs, 0, deployment)
        if scaled_rs:
            old_rss[i] = updated_rs
            scaled = True
    return scaled


def old_pods_running(new_rs: ReplicaSet | None, old_rss: list[ReplicaSet], pod_map: PodMap) -> bool:
    """Whether an old RS reports pods, or a pod of an RS other than the new one is not
    Succeeded/Failed (terminating pods count; Unknown counts: it may still run).

    Upstream: oldPodsRunning
    """
    if du.get_actual_replica_count_for_replica_sets(old_rss) > 0:
        return True
    new_uid = new_rs.metadata.uid if new_rs is not None else None
    for rs_uid, pods in pod_map.items():
        if rs_uid == new_uid:
            continue
        for pod in pods:
            phase = pod.status.phase if pod.status is not None else None
            if phase not in (cu.POD_FAILED, cu.POD_SUCCEEDED):
                return True
    return False


async def scale_up_new_replica_set_for_recreate(dc: DeploymentController, new_rs: ReplicaSet,
                                                deployment: apps_v1.Deployment) -> bool:
    """Upstream: scaleUpNewReplicaSetForRecreate"""
    scaled, _ = await sync.scale_replica_set_and_record_event(dc, new_rs, du.spec_replicas_of(deployment), deployment)
    return scaled


