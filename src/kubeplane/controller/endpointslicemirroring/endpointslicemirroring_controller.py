"""The EndpointSlice mirroring controller: EndpointSlices for the Endpoints that users write
themselves, for Services without a selector (whose slices no other controller makes).

Upstream: pkg/controller/endpointslicemirroring/endpointslicemirroring_controller.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from ...api import errors, labels
from ...api.types import ObjectName, core_v1, discovery_v1
from ...client.tools.cache import ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item, retry_or_drop, run_workers
from ...utils.clock import REAL_CLOCK, Clock
from ..endpoint.endpoints_controller import LEADER_ANNOTATION
from ..endpointslice import utils as su
from ..endpointslice.endpointslice_controller import StaleInformerCache
from ..endpointslice.endpointslice_tracker import EndpointSliceTracker
from .metrics import ENDPOINTS_SYNC_DURATION
from .reconciler import CONTROLLER_NAME as MANAGED_BY, DEFAULT_MAX_ENDPOINTS_PER_SUBSET, Reconciler

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import EndpointSliceLister, EndpointsLister, ServiceLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

MAX_RETRIES = 15                 # upstream: maxRetries
LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"    # upstream: discovery.LabelSkipMirror
CONTROLLER_NAME = "endpointslice-mirroring-controller"


class _LogRecorder:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event %s %s: %s", type_, reason, message)


def should_mirror(endpoints: core_v1.Endpoints | None) -> bool:
    """Not labelled skip-mirror, not a leader-election record. Upstream: shouldMirror"""
    if endpoints is None:
        return False
    if (endpoints.metadata.labels or {}).get(LABEL_SKIP_MIRROR) == "true":
        return False
    return LEADER_ANNOTATION not in (endpoints.metadata.annotations or {})


class EndpointSliceMirroringController:
    """Upstream: endpointslicemirroring.Controller"""

    def __init__(self, endpoints_informer: ResourceInformer[EndpointsLister],
                 endpoint_slice_informer: ResourceInformer[EndpointSliceLister],
                 service_informer: ResourceInformer[ServiceLister], client: Clientset, *,
                 max_endpoints_per_subset: int = DEFAULT_MAX_ENDPOINTS_PER_SUBSET, clock: Clock = REAL_CLOCK,
                 recorder: EventRecorder | None = None) -> None:
        self.client, self.clock = client, clock
        self.recorder: EventRecorder = recorder if recorder is not None else cast("EventRecorder", _LogRecorder())
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="endpoint_slice_mirroring", clock=clock))
        self.endpoints_lister = endpoints_informer.lister()
        self.endpoint_slice_lister = endpoint_slice_informer.lister()
        self.service_lister = service_informer.lister()
        self._informers = [i.informer() for i in (endpoints_informer, endpoint_slice_informer, service_informer)]
        endpoints_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.on_endpoints_add, self.on_endpoints_update, self.on_endpoints_delete))
        endpoint_slice_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.on_endpoint_slice_add, self.on_endpoint_slice_update, self.on_endpoint_slice_delete))
        service_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.on_service_add, self.on_service_update, self.on_service_delete))
        self.endpoint_slice_tracker = EndpointSliceTracker()
        self.reconciler = Reconciler(client, self.endpoint_slice_tracker, self.recorder,
                                     max_endpoints_per_subset=max_endpoints_per_subset)
        self.sync_handler = self.sync_endpoints          # test seam

    async def run(self, workers: int = 5) -> None:
        """Upstream: Run (--mirroring-concurrent-service-endpoint-syncs, 5)"""
        log.info("Starting EndpointSliceMirroring controller")
        await run_workers(self.queue, self._informers, self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        retry_or_drop(self.queue, key, err, MAX_RETRIES, lambda: None,
                      lambda: log.warning("Retry budget exceeded, dropping endpoints out of the queue",
                                          extra={"key": str(key)}))

    def _queue(self, obj: Any) -> None:
        self.queue.add(ObjectName(obj.metadata.namespace or "", obj.metadata.name or ""))

    # --- handlers ------------------------------------------------------------------------------

    def on_service_add(self, svc: core_v1.Service) -> None:
        self._queue(svc)

    def on_service_update(self, old: core_v1.Service, cur: core_v1.Service) -> None:
        """Only a change of selector or type matters. Upstream: onServiceUpdate"""
        if old.spec is None or cur.spec is None or old.spec.selector != cur.spec.selector \
                or old.spec.type != cur.spec.type:
            self._queue(cur)

    def on_service_delete(self, obj: Any) -> None:
        if (svc := object_from_tombstone(obj, core_v1.Service)) is not None:
            self._queue(svc)

    def on_endpoints_add(self, ep: core_v1.Endpoints) -> None:
        if should_mirror(ep):
            self._queue(ep)

    def on_endpoints_update(self, old: core_v1.Endpoints, cur: core_v1.Endpoints) -> None:
        if should_mirror(cur) or should_mirror(old):
            self._queue(cur)

    def on_endpoints_delete(self, obj: Any) -> None:
        if (ep := object_from_tombstone(obj, core_v1.Endpoints)) is not None and should_mirror(ep):
            self._queue(ep)

    def _managed(self, s: discovery_v1.EndpointSlice) -> bool:
        return (s.metadata.labels or {}).get(su.LABEL_MANAGED_BY) == MANAGED_BY

    def _queue_for_slice(self, s: discovery_v1.EndpointSlice) -> None:
        if name := (s.metadata.labels or {}).get(su.LABEL_SERVICE_NAME):
            self.queue.add(ObjectName(s.metadata.namespace or "", name))

    def on_endpoint_slice_add(self, s: discovery_v1.EndpointSlice) -> None:
        if self._managed(s) and self.endpoint_slice_tracker.should_sync(s):
            self._queue_for_slice(s)

    def on_endpoint_slice_update(self, old: discovery_v1.EndpointSlice, cur: discovery_v1.EndpointSlice) -> None:
        if old.metadata.resource_version == cur.metadata.resource_version:
            return
        if self._managed(old) and not self._managed(cur):
            self._queue_for_slice(old)                 # handed over: the old owner resyncs
        if self._managed(cur) and self.endpoint_slice_tracker.should_sync(cur):
            self._queue_for_slice(cur)

    def on_endpoint_slice_delete(self, obj: Any) -> None:
        s = object_from_tombstone(obj, discovery_v1.EndpointSlice)
        if s is not None and self._managed(s) and self.endpoint_slice_tracker.has(s):
            if self.endpoint_slice_tracker.handle_deletion(s):
                self._queue_for_slice(s)

    # --- the sync ------------------------------------------------------------------------------

    def _mirrored_slices(self, namespace: str, name: str) -> list[discovery_v1.EndpointSlice]:
        selector = (labels.Requirement(su.LABEL_MANAGED_BY, "=", (MANAGED_BY,)),
                    labels.Requirement(su.LABEL_SERVICE_NAME, "=", (name,)))
        return [s for s in self.endpoint_slice_lister.endpointslices(namespace).list(selector)]

    async def delete_mirrored_slices(self, namespace: str, name: str) -> None:
        """Upstream: deleteMirroredSlices"""
        slices = self._mirrored_slices(namespace, name)
        if not slices:
            return
        self.endpoint_slice_tracker.delete_service(namespace, name)
        await self.reconciler.delete_endpoints((namespace, name), slices)

    async def sync_endpoints(self, key: ObjectName) -> None:
        """Mirror one Endpoints: only for an existing Service without a selector (not
        ExternalName), and an Endpoints that asks to be mirrored; otherwise its mirrored slices go.
        Upstream: syncEndpoints (and its endpoints_sync_duration, in whole milliseconds)"""
        start = self.clock.monotonic()
        try:
            await self._sync_endpoints(key)
        finally:
            ENDPOINTS_SYNC_DURATION.observe(int((self.clock.monotonic() - start) * 1000) / 1000)

    async def _sync_endpoints(self, key: ObjectName) -> None:
        namespace, name = key
        try:
            svc = self.service_lister.services(namespace).get(name)
        except errors.NotFound:
            self.endpoint_slice_tracker.delete_service(namespace, name)
            return
        if svc.spec is not None and svc.spec.type == "ExternalName":
            return
        if svc.spec is not None and svc.spec.selector is not None:
            await self.delete_mirrored_slices(namespace, name)
            return
        try:
            endpoints = self.endpoints_lister.endpoints(namespace).get(name)
        except errors.NotFound:
            await self.delete_mirrored_slices(namespace, name)
            return
        if not should_mirror(endpoints):
            await self.delete_mirrored_slices(namespace, name)
            return
        slices = [s for s in self._mirrored_slices(namespace, name) if s.metadata.deletion_timestamp is None]
        if self.endpoint_slice_tracker.stale_slices(key, slices):
            raise StaleInformerCache("EndpointSlice informer cache is out of date")
        await self.reconciler.reconcile(endpoints, slices)
