"""The PersistentVolume binder: informers, two work queues (volumes, claims), resync.

Handlers enqueue names; a worker re-reads the lister and runs sync_volume or sync_claim
(pv_controller.py). Every 15 s every volume and claim is synced again
(--pvclaimbinder-sync-period), which repairs anything a failed write left half done.

Upstream: pkg/controller/volume/persistentvolume/pv_controller_base.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ....api import errors
from ....api.types import core_v1, storage_v1
from ....client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, object_from_tombstone
from ....client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ....client.util.workqueue.worker import process_next_work_item
from ....utils.clock import REAL_CLOCK, Clock
from . import metrics, pv_controller

if TYPE_CHECKING:
    from ....client.clientset import Clientset
    from ....client.informers import ResourceInformer
    from ....client.listers import (
        PersistentVolumeClaimLister, PersistentVolumeLister, PodLister, StorageClassLister,
    )
    from ....client.tools.record import EventRecorder

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PersistentVolumeControllerOptions:
    sync_period: float = 15.0          # --pvclaimbinder-sync-period
    # Provisioners running outside this controller (their volumes are theirs to delete).
    external_provisioners: frozenset[str] = field(default_factory=frozenset)


class _LogRecorder:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason, "note": message})


class PersistentVolumeController:
    """Upstream: PersistentVolumeController"""

    def __init__(self, volume_informer: ResourceInformer[PersistentVolumeLister],
                 claim_informer: ResourceInformer[PersistentVolumeClaimLister],
                 class_informer: ResourceInformer[StorageClassLister], pod_informer: ResourceInformer[PodLister],
                 client: Clientset, *, clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: PersistentVolumeControllerOptions = PersistentVolumeControllerOptions()) -> None:
        self.client = client
        self.clock = clock
        self.options = options
        self.recorder: EventRecorder = recorder if recorder is not None else _LogRecorder()  # type: ignore[assignment]
        self.volume_lister = volume_informer.lister()
        self.claim_lister = claim_informer.lister()
        self.class_lister = class_informer.lister()
        self.pod_lister = pod_informer.lister()
        self.volume_queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="volumes", clock=clock))
        self.claim_queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="claims", clock=clock))
        self._informers = [i.informer() for i in (volume_informer, claim_informer, class_informer, pod_informer)]
        self.operation_timestamps = metrics.OperationStartTimeCache(clock)
        metrics.register(self.volume_lister, self.claim_lister)
        volume_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self._enqueue_volume, lambda old, new: self._enqueue_volume(new), self.delete_volume))
        claim_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self._enqueue_claim, lambda old, new: self._enqueue_claim(new), self.delete_claim))

    # --- lookups --------------------------------------------------------------------------------

    def get_class(self, name: str) -> storage_v1.StorageClass | None:
        if not name:
            return None
        try:
            return self.class_lister.get(name)
        except errors.NotFound:
            return None

    def get_claim(self, namespace: str, name: str) -> core_v1.PersistentVolumeClaim | None:
        try:
            return self.claim_lister.persistentvolumeclaims(namespace).get(name)
        except errors.NotFound:
            return None

    def claims(self, claim: core_v1.PersistentVolumeClaim) -> Any:
        return self.client.core_v1().persistentvolumeclaims(claim.metadata.namespace or "")

    def external_provisioners(self) -> frozenset[str]:
        return self.options.external_provisioners

    # --- handlers ---------------------------------------------------------------------------------

    def _enqueue_volume(self, obj: Any) -> None:
        volume = object_from_tombstone(obj, core_v1.PersistentVolume)
        if volume is not None:
            self.volume_queue.add(volume.metadata.name)

    def _enqueue_claim(self, obj: Any) -> None:
        claim = object_from_tombstone(obj, core_v1.PersistentVolumeClaim)
        if claim is not None:
            self.claim_queue.add(f"{claim.metadata.namespace}/{claim.metadata.name}")

    def delete_volume(self, obj: Any) -> None:
        """A deletion's end-to-end time ends here. Upstream: deleteVolume"""
        self._enqueue_volume(obj)
        if (volume := object_from_tombstone(obj, core_v1.PersistentVolume)) is not None:
            self.operation_timestamps.record(volume.metadata.name or "", None)

    def delete_claim(self, obj: core_v1.PersistentVolumeClaim | DeletedFinalStateUnknown) -> None:
        """Its volume is Released now: sync it right away; an unfinished provision is
        forgotten. Upstream: deleteClaim"""
        claim = object_from_tombstone(obj, core_v1.PersistentVolumeClaim)
        if claim is None:
            return
        self.operation_timestamps.delete(f"{claim.metadata.namespace}/{claim.metadata.name}")
        self.claim_queue.add(f"{claim.metadata.namespace}/{claim.metadata.name}")
        if claim.spec is not None and claim.spec.volume_name:
            self.volume_queue.add(claim.spec.volume_name)

    # --- workers ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Upstream: Run (one volume worker, one claim worker, the resync loop)."""
        log.info("Starting persistent volume controller")
        try:
            for inf in self._informers:
                if not inf.has_synced():
                    await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._worker(self.volume_queue, self.sync_volume_key))
                tg.create_task(self._worker(self.claim_queue, self.sync_claim_key))
                tg.create_task(self._resync())
        finally:
            self.volume_queue.shut_down()
            self.claim_queue.shut_down()
            log.info("Shutting down persistent volume controller")

    async def _worker(self, queue: RateLimitingQueue[str], sync: Callable[[str], Any]) -> None:
        def handle_err(err: Exception | None, key: str) -> None:
            if err is None:
                queue.forget(key)
                return
            log.info("sync failed, requeuing", extra={"key": key, "err": str(err)})
            queue.add_rate_limited(key)
        while await process_next_work_item(queue, sync, handle_err):
            pass

    async def _resync(self) -> None:
        """Upstream: resync — every volume and claim again, every sync period."""
        while True:
            await self.clock.sleep(self.options.sync_period)
            for claim in self.claim_lister.list():
                self._enqueue_claim(claim)
            for volume in self.volume_lister.list():
                self._enqueue_volume(volume)

    async def sync_volume_key(self, key: str) -> None:
        """Upstream: volumeWorker's workFunc"""
        try:
            volume = self.volume_lister.get(key)
        except errors.NotFound:
            return
        await pv_controller.sync_volume(self, volume)

    async def sync_claim_key(self, key: str) -> None:
        """Upstream: claimWorker's workFunc"""
        namespace, _, name = key.partition("/")
        claim = self.get_claim(namespace, name)
        if claim is None:
            return
        await pv_controller.sync_claim(self, claim)
