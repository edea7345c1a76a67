"""The Deployment controller: roll ReplicaSets to match each Deployment's template and size.

Handlers only enqueue Deployment keys. sync_deployment re-reads the listers, claims the
ReplicaSets by ControllerRef, and hands the Deployment to exactly one of: status only
(being deleted) > sync (paused) > rollback > sync (scaling event) > rollout (Recreate or
RollingUpdate). Each of those takes at most one state-changing step and writes status; the
watch events caused by that step bring the Deployment back for the next one.

The per-concern functions live in sync.py, rolling.py, recreate.py, rollback.py and
progress.py and take the controller as their first argument (Go's receiver made explicit).

Upstream: pkg/controller/deployment/deployment_controller.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.types import ObjectName, apps_v1, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock
from .. import controller_utils as cu
from ..controller_ref_manager import RealRSControl, ReplicaSetControllerRefManager, recheck_deletion_timestamp
from . import recreate, rollback, rolling, sync
from .util import deployment_util as du

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import DeploymentLister, PodLister, ReplicaSetLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# How many times a deployment is retried before it is dropped out of the queue (until its
# next watch event). Upstream: maxRetries
MAX_RETRIES = 5

CONTROLLER_KIND = cu.GroupVersionKind("apps", "v1", "Deployment")
REPLICA_SET_KIND = "ReplicaSet"

PodMap = dict[str, list[core_v1.Pod]]
"""ReplicaSet UID -> the pods it controls (cache objects: read-only)."""


@dataclass(frozen=True, slots=True)
class DeploymentControllerOptions:
    workers: int = 5                    # ConcurrentDeploymentSyncs
    max_retries: int = MAX_RETRIES      # retries of a failing key before it is dropped
    # DeploymentReplicaSetTerminatingReplicas (beta, on by default since 1.35): write
    # status.terminatingReplicas as the sum of the ReplicaSets' counts.
    status_terminating_replicas: bool = True
    batch_rounds: int = cu.WORK_QUEUE_BATCH_ROUNDS     # the queue's (QueueOptions.batch_rounds)


class _LogRecorder:
    """Used when no recorder is given: events only go to the debug log."""

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason, "note": message})

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        from ...client.tools.record import sprintf
        self.event(obj, type_, reason, sprintf(fmt, *args))


class DeploymentController:
    """Synchronizes Deployments with their ReplicaSets. Upstream: DeploymentController"""

    def __init__(self, d_informer: ResourceInformer[DeploymentLister], rs_informer: ResourceInformer[ReplicaSetLister],
                 pod_informer: ResourceInformer[PodLister], client: Clientset, *, clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: DeploymentControllerOptions = DeploymentControllerOptions()) -> None:
        self.client = client
        self.clock = clock
        self.options = options
        self.event_recorder: Any = recorder if recorder is not None else _LogRecorder()
        self.rs_control = RealRSControl(client)            # adopts and releases ReplicaSets
        # Keys, not objects: a worker always reads the newest Deployment from the lister.
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="deployment", clock=clock, batch_rounds=options.batch_rounds))
        d_inf, rs_inf, pod_inf = d_informer.informer(), rs_informer.informer(), pod_informer.informer()
        self._informers = (d_inf, rs_inf, pod_inf)
        self.d_lister = d_informer.lister()
        self.rs_lister = rs_informer.lister()
        self.pod_lister = pod_informer.lister()
        self.sync_handler = self.sync_deployment            # test seam
        self.enqueue_deployment = self.enqueue              # test seam
        # Pods by controller UID (shared with the ReplicaSet controller): Recreate's pod map
        # reads each ReplicaSet's pods, not the namespace's.
        cu.add_pod_controller_uid_indexer(pod_inf.get_indexer())
        self.pod_indexer = pod_inf.get_indexer()
        self.d_lister_synced = d_inf.has_synced             # test seams
        self.rs_lister_synced = rs_inf.has_synced
        self.pod_lister_synced = pod_inf.has_synced
        # Handlers last: an informer another component started replays its objects into a new
        # handler at once (add_replica_set reads d_lister and enqueues).
        d_inf.add_event_handler(ResourceEventHandlerFuncs(
            self.add_deployment, self.update_deployment, self.delete_deployment))
        rs_inf.add_event_handler(ResourceEventHandlerFuncs(
            self.add_replica_set, self.update_replica_set, self.delete_replica_set))
        pod_inf.add_event_handler(ResourceEventHandlerFuncs(delete_func=self.delete_pod))

    def now(self) -> float:
        """Wall-clock seconds for condition timestamps and deadlines (upstream: metav1.Now, nowFn)."""
        return self.clock.now()

    # --- run loop ---------------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run workers until cancelled. Upstream: Run"""
        workers = workers or self.options.workers
        log.info("Starting controller", extra={"controller": "deployment"})
        try:
            for synced, inf in zip((self.d_lister_synced, self.rs_lister_synced, self.pod_lister_synced),
                                   self._informers):
                if not synced():
                    await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for i in range(workers):
                    tg.create_task(self.worker(), name=f"deployment-worker-{i}")
        finally:
            self.queue.shut_down()
            log.info("Shutting down controller", extra={"controller": "deployment"})

    async def worker(self) -> None:
        """Upstream: worker"""
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """Upstream: processNextWorkItem"""
        return await process_next_work_item(self.queue, self.sync_handler, self.handle_err)

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        """Forget on success (or a terminating namespace), retry rate-limited up to max_retries,
        then drop the key until its next event. Upstream: handleErr
        """
        if err is None or cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
            self.queue.forget(key)
            return
        if self.queue.num_requeues(key) < self.options.max_retries:
            log.info("Error syncing deployment", extra={"deployment": str(key), "err": repr(err)})
            self.queue.add_rate_limited(key)
            return
        log.warning("Dropping deployment out of the queue", extra={"deployment": str(key), "err": repr(err)})
        self.queue.forget(key)

    # --- enqueueing ----------------------------------------------------------------------------------

    @staticmethod
    def key_of(d: apps_v1.Deployment) -> ObjectName:
        return ObjectName(d.metadata.namespace or "", d.metadata.name or "")

    def enqueue(self, d: apps_v1.Deployment) -> None:
        """Upstream: enqueue"""
        self.queue.add(self.key_of(d))

    def enqueue_rate_limited(self, d: apps_v1.Deployment) -> None:
        """Upstream: enqueueRateLimited"""
        self.queue.add_rate_limited(self.key_of(d))

    def enqueue_after(self, d: apps_v1.Deployment, after: float) -> None:
        """Enqueue d after `after` seconds. Upstream: enqueueAfter"""
        self.queue.add_after(self.key_of(d), after)

    # --- Deployment handlers ---------------------------------------------------------------------------

    def add_deployment(self, d: apps_v1.Deployment) -> None:
        """Upstream: addDeployment"""
        log.debug("Adding deployment", extra={"deployment": d.metadata.name})
        self.enqueue_deployment(d)

    def update_deployment(self, old: apps_v1.Deployment, cur: apps_v1.Deployment) -> None:
        """Upstream: updateDeployment"""
        log.debug("Updating deployment", extra={"deployment": old.metadata.name})
        self.enqueue_deployment(cur)

    def delete_deployment(self, obj: apps_v1.Deployment | DeletedFinalStateUnknown) -> None:
        """The sync will find it gone and return. Upstream: deleteDeployment"""
        d = object_from_tombstone(obj, apps_v1.Deployment)
        if d is not None:
            log.debug("Deleting deployment", extra={"deployment": d.metadata.name})
            self.enqueue_deployment(d)

    # --- ReplicaSet handlers ------------------------------------------------------------------------------

    def add_replica_set(self, rs: apps_v1.ReplicaSet) -> None:
        """Wake the owner, or every Deployment that might adopt an orphan. Upstream: addReplicaSet"""
        if rs.metadata.deletion_timestamp is not None:
            # After a restart an object may show up already pending deletion.
            self.delete_replica_set(rs)
            return
        if (ref := cu.get_controller_of(rs)) is not None:
            if (d := self.resolve_controller_ref(rs.metadata.namespace, ref)) is not None:
                self.enqueue_deployment(d)
            return
        for d in self.get_deployments_for_replica_set(rs):
            self.enqueue_deployment(d)

    def update_replica_set(self, old: apps_v1.ReplicaSet, cur: apps_v1.ReplicaSet) -> None:
        """Wake the old and new owners; an orphan whose labels changed wakes its candidates.

        Upstream: updateReplicaSet
        """
        if cur.metadata.resource_version == old.metadata.resource_version:
            return                                   # periodic resync: nothing changed
        cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            if (d := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
                self.enqueue_deployment(d)
        if cur_ref is not None:
            if (d := self.resolve_controller_ref(cur.metadata.namespace, cur_ref)) is not None:
                self.enqueue_deployment(d)
            return
        if cur.metadata.labels != old.metadata.labels or ref_changed:
            for d in self.get_deployments_for_replica_set(cur):
                self.enqueue_deployment(d)

    def delete_replica_set(self, obj: apps_v1.ReplicaSet | DeletedFinalStateUnknown) -> None:
        """Upstream: deleteReplicaSet (nobody cares about orphans going away)"""
        rs = object_from_tombstone(obj, apps_v1.ReplicaSet)
        if rs is None or (ref := cu.get_controller_of(rs)) is None:
            return
        if (d := self.resolve_controller_ref(rs.metadata.namespace, ref)) is not None:
            self.enqueue_deployment(d)

    # --- pod handler ---------------------------------------------------------------------------------------

    def delete_pod(self, obj: core_v1.Pod | DeletedFinalStateUnknown) -> None:
        """Wake a Recreate Deployment once its last pod is gone. Upstream: deletePod

        Upstream lists the ReplicaSets through the API client here; we use the lister, so
        the handler does no I/O.
        """
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is None or (d := self.get_deployment_for_pod(pod)) is None:
            return
        if d.spec.strategy is None or d.spec.strategy.type != du.RECREATE_DEPLOYMENT_STRATEGY_TYPE:
            return
        try:
            rs_list = du.list_replica_sets(d, lambda ns, sel: self.rs_lister.replicasets(ns).list(sel))
            pod_map = self.get_pod_map_for_deployment(d, rs_list)
        except errors.StatusError:
            return
        if sum(len(pods) for pods in pod_map.values()) == 0:
            self.enqueue_deployment(d)

    # --- ownership lookups (listers only) -----------------------------------------------------------------------

    def get_deployment_for_pod(self, pod: core_v1.Pod) -> apps_v1.Deployment | None:
        """The Deployment controlling the ReplicaSet controlling pod. Upstream: getDeploymentForPod"""
        ref = cu.get_controller_of(pod)
        if ref is None or ref.kind != REPLICA_SET_KIND:
            return None
        try:
            rs = self.rs_lister.replicasets(pod.metadata.namespace or "").get(ref.name)
        except errors.NotFound:
            return None
        if rs.metadata.uid != ref.uid or (rs_ref := cu.get_controller_of(rs)) is None:
            return None
        return self.resolve_controller_ref(rs.metadata.namespace, rs_ref)

    def resolve_controller_ref(self, namespace: str | None, ref: Any) -> apps_v1.Deployment | None:
        """The cached Deployment a controller ref points to: right Kind, name and UID.

        Upstream: resolveControllerRef
        """
        if ref.kind != CONTROLLER_KIND.kind:
            return None
        try:
            d = self.d_lister.deployments(namespace or "").get(ref.name)
        except errors.NotFound:
            return None
        return d if d.metadata.uid == ref.uid else None

    def get_deployments_for_replica_set(self, rs: apps_v1.ReplicaSet) -> list[apps_v1.Deployment]:
        """Deployments whose selector matches rs. Upstream: getDeploymentsForReplicaSet"""
        ds = du.get_deployments_for_replica_set(self.d_lister, rs)
        if len(ds) > 1:
            # ControllerRef keeps us from doing anything crazy, but this is a user error.
            log.info("user error! more than one deployment is selecting replica set",
                     extra={"replicaSet": rs.metadata.name, "labels": rs.metadata.labels})
        return ds

    async def get_replica_sets_for_deployment(self, d: apps_v1.Deployment) -> list[apps_v1.ReplicaSet]:
        """The ReplicaSets d manages, after adopting matching orphans and releasing ours that
        no longer match. Returned objects are cache objects (read-only).
        Upstream: getReplicaSetsForDeployment
        """
        # All of the namespace's RSs: ours that stopped matching must be found to be released.
        rs_list = self.rs_lister.replicasets(d.metadata.namespace or "").list()
        try:
            selector = cu.selector_from(d.spec.selector)
        except errors.StatusError as err:
            raise ValueError(f"deployment {d.metadata.namespace}/{d.metadata.name} has invalid label selector: "
                             f"{err}") from err

        async def get_fresh() -> apps_v1.Deployment:
            # Before the first adoption, re-read ourselves live: the cache may not have seen
            # our deletion yet (#42639).
            fresh = await self.client.apps_v1().deployments(d.metadata.namespace).get(d.metadata.name)
            if fresh.metadata.uid != d.metadata.uid:
                raise RuntimeError(f"original Deployment {d.metadata.namespace}/{d.metadata.name} is gone: "
                                   f"got uid {fresh.metadata.uid}, wanted {d.metadata.uid}")
            return fresh

        cm = ReplicaSetControllerRefManager(self.rs_control, d, selector, CONTROLLER_KIND,
                                            recheck_deletion_timestamp(get_fresh))
        return await cm.claim_replica_sets(rs_list)

    def get_pod_map_for_deployment(self, d: apps_v1.Deployment, rs_list: list[apps_v1.ReplicaSet]) -> PodMap:
        """Pods matching d's selector grouped by controlling RS (UIDs of rs_list only).

        Inactive pods are kept: Recreate must see that no old pod still runs. The pods are
        cache objects and must not be modified. Upstream: getPodMapForDeployment
        """
        selector = cu.selector_from(d.spec.selector)
        pod_map: PodMap = {rs.metadata.uid: [] for rs in rs_list}
        match = cu.label_matcher(selector)
        namespace = d.metadata.namespace or ""
        if cu.POD_CONTROLLER_UID_INDEX in self.pod_indexer.get_indexers():
            # The same pods, from the index: each ReplicaSet's, not a pass over the namespace
            # (the pod delete handler builds this map for every pod a Recreate rollout deletes).
            for uid, pods in pod_map.items():
                pods.extend(p for p in self.pod_indexer.by_index(cu.POD_CONTROLLER_UID_INDEX, uid)
                            if p.metadata.namespace == namespace and match(p.metadata.labels))
            return pod_map
        for pod in self.pod_lister.pods(namespace).list():
            if not match(pod.metadata.labels):
                continue
            ref = cu.get_controller_of(pod)
            if ref is not None and ref.uid in pod_map:
                pod_map[ref.uid].append(pod)
        return pod_map

    # --- the sync --------------------------------------------------------------------------------------------------

    async def sync_deployment(self, key: ObjectName) -> None:
        """Sync the Deployment with this key; never called concurrently for one key.

        Order of precedence: deleted > empty selector > being deleted (status only) >
        paused > rollback > scaling event > rollout by strategy. Upstream: syncDeployment
        """
        try:
            deployment = self.d_lister.deployments(key.namespace).get(key.name)
        except errors.NotFound:
            log.debug("Deployment has been deleted", extra={"deployment": str(key)})
            return
        d = deployment.deep_copy()          # deep-copy, otherwise we are mutating our cache
        du.share_normalised_template(d, deployment)
        if _selects_everything(d):
            await self._reject_empty_selector(d)
            return
        rs_list = await self.get_replica_sets_for_deployment(d)
        if d.metadata.deletion_timestamp is not None:
            return await sync.sync_status_only(self, d, rs_list)
        # Pausing and resuming set an Unknown condition, so a resumed Deployment does not time
        # out for the time it spent paused.
        await sync.check_paused_conditions(self, d)
        if d.spec.paused:
            return await sync.sync(self, d, rs_list)
        # Rollback is not re-entrant (it bumps revisions): finish it, and clear the request,
        # before anything else touches the ReplicaSets.
        if rollback.get_rollback_to(d) is not None:
            return await rollback.rollback(self, d, rs_list)
        if await sync.is_scaling_event(self, d, rs_list):
            return await sync.sync(self, d, rs_list)
        strategy = d.spec.strategy.type if d.spec.strategy is not None else None
        if strategy == du.RECREATE_DEPLOYMENT_STRATEGY_TYPE:
            # Pods by ReplicaSet: Recreate checks that no old pod runs before scaling up.
            # Upstream lists them before the switch on every sync; only Recreate reads them, and
            # the list is O(pods): 10,000 density pods and ~1,000 RollingUpdate syncs listed 10
            # million pods for nothing (a lister cannot fail; a bad selector failed above).
            pod_map = self.get_pod_map_for_deployment(d, rs_list)
            return await recreate.rollout_recreate(self, d, rs_list, pod_map)
        if strategy == du.ROLLING_UPDATE_DEPLOYMENT_STRATEGY_TYPE:
            return await rolling.rollout_rolling(self, d, rs_list)
        raise ValueError(f"unexpected deployment strategy type: {strategy}")

    async def _reject_empty_selector(self, d: apps_v1.Deployment) -> None:
        """A selector selecting everything is refused: warn, and only record the generation
        as observed (the write's error is ignored, as upstream)."""
        self.event_recorder.eventf(d, cu.EVENT_TYPE_WARNING, "SelectingAll",
                                   "This deployment is selecting all pods. A non-empty selector is required.")
        status = d.status or apps_v1.DeploymentStatus()
        if (status.observed_generation or 0) < (d.metadata.generation or 0):
            status.observed_generation = d.metadata.generation
            d.status = status
            try:
                await self.client.apps_v1().deployments(d.metadata.namespace).update_status(d)
            except errors.StatusError as err:
                log.debug("ignored status update error", extra={"deployment": d.metadata.name, "err": str(err)})


def _selects_everything(d: apps_v1.Deployment) -> bool:
    """reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}): non-nil, both fields nil."""
    sel = d.spec.selector if d.spec is not None else None
    return sel is not None and sel.match_labels is None and sel.match_expressions is None


