"""The ReplicaSet controller: keep spec.replicas active pods for every ReplicaSet.

Handlers only enqueue keys, do expectations bookkeeping and note which pods changed for each
ReplicaSet; sync_replica_set re-reads the listers, claims pods by ControllerRef (only the pods
changed since its previous sync: claimed_pods.ClaimedPods), creates or deletes at most
burst_replicas pods (creates in slow-start batches), and writes status.

Upstream: pkg/controller/replicaset/replica_set.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Collection, Sequence

from ...api import errors, labels
from ...api.types import ObjectName, apps_v1, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock
from .. import controller_utils as cu
from ..controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from .claimed_pods import ClaimedPods
from .replica_set_utils import status_from_counts, template_labels_matcher, update_replica_set_status

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import PodLister, ReplicaSetLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Realistic value of the burstReplica field for the replica set manager based off
# performance requirements for kubernetes 1.0. Upstream: BurstReplicas.
BURST_REPLICAS = 500

# The RS indexer's index of ReplicaSets by their controller's UID. Upstream: controllerUIDIndex.
CONTROLLER_UID_INDEX = "controllerUID"

REPLICA_SET_KIND = cu.GroupVersionKind("apps", "v1", "ReplicaSet")


@dataclass(frozen=True, slots=True)
class ReplicaSetControllerOptions:
    workers: int = 5                            # ConcurrentRSSyncs
    burst_replicas: int = BURST_REPLICAS        # max pods created/deleted per sync
    # DeploymentReplicaSetTerminatingReplicas (beta, on by default since 1.35):
    # write status.terminatingReplicas.
    status_terminating_replicas: bool = True
    batch_rounds: int = cu.WORK_QUEUE_BATCH_ROUNDS     # the queue's (QueueOptions.batch_rounds)


def _controller_uid_index(obj: Any) -> list[str]:
    ref = cu.get_controller_of(obj)
    return [ref.uid] if ref is not None and ref.uid else []


class _LogRecorder:
    """Used when no recorder is given: events only go to the debug log."""

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason, "note": message})


class ReplicaSetController:
    """Synchronizes ReplicaSets with their pods. Upstream: ReplicaSetController"""

    def __init__(self, rs_informer: ResourceInformer[ReplicaSetLister], pod_informer: ResourceInformer[PodLister],
                 client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: ReplicaSetControllerOptions = ReplicaSetControllerOptions()) -> None:
        self.gvk = REPLICA_SET_KIND
        self.kind = REPLICA_SET_KIND.kind
        self.client = client
        self.clock = clock
        self.options = options
        self.burst_replicas = options.burst_replicas
        self.recorder = recorder if recorder is not None else _LogRecorder()
        self.pod_control: cu.PodControlInterface = cu.RealPodControl(client, self.recorder)   # test seam
        # Pod creates/deletes each ReplicaSet waits to observe (TTL 5 minutes).
        self.expectations = cu.UIDTrackingControllerExpectations(cu.ControllerExpectations(clock))
        # RS key -> its claimed pods as of its last sync, and the keys of its pods changed since.
        self.claimed: dict[str, ClaimedPods] = {}
        self._names: dict[str, ObjectName] = {}          # RS key -> its queue key (_enqueue_key)
        # Keys, not objects: a worker always reads the newest state from the listers, and the
        # queue never hands one key to two workers.
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="replicaset", clock=clock, batch_rounds=options.batch_rounds))
        self._informers = (rs_informer.informer(), pod_informer.informer())
        self._register_rs_informer(rs_informer)
        self._register_pod_informer(pod_informer)
        self.sync_handler = self.sync_replica_set       # test seam

    def _register_rs_informer(self, rs_informer: ResourceInformer[ReplicaSetLister]) -> None:
        inf = rs_informer.informer()
        indexer = inf.get_indexer()
        if CONTROLLER_UID_INDEX not in indexer.get_indexers():
            indexer.add_indexers({CONTROLLER_UID_INDEX: _controller_uid_index})
        self.rs_indexer = indexer
        self.rs_lister = rs_informer.lister()
        # resolve_controller_ref asks the cache by key, not through the lister's namespace
        # view (four calls less per pod event); the ReplicationManager's converting indexer
        # has no get_by_key and keeps the lister, which converts.
        self._rs_by_key: Callable[[str], apps_v1.ReplicaSet | None] | None = getattr(indexer, "get_by_key", None)
        self.rs_lister_synced = inf.has_synced          # test seam
        # Last: an informer another component started replays its objects at once.
        inf.add_event_handler(ResourceEventHandlerFuncs(self.add_rs, self.update_rs, self.delete_rs))

    def _register_pod_informer(self, pod_informer: ResourceInformer[PodLister]) -> None:
        inf = pod_informer.informer()
        # Every pod change (even host assignment) wakes the owner: the sync only reads caches.
        cu.add_pod_controller_uid_indexer(inf.get_indexer())
        self.pod_indexer = inf.get_indexer()
        self.pod_lister = pod_informer.lister()
        self.pod_lister_synced = inf.has_synced         # test seam
        inf.add_event_handler(ResourceEventHandlerFuncs(self.add_pod, self.update_pod, self.delete_pod))

    # --- run loop -----------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run workers until cancelled. Upstream: Run"""
        workers = workers or self.options.workers
        log.info("Starting controller", extra={"controller": "replicaset"})
        try:
            await self._wait_for_cache_sync()
            async with asyncio.TaskGroup() as tg:
                for i in range(workers):
                    tg.create_task(self.worker(), name=f"replicaset-worker-{i}")
        finally:
            self.queue.shut_down()
            log.info("Shutting down controller", extra={"controller": "replicaset"})

    async def _wait_for_cache_sync(self) -> None:
        for synced, inf in zip((self.rs_lister_synced, self.pod_lister_synced), self._informers):
            if not synced():
                await inf.wait_synced()

    async def worker(self) -> None:
        """Process keys until the queue shuts down. Upstream: worker"""
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """Upstream: processNextWorkItem"""
        return await process_next_work_item(self.queue, self.sync_handler, self.handle_err)

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        """Success forgets the key's failures; any error requeues it rate-limited (never dropped)."""
        if err is None:
            self.queue.forget(key)
            return
        log.info("sync failed", extra={"key": str(key), "err": repr(err)})
        self.queue.add_rate_limited(key)

    # --- enqueueing ----------------------------------------------------------------------------

    def enqueue_rs(self, rs: apps_v1.ReplicaSet) -> None:
        self.queue.add(ObjectName(rs.metadata.namespace or "", rs.metadata.name))

    def _enqueue_key(self, rs_key: str) -> None:
        """enqueue_rs of the RS with this key ("ns/name"), its ObjectName made once per RS
        (_names; dropped with the RS): every pod event of an owned pod enqueues its RS."""
        name = self._names.get(rs_key)
        if name is None:
            name = self._names[rs_key] = ObjectName.parse(rs_key)
        self.queue.add(name)

    def enqueue_rs_after(self, rs: apps_v1.ReplicaSet, duration: float) -> None:
        self.queue.add_after(ObjectName(rs.metadata.namespace or "", rs.metadata.name), duration)

    # --- ReplicaSet handlers --------------------------------------------------------------------

    def add_rs(self, rs: apps_v1.ReplicaSet) -> None:
        """Upstream: addRS"""
        self.enqueue_rs(rs)

    def update_rs(self, old: apps_v1.ReplicaSet, cur: apps_v1.ReplicaSet) -> None:
        """Every update enqueues, so a resync retries RSs whose last creates failed. Upstream: updateRS"""
        if cur.metadata.uid != old.metadata.uid:        # deleted and re-created between two events
            self.delete_rs(DeletedFinalStateUnknown(cu.key_func(old), old))
        self.enqueue_rs(cur)

    def delete_rs(self, obj: apps_v1.ReplicaSet | DeletedFinalStateUnknown) -> None:
        """Forget the RS's expectations so a new RS with the same name starts clean. Upstream: deleteRS"""
        rs = object_from_tombstone(obj, apps_v1.ReplicaSet)
        if rs is None:
            return
        key = cu.key_func(rs)
        self.expectations.delete_expectations(key)
        self.claimed.pop(key, None)
        self._names.pop(key, None)
        self.queue.add(ObjectName.parse(key))

    # --- pod handlers ------------------------------------------------------------------------------

    def add_pod(self, pod: core_v1.Pod) -> None:
        """Observe a creation for the owner, or wake RSs that might adopt an orphan. Upstream: addPod"""
        if pod.metadata.deletion_timestamp is not None:
            # After a restart a new pod may show up already being deleted: not a creation.
            self.delete_pod(pod)
            return
        if (ref := cu.get_controller_of(pod)) is not None:
            if (found := self._owner(pod.metadata.namespace, ref)) is not None:
                rs_key = found[1]
                self._pod_changed(rs_key, pod)
                self.expectations.creation_observed(rs_key)
                self._enqueue_key(rs_key)
            return
        # An orphan: no controller waits for it, so do not observe a creation.
        for rs in self.get_pod_replica_sets(pod):
            self._pod_changed(cu.key_func(rs), pod)
            self.enqueue_rs(rs)

    def update_pod(self, old: core_v1.Pod, cur: core_v1.Pod) -> None:
        """Wake the old and new owners; label changes may make an orphan adoptable. Upstream: updatePod"""
        if cur.metadata.resource_version == old.metadata.resource_version:
            return                                  # periodic resync
        label_changed = cur.metadata.labels != old.metadata.labels
        if not label_changed:
            cur_ref = cu.get_controller_of(cur)
            if cur_ref is not None and cu.same_controller_ref(old, cur, cur_ref):
                # Most updates: an owned pod's status, binding or deletion, same owner and
                # labels. Both branches note the change for the owner as _pod_updated does;
                # an owner of another kind is nobody both would find (resolve_controller_ref).
                if cur_ref.kind != self.kind:
                    return
                if cur.metadata.deletion_timestamp is not None:
                    self.delete_pod(cur)
                else:
                    self._update_owned_pod(old, cur, cur_ref)
                return
        self._pod_updated(old, cur)
        if cur.metadata.deletion_timestamp is not None:
            # A graceful delete: react now, not when the kubelet finally removes the pod.
            self.delete_pod(cur)
            if label_changed:
                self.delete_pod(old)
            return
        cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            if (rs := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
                self.enqueue_rs(rs)
        if cur_ref is not None:
            self._update_owned_pod(old, cur, cur_ref)
            return
        if label_changed or ref_changed:
            for rs in self.get_pod_replica_sets(cur):
                self.enqueue_rs(rs)

    def _update_owned_pod(self, old: core_v1.Pod, cur: core_v1.Pod, ref: Any) -> None:
        """Note the change for the sync of cur's owner (ref; after _pod_updated a repeat, the
        keys are a set) and wake it."""
        found = self._owner(cur.metadata.namespace, ref)
        if found is None:
            return
        rs, rs_key = found
        if self.claimed:
            self._pod_changed(rs_key, cur)
        self._enqueue_key(rs_key)
        min_ready = rs.spec.min_ready_seconds or 0
        if min_ready > 0 and not cu.is_pod_ready(old) and cu.is_pod_ready(cur):
            # Re-check availability once minReadySeconds have passed; one extra second
            # absorbs clock skew in add_after (#39785).
            self.enqueue_rs_after(rs, min_ready + 1)

    def delete_pod(self, obj: core_v1.Pod | DeletedFinalStateUnknown) -> None:
        """Observe the deletion for the owner and wake it. Upstream: deletePod"""
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is None:
            return
        ref = cu.get_controller_of(pod)
        if ref is None:
            # Nobody cares about orphans going away (upstream), unless a sync adopted this one
            # and its MODIFIED never came (a relist's tombstone carries the orphan): then the
            # RS that claimed it must drop it (see claimed_pods).
            self._orphan_deleted(pod)
            return
        found = self._owner(pod.metadata.namespace, ref)
        if found is None:
            return
        rs_key = found[1]
        pod_key = cu.pod_key(pod)
        if (claimed := self.claimed.get(rs_key)) is not None:      # _pod_changed
            claimed.dirty.add(pod_key)
        self.expectations.deletion_observed(rs_key, pod_key)
        self._enqueue_key(rs_key)

    def _pod_changed(self, rs_key: str, pod: core_v1.Pod) -> None:
        """Note that pod changed, for the next sync of the RS with rs_key (see claimed_pods)."""
        if (claimed := self.claimed.get(rs_key)) is not None:
            claimed.dirty.add(cu.pod_key(pod))

    def _orphan_deleted(self, pod: core_v1.Pod) -> None:
        if not self.claimed:
            return
        pod_key = cu.pod_key(pod)
        for rs in self.get_pod_replica_sets(pod):   # an adopting RS's selector matched these labels
            claimed = self.claimed.get(rs_key := cu.key_func(rs))
            if claimed is not None and (pod_key in claimed.active or pod_key in claimed.terminating):
                claimed.dirty.add(pod_key)
                self.queue.add(ObjectName.parse(rs_key))

    def _pod_updated(self, old: core_v1.Pod, cur: core_v1.Pod) -> None:
        """Note an updated pod for every RS it belonged to or may now belong to: the owners
        before and after, and for an orphan (before or after) the RSs whose selector matches
        it. Wider than what update_pod enqueues (an orphan's status change, a deletion that
        also changed the owner), so that no RS's claimed pods miss a change."""
        if not self.claimed:
            return
        seen: set[str] = set()
        for pod in (old, cur) if old.metadata.labels != cur.metadata.labels or \
                cu.get_controller_of(old) != cu.get_controller_of(cur) else (cur,):
            if (ref := cu.get_controller_of(pod)) is not None:
                rss = [rs] if (rs := self.resolve_controller_ref(pod.metadata.namespace, ref)) is not None else []
            else:
                rss = self.get_pod_replica_sets(pod)
            for rs in rss:
                if (rs_key := cu.key_func(rs)) not in seen:
                    seen.add(rs_key)
                    self._pod_changed(rs_key, cur)

    # --- ownership lookups (listers only) ----------------------------------------------------------

    def resolve_controller_ref(self, namespace: str | None, ref: Any) -> apps_v1.ReplicaSet | None:
        """The cached RS a controller ref points to: right Kind, name and UID. Upstream: resolveControllerRef"""
        found = self._owner(namespace, ref)
        return found[0] if found is not None else None

    def _owner(self, namespace: str | None, ref: Any) -> tuple[apps_v1.ReplicaSet, str] | None:
        """resolve_controller_ref's RS with its key (cu.key_func(rs)): the pod handlers note
        changes and enqueue by it, made once per pod event."""
        if ref.kind != self.kind:
            return None
        key = f"{namespace}/{ref.name}" if namespace else ref.name
        if self._rs_by_key is not None:
            rs = self._rs_by_key(key)
            if rs is None:
                return None
        else:
            try:
                rs = self.rs_lister.replicasets(namespace or "").get(ref.name)
            except errors.NotFound:
                return None
        return (rs, key) if rs.metadata.uid == ref.uid else None

    def get_pod_replica_sets(self, pod: core_v1.Pod) -> list[apps_v1.ReplicaSet]:
        """RSs in the pod's namespace whose (non-empty) selector matches it. Upstream: getPodReplicaSets"""
        if not pod.metadata.labels:
            return []
        rss = []
        for rs in self.rs_lister.replicasets(pod.metadata.namespace or "").list():
            try:
                selector = cu.selector_from(rs.spec.selector)
            except errors.StatusError:
                continue                            # an invalid selector matches nothing
            if selector and labels.matches(selector, pod.metadata.labels):
                rss.append(rs)
        if len(rss) > 1:
            log.warning("user error! more than one ReplicaSet is selecting pods with labels",
                        extra={"labels": pod.metadata.labels})
        return rss

    def get_replica_sets_with_same_controller(self, rs: apps_v1.ReplicaSet) -> list[apps_v1.ReplicaSet]:
        """RSs controlled by rs's controller (rs included). Upstream: getReplicaSetsWithSameController"""
        ref = cu.get_controller_of(rs)
        if ref is None:
            log.debug("ReplicaSet has no controller", extra={"rs": rs.metadata.name})
            return []
        if CONTROLLER_UID_INDEX in self.rs_indexer.get_indexers():
            return self.rs_indexer.by_index(CONTROLLER_UID_INDEX, ref.uid)
        return [r for r in self.rs_lister.list() if (c := cu.get_controller_of(r)) is not None and c.uid == ref.uid]

    def get_indirectly_related_pods(self, rs: apps_v1.ReplicaSet) -> list[core_v1.Pod]:
        """Pods selected by any RS sharing rs's controller, each once. Upstream: getIndirectlyRelatedPods

        A scale-down reads it only when a related RS has no kept counts (_related_on_node).
        """
        related: list[core_v1.Pod] = []
        seen: set[str] = set()
        for related_rs in self.get_replica_sets_with_same_controller(rs):
            try:
                selector = cu.selector_from(related_rs.spec.selector)
            except errors.StatusError:
                continue
            if selector is None:
                continue
            for pod in self.pod_lister.pods(related_rs.metadata.namespace or "").list(selector):
                if pod.metadata.uid not in seen:
                    seen.add(pod.metadata.uid)
                    related.append(pod)
        return related

    # --- the sync --------------------------------------------------------------------------------

    async def sync_replica_set(self, key: ObjectName) -> None:
        """Converge one ReplicaSet: claim pods, manage replicas if expectations allow, write status.

        1. Read the RS from the lister; gone -> forget its expectations, done.
        2. Note whether expectations are satisfied (earlier creates/deletes observed).
        3. Claim its active pods and the namespace's orphans (adopt/release by ControllerRef).
        4. If satisfied and the RS is not being deleted: create/delete pods (manage_replicas).
        5. Always write status (pods come up and die without any create/delete of ours).
        6. If every pod is ready but some are not yet available, check again after minReadySeconds.
        Upstream: syncReplicaSet
        """
        rs_key = str(key)
        try:
            rs = self.rs_lister.replicasets(key.namespace).get(key.name)
        except errors.NotFound:
            log.debug("ReplicaSet has been deleted", extra={"key": rs_key})
            self.expectations.delete_expectations(rs_key)
            self.claimed.pop(rs_key, None)
            return
        rs_needs_sync = self.expectations.satisfied_expectations(rs_key)
        try:
            selector = cu.selector_from(rs.spec.selector)
        except errors.StatusError as err:          # a bad selector: requeueing would not help
            log.error("error converting pod selector to selector", extra={"key": rs_key, "err": str(err)})
            return
        claimed, candidates = self._claim_candidates(rs_key, rs, selector)
        try:
            for pod in await self.claim_pods(rs, selector, candidates):
                claimed.put_active(cu.pod_key(pod), pod)
        except BaseException:                       # (cancelled too: the changed keys are taken)
            claimed.valid = False                   # the next sync starts over
            raise
        claimed.valid = True
        manage_replicas_err: Exception | None = None
        if rs_needs_sync and rs.metadata.deletion_timestamp is None:
            try:
                await self.manage_replicas(claimed, rs)
            except Exception as err:
                manage_replicas_err = err
        await self._sync_status(key, rs, claimed, manage_replicas_err)
        if manage_replicas_err is not None:
            raise manage_replicas_err

    def _claim_candidates(self, rs_key: str, rs: apps_v1.ReplicaSet,
                          selector: labels.Selector | None) -> tuple[ClaimedPods, list[core_v1.Pod]]:
        """rs's ClaimedPods less the pods to claim again, and those pods: the ones changed
        since the last sync, or on a full pass every active pod rs controls and every orphan
        of its namespace (upstream's claim set). No await: a pod event cannot slip between
        reading the pods and noting changes for the next sync."""
        template = rs.spec.template
        template_labels = template.metadata.labels if template and template.metadata else None
        min_ready = rs.spec.min_ready_seconds or 0
        fingerprint = (rs.metadata.uid, selector, template_labels, min_ready, rs.metadata.deletion_timestamp is not None)
        claimed = self.claimed.get(rs_key)
        match = cu.label_matcher(selector)
        if claimed is not None and claimed.valid and claimed.fingerprint == fingerprint and self.pod_lister_synced():
            candidates = []
            uid, namespace = rs.metadata.uid, rs.metadata.namespace
            get = self.pod_indexer.get_by_key
            for pod_key in claimed.take_dirty():
                claimed.remove(pod_key)
                pod = get(pod_key)
                if pod is None:
                    continue
                ref = cu.get_controller_of(pod)
                if ref is not None and ref.uid != uid or ref is None and pod.metadata.namespace != namespace:
                    continue                        # someone else's
                if cu.is_pod_active(pod):
                    candidates.append(pod)
                elif ref is not None and cu.is_pod_terminating(pod) and match(pod.metadata.labels):
                    claimed.put_terminating(pod_key)
            return claimed, candidates
        claimed = ClaimedPods(fingerprint, template_labels_matcher(template_labels), min_ready)
        if self.pod_lister_synced():
            self.claimed[rs_key] = claimed          # from now on, pod events note their keys here
        # Ours (those that stopped matching get released) and orphans (which may be adopted).
        all_pods = cu.filter_pods_by_owner(self.pod_indexer, rs.metadata, include_orphaned_pods=True)
        for pod in cu.filter_claimed_pods(rs, selector, cu.filter_terminating_pods(all_pods)):
            claimed.put_terminating(cu.pod_key(pod))
        return claimed, cu.filter_active_pods(all_pods)

    async def _sync_status(self, key: ObjectName, rs: apps_v1.ReplicaSet, claimed: ClaimedPods,
                           manage_replicas_err: Exception | None) -> None:
        now = self.clock.now()
        terminating = len(claimed.terminating) if self.options.status_terminating_replicas else None
        new_status = status_from_counts(rs, len(claimed), claimed.fully_labeled, claimed.ready,
                                        claimed.available(now), terminating, manage_replicas_err, now)
        updated = await update_replica_set_status(self.client.apps_v1().replicasets(rs.metadata.namespace),
                                                  rs, new_status)
        # A last line of defence against clock skew: re-check availability after minReadySeconds.
        min_ready = updated.spec.min_ready_seconds or 0
        st, want = updated.status or apps_v1.ReplicaSetStatus(), updated.spec.replicas or 0
        if (manage_replicas_err is None and min_ready > 0 and (st.ready_replicas or 0) == want
                and (st.available_replicas or 0) != want):
            self.queue.add_after(key, float(min_ready))

    def _related_on_node(self, rs: apps_v1.ReplicaSet) -> list[dict[str, int]] | None:
        """The active pods per node of every RS sharing rs's controller, as their last syncs
        counted them (ClaimedPods.on_node); None if one of them has no counts yet.

        Upstream ranks by the pods the related RSs select, read from the cache; these counts
        are each RS's claimed pods, as of its last sync (the pods its next sync adopts or
        releases are not counted yet). Only the ranking of a scale-down reads them.
        """
        if not self.pod_lister_synced():
            return None
        out = []
        for related_rs in self.get_replica_sets_with_same_controller(rs):
            claimed = self.claimed.get(cu.key_func(related_rs))
            if claimed is None or not claimed.valid or claimed.fingerprint[0] != related_rs.metadata.uid:
                return None
            out.append(claimed.on_node)
        return out

    async def claim_pods(self, rs: apps_v1.ReplicaSet, selector: labels.Selector | None,
                         filtered_pods: list[core_v1.Pod]) -> list[core_v1.Pod]:
        """Adopt/release pods; before the first adoption re-read the RS live (#42639). Upstream: claimPods"""
        async def get_fresh() -> apps_v1.ReplicaSet:
            fresh = await self.client.apps_v1().replicasets(rs.metadata.namespace).get(rs.metadata.name)
            if fresh.metadata.uid != rs.metadata.uid:
                raise RuntimeError(f"original {self.kind} {rs.metadata.namespace}/{rs.metadata.name} is gone: "
                                   f"got uid {fresh.metadata.uid}, wanted {rs.metadata.uid}")
            return fresh

        cm = PodControllerRefManager(self.pod_control, rs, selector, self.gvk, recheck_deletion_timestamp(get_fresh))
        return await cm.claim_pods(filtered_pods)

    async def manage_replicas(self, filtered_pods: Collection[core_v1.Pod], rs: apps_v1.ReplicaSet) -> None:
        """Create or delete pods so that len(filtered_pods) approaches spec.replicas, at most
        burst_replicas per sync. Raises the first create/delete error. Does not modify
        filtered_pods. Upstream: manageReplicas
        """
        diff = len(filtered_pods) - (rs.spec.replicas or 0)
        rs_key = cu.key_func(rs)
        if diff < 0:
            await self._create_replicas(rs, rs_key, min(-diff, self.burst_replicas))
        elif diff > 0:
            await self._delete_replicas(rs, rs_key, filtered_pods, min(diff, self.burst_replicas))

    async def _create_replicas(self, rs: apps_v1.ReplicaSet, rs_key: str, diff: int) -> None:
        # Expect all creations before the first request: the informer may deliver a new pod
        # before create() returns.
        self.expectations.expect_creations(rs_key, diff)
        log.info("Too few replicas", extra={"rs": rs_key, "need": rs.spec.replicas, "creating": diff})
        controller_ref = cu.new_controller_ref(rs, self.gvk)

        async def create_one() -> None:
            try:
                await self.pod_control.create_pods(rs.metadata.namespace, rs.spec.template, rs, controller_ref)
            except errors.StatusError as err:
                if not cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
                    raise                          # a terminating namespace fails every create: not an error

        successful, err = await cu.slow_start_batch(diff, cu.SLOW_START_INITIAL_BATCH_SIZE, create_one)
        # Creations never attempted will not be observed: stop expecting them; the next sync retries.
        for _ in range(diff - successful):
            self.expectations.creation_observed(rs_key)
        if err is not None:
            raise err

    async def _delete_replicas(self, rs: apps_v1.ReplicaSet, rs_key: str, filtered_pods: Collection[core_v1.Pod],
                               diff: int) -> None:
        log.info("Too many replicas", extra={"rs": rs_key, "need": rs.spec.replicas, "deleting": diff})
        related_on_node = self._related_on_node(rs) if isinstance(filtered_pods, ClaimedPods) else None
        if related_on_node is not None and isinstance(filtered_pods, ClaimedPods) and diff < len(filtered_pods):
            pods_to_delete = filtered_pods.first_to_delete(diff, related_on_node, self.clock.now())
        else:
            related_pods = self.get_indirectly_related_pods(rs)
            pods_to_delete = get_pods_to_delete(filtered_pods, related_pods, diff, self.clock.now())
        # Remember exactly which pods we delete, so a graceful delete (deletionTimestamp, then
        # DELETE) is counted once.
        self.expectations.expect_deletions(rs_key, get_pod_keys(pods_to_delete))

        async def delete_one(pod: core_v1.Pod) -> None:
            try:
                await self.pod_control.delete_pod(rs.metadata.namespace, pod.metadata.name, rs)
            except Exception as err:
                # The informer will never observe this deletion.
                self.expectations.deletion_observed(rs_key, cu.pod_key(pod))
                if not isinstance(err, errors.NotFound):
                    raise

        results = await asyncio.gather(*(delete_one(p) for p in pods_to_delete), return_exceptions=True)
        errs = [r for r in results if isinstance(r, BaseException)]
        for r in errs:
            if not isinstance(r, Exception):
                raise r
        if errs:
            raise errs[0]                  # all were reported as events; likely the same error


def get_pods_to_delete(filtered_pods: Collection[core_v1.Pod], related_pods: Sequence[core_v1.Pod], diff: int,
                       now: float | None) -> list[core_v1.Pod]:
    """The diff pods to delete first, by the ActivePodsWithRanks order (no sorting when all go).

    Upstream: getPodsToDelete (which sorts filteredPods in place; here a copy is sorted).
    """
    pods = list(filtered_pods)
    if diff < len(pods):
        return get_pods_ranked_by_related_pods_on_same_node(pods, related_pods, now).first(diff)
    return pods[:diff]


def get_pods_ranked_by_related_pods_on_same_node(pods_to_rank: list[core_v1.Pod], related_pods: Sequence[core_v1.Pod],
                                                 now: float | None) -> cu.ActivePodsWithRanks:
    """Rank each pod by how many active related pods share its node.

    Example: related pods a, b on node-1 and c on node-2 -> a and b rank 2, c ranks 1, so a
    node-1 pod is deleted first and the survivors spread over both nodes.
    Upstream: getPodsRankedByRelatedPodsOnSameNode
    """
    pods_on_node: dict[str, int] = {}
    for pod in related_pods:
        if cu.is_pod_active(pod):
            node = (pod.spec.node_name if pod.spec else None) or ""
            pods_on_node[node] = pods_on_node.get(node, 0) + 1
    ranks = [pods_on_node.get((p.spec.node_name if p.spec else None) or "", 0) for p in pods_to_rank]
    return cu.ActivePodsWithRanks(pods=pods_to_rank, rank=ranks, now=now)


def get_pod_keys(pods: Sequence[core_v1.Pod]) -> list[str]:
    """Upstream: getPodKeys"""
    return [cu.pod_key(p) for p in pods]

