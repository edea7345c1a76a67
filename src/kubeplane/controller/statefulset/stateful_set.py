"""The StatefulSet controller: informer handlers, the work queue, and sync.

Handlers only enqueue the owning set's key; sync re-reads the listers, adopts orphan
ControllerRevisions, claims the set's pods by ControllerRef, and hands them to
DefaultStatefulSetControl (stateful_set_control.py) for one step.

Upstream: pkg/controller/statefulset/stateful_set.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...api import errors, labels
from ...api.types import ObjectName, apps_v1, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock
from .. import controller_utils as cu
from ..controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from ..history import RealHistory
from . import metrics
from . import stateful_set_utils as ssu
from .stateful_pod_control import RealObjectManager, StatefulPodControl
from .stateful_set_control import DefaultStatefulSetControl
from .stateful_set_status_updater import StatefulSetStatusUpdater

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import (
        ControllerRevisionLister, PersistentVolumeClaimLister, PodLister, StatefulSetLister,
    )
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StatefulSetControllerOptions:
    workers: int = 5                     # --concurrent-statefulset-syncs
    max_unavailable_stateful_set: bool = True   # feature gate MaxUnavailableStatefulSet (beta, on)


class _LogRecorder:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason, "note": message})


class StatefulSetController:
    """Upstream: StatefulSetController"""

    def __init__(self, pod_informer: ResourceInformer[PodLister], set_informer: ResourceInformer[StatefulSetLister],
                 pvc_informer: ResourceInformer[PersistentVolumeClaimLister],
                 revision_informer: ResourceInformer[ControllerRevisionLister], client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: StatefulSetControllerOptions = StatefulSetControllerOptions()) -> None:
        self.client = client
        self.clock = clock
        self.options = options
        self.recorder: EventRecorder = recorder if recorder is not None else _LogRecorder()  # type: ignore[assignment]
        self.pod_lister = pod_informer.lister()
        self.set_lister = set_informer.lister()
        self.pod_control: cu.PodControlInterface = cu.RealPodControl(client, self.recorder)   # adoption patches
        self.control = DefaultStatefulSetControl(
            StatefulPodControl(RealObjectManager(client, self.pod_lister, pvc_informer.lister()), self.recorder),
            StatefulSetStatusUpdater(client, self.set_lister, clock),
            RealHistory(client, revision_informer.lister()), clock,
            max_unavailable_stateful_set=options.max_unavailable_stateful_set)
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="statefulset", clock=clock))
        self._informers = [i.informer() for i in (pod_informer, set_informer, pvc_informer, revision_informer)]
        pod_informer.informer().add_event_handler(
            ResourceEventHandlerFuncs(self.add_pod, self.update_pod, self.delete_pod))
        set_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.enqueue_stateful_set, self.update_stateful_set, self.enqueue_stateful_set_tombstone))
        self.sync_handler = self.sync                       # test seam

    # --- run loop ----------------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run workers until cancelled. Upstream: Run"""
        log.info("Starting controller", extra={"controller": "stateful set"})
        try:
            for inf in self._informers:
                if not inf.has_synced():
                    await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for i in range(workers or self.options.workers):
                    tg.create_task(self.worker(), name=f"statefulset-worker-{i}")
        finally:
            self.queue.shut_down()
            log.info("Shutting down controller", extra={"controller": "stateful set"})

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        if err is None:
            self.queue.forget(key)
            return
        log.info("Error syncing StatefulSet, requeuing", extra={"statefulSet": str(key), "err": str(err)})
        self.queue.add_rate_limited(key)

    # --- handlers ----------------------------------------------------------------------------------

    def enqueue_stateful_set(self, s: apps_v1.StatefulSet) -> None:
        self.queue.add(ObjectName(s.metadata.namespace or "", s.metadata.name))

    def enqueue_ss_after(self, s: apps_v1.StatefulSet, duration: float) -> None:
        self.queue.add_after(ObjectName(s.metadata.namespace or "", s.metadata.name), duration)

    def update_stateful_set(self, old: apps_v1.StatefulSet, cur: apps_v1.StatefulSet) -> None:
        self.enqueue_stateful_set(cur)

    def enqueue_stateful_set_tombstone(self, obj: apps_v1.StatefulSet | DeletedFinalStateUnknown) -> None:
        s = object_from_tombstone(obj, apps_v1.StatefulSet)
        if s is not None:
            self.enqueue_stateful_set(s)

    def add_pod(self, pod: core_v1.Pod) -> None:
        """Wake the owner, or the sets that might adopt an orphan. Upstream: addPod"""
        if pod.metadata.deletion_timestamp is not None:
            self.delete_pod(pod)        # a restart can show a pod already being deleted
            return
        if (ref := cu.get_controller_of(pod)) is not None:
            if (s := self.resolve_controller_ref(pod.metadata.namespace, ref)) is not None:
                self.enqueue_stateful_set(s)
            return
        for s in self.get_stateful_sets_for_pod(pod):
            self.enqueue_stateful_set(s)

    def update_pod(self, old: core_v1.Pod, cur: core_v1.Pod) -> None:
        """Upstream: updatePod"""
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        cur_ref = cu.get_controller_of(cur)
        if cur_ref is not None and cur_ref.kind != ssu.CONTROLLER_KIND.kind and cu.same_controller_ref(old, cur, cur_ref):
            return          # another kind's pod, before and after: no StatefulSet resolves from it
        old_ref = cu.get_controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            if (s := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
                self.enqueue_stateful_set(s)
        if cur_ref is not None:
            if (s := self.resolve_controller_ref(cur.metadata.namespace, cur_ref)) is None:
                return
            self.enqueue_stateful_set(s)
            min_ready = s.spec.min_ready_seconds or 0
            if not cu.is_pod_ready(old) and cu.is_pod_ready(cur) and min_ready > 0:
                # Check availability again once minReadySeconds have passed (+1 s of skew).
                self.enqueue_ss_after(s, min_ready + 1.0)
            return
        if cur.metadata.labels != old.metadata.labels or cur_ref != old_ref:
            for s in self.get_stateful_sets_for_pod(cur):
                self.enqueue_stateful_set(s)

    def delete_pod(self, obj: core_v1.Pod | DeletedFinalStateUnknown) -> None:
        """Upstream: deletePod"""
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is None or (ref := cu.get_controller_of(pod)) is None:
            return
        if (s := self.resolve_controller_ref(pod.metadata.namespace, ref)) is not None:
            self.enqueue_stateful_set(s)

    def resolve_controller_ref(self, namespace: str | None, ref: Any) -> apps_v1.StatefulSet | None:
        """Upstream: resolveControllerRef"""
        if ref.kind != ssu.CONTROLLER_KIND.kind:
            return None
        try:
            s = self.set_lister.statefulsets(namespace or "").get(ref.name)
        except errors.NotFound:
            return None
        return s if s.metadata.uid == ref.uid else None

    def get_stateful_sets_for_pod(self, pod: core_v1.Pod) -> list[apps_v1.StatefulSet]:
        """Sets whose selector matches the pod, oldest first. Upstream: getStatefulSetsForPod"""
        if not pod.metadata.labels:
            return []
        sets = []
        for s in self.set_lister.statefulsets(pod.metadata.namespace or "").list():
            try:
                selector = cu.selector_from(s.spec.selector)
            except errors.StatusError:
                continue
            if selector and labels.matches(selector, pod.metadata.labels):
                sets.append(s)
        if len(sets) > 1:
            sets.sort(key=ssu.sort_overlapping)
            log.error("user error: more than one StatefulSet is selecting pods with labels",
                      extra={"pod": pod.metadata.name, "labels": pod.metadata.labels})
        return sets

    # --- sync --------------------------------------------------------------------------------------

    async def sync(self, key: ObjectName) -> None:
        """Upstream: sync

        1. Read the set; gone -> done. An invalid selector is absorbed (requeueing cannot help).
        2. Adopt orphan revisions matching the selector.
        3. Claim the set's pods (members by name whose labels match; orphans adopted).
        4. One control step; with minReadySeconds, check availability again later.
        """
        try:
            s = self.set_lister.statefulsets(key.namespace).get(key.name)
        except errors.NotFound:
            log.info("StatefulSet has been deleted", extra={"key": str(key)})
            metrics.forget(key.namespace, key.name)
            return
        try:
            selector = cu.selector_from(s.spec.selector)
        except errors.StatusError as err:
            log.error("error converting StatefulSet selector", extra={"key": str(key), "err": str(err)})
            return
        await self.adopt_orphan_revisions(s)
        pods = await self.get_pods_for_stateful_set(s, selector)
        status = await self.control.update_stateful_set(s, pods)
        if status is not None and (s.spec.min_ready_seconds or 0) > 0 and \
                (status.available_replicas or 0) != (s.spec.replicas or 0):
            self.enqueue_ss_after(s, float(s.spec.min_ready_seconds or 0))

    async def adopt_orphan_revisions(self, s: apps_v1.StatefulSet) -> None:
        """Upstream: adoptOrphanRevisions"""
        revisions = await self.control.list_revisions(s)
        orphans = [r for r in revisions if cu.get_controller_of(r) is None]
        if orphans:
            await self._can_adopt(s)()
            await self.control.adopt_orphan_revisions(s, orphans)

    def _can_adopt(self, s: apps_v1.StatefulSet) -> Any:
        async def get_fresh() -> apps_v1.StatefulSet:
            fresh = await self.client.apps_v1().statefulsets(s.metadata.namespace or "").get(s.metadata.name)
            if fresh.metadata.uid != s.metadata.uid:
                raise RuntimeError(f"original StatefulSet {s.metadata.namespace}/{s.metadata.name} is gone: "
                                   f"got uid {fresh.metadata.uid}, wanted {s.metadata.uid}")
            return fresh
        return recheck_deletion_timestamp(get_fresh)

    async def get_pods_for_stateful_set(self, s: apps_v1.StatefulSet, selector: Any) -> list[core_v1.Pod]:
        """Pods whose name makes them members and whose labels match, after adoption/release.

        Upstream: getPodsForStatefulSet
        """
        pods = self.pod_lister.pods(s.metadata.namespace or "").list()
        cm = PodControllerRefManager(self.pod_control, s, selector, ssu.CONTROLLER_KIND, self._can_adopt(s))
        return await cm.claim_pods(pods, lambda pod: ssu.is_member_of(s, pod))
