"""The EndpointSlice controller: for every Service with a selector, EndpointSlices listing the
pods it selects (at most --max-endpoints-per-slice each), with their readiness.

Handlers enqueue Service keys; sync_service re-reads the listers and hands the Service, its
pods and its slices to the Reconciler. Upstream: pkg/controller/endpointslice/endpointslice_controller.go
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ...api import errors, labels
from ...api.types import ObjectName, core_v1, discovery_v1
from ...client.tools.cache import ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item, retry_or_drop, run_workers
from ...utils.clock import REAL_CLOCK, Clock
from ..endpoint import util as eu
from ..endpoint.trigger_time_tracker import TriggerTimeTracker
from . import utils as u
from .endpointslice_tracker import EndpointSliceTracker
from . import metrics
from .topologycache import LABEL_TOPOLOGY_ZONE, TopologyCache, is_node_ready
from .reconciler import DEFAULT_MAX_ENDPOINTS_PER_SLICE, Reconciler

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import EndpointSliceLister, NodeLister, PodLister, ServiceLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Upstream: maxRetries — 15 retries with back-off, then the Service is dropped until it changes.
MAX_RETRIES = 15
CONTROLLER_NAME = "endpointslice-controller"


class StaleInformerCache(Exception):
    """Upstream: endpointslicepkg.StaleInformerCache"""


# Node events within this many seconds make one recomputation of the zones' CPU shares.
TOPOLOGY_CHECK_DELAY = 0.5


class EndpointSliceController(eu.PodHandlers):
    """Upstream: endpointslice.Controller"""

    def __init__(self, pod_informer: ResourceInformer[PodLister], service_informer: ResourceInformer[ServiceLister],
                 node_informer: ResourceInformer[NodeLister],
                 endpoint_slice_informer: ResourceInformer[EndpointSliceLister], client: Clientset, *,
                 max_endpoints_per_slice: int = DEFAULT_MAX_ENDPOINTS_PER_SLICE, endpoint_updates_batch_period: float = 0.0,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder if recorder is not None else eu.LogRecorder()
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="endpoint_slice", clock=clock))
        self.endpoint_updates_batch_period = endpoint_updates_batch_period
        self.pod_lister = pod_informer.lister()
        self.service_lister = service_informer.lister()
        self.node_lister = node_informer.lister()
        self.endpoint_slice_lister = endpoint_slice_informer.lister()
        self._informers = [i.informer() for i in (pod_informer, service_informer, node_informer,
                                                   endpoint_slice_informer)]
        service_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.on_service_update_or_add, lambda old, cur: self.on_service_update_or_add(cur), self.on_service_delete))
        pod_informer.informer().add_event_handler(ResourceEventHandlerFuncs(self.add_pod, self.update_pod,
                                                                            self.delete_pod))
        endpoint_slice_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.on_endpoint_slice_add, self.on_endpoint_slice_update, self.on_endpoint_slice_delete))
        self.endpoint_slice_tracker = EndpointSliceTracker()
        self.trigger_time_tracker = TriggerTimeTracker()
        # Upstream: TopologyAwareHints (GA): a topology cache fed by node events.
        self.topology_cache = TopologyCache()
        self._topology_check: asyncio.TimerHandle | None = None
        node_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            lambda node: self.node_topology_changed(), self.update_node, lambda obj: self.node_topology_changed()))
        self.reconciler = Reconciler(client, self.node_lister, self.endpoint_slice_tracker,
                                     max_endpoints_per_slice=max_endpoints_per_slice,
                                     topology_cache=self.topology_cache, recorder=self.recorder)
        self.sync_handler = self.sync_service          # test seam

    async def run(self, workers: int = 5) -> None:
        """Upstream: Run (--concurrent-service-endpoint-syncs, 5)"""
        log.info("Starting endpoint slice controller")
        await run_workers(self.queue, self._informers, self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        """Upstream: handleErr — retry with back-off up to MAX_RETRIES, then drop."""
        metrics.track_sync(err, StaleInformerCache)
        extra = {"key": str(key), "err": str(err)}
        retry_or_drop(self.queue, key, err, MAX_RETRIES,
                      lambda: log.info("Error syncing endpoint slices for service, retrying", extra=extra),
                      lambda: log.warning("Retry budget exceeded, dropping service out of the queue", extra=extra))

    # --- handlers ------------------------------------------------------------------------------

    def update_node(self, old: core_v1.Node, cur: core_v1.Node) -> None:
        """Only readiness and the zone label move the zones' CPU shares. Upstream: updateNode"""
        if (is_node_ready(old) != is_node_ready(cur) or (old.metadata.labels or {}).get(LABEL_TOPOLOGY_ZONE)
                != (cur.metadata.labels or {}).get(LABEL_TOPOLOGY_ZONE)):
            self.node_topology_changed()

    def node_topology_changed(self) -> None:
        """Recompute the zones' shares soon, once for a burst of node events (a thousand nodes
        registering would otherwise list every node a thousand times)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.check_node_topology_distribution()
            return
        if self._topology_check is None:
            self._topology_check = loop.call_later(TOPOLOGY_CHECK_DELAY, self._run_topology_check)

    def _run_topology_check(self) -> None:
        self._topology_check = None
        self.check_node_topology_distribution()

    def check_node_topology_distribution(self) -> None:
        """Recompute the zones' CPU shares; Services whose hints now overload a zone resync.
        Upstream: checkNodeTopologyDistribution"""
        self.topology_cache.set_nodes(self.node_lister.list())
        for key in self.topology_cache.get_overloaded_services():
            namespace, _, name = key.partition("/")
            self.queue.add(ObjectName(namespace, name))

    def on_service_update_or_add(self, svc: core_v1.Service) -> None:
        """Upstream: onServiceUpdate"""
        self.queue.add(ObjectName(svc.metadata.namespace or "", svc.metadata.name or ""))

    def on_service_delete(self, obj: Any) -> None:
        """Upstream: onServiceDelete"""
        svc = object_from_tombstone(obj, core_v1.Service)
        if svc is not None:
            self.queue.add(ObjectName(svc.metadata.namespace or "", svc.metadata.name or ""))

    def _managed(self, s: discovery_v1.EndpointSlice) -> bool:
        return (s.metadata.labels or {}).get(u.LABEL_MANAGED_BY) == u.CONTROLLER_NAME

    def _queue_service_for_slice(self, s: discovery_v1.EndpointSlice) -> None:
        name = (s.metadata.labels or {}).get(u.LABEL_SERVICE_NAME)
        if name:
            # Upstream: endpointSliceChangeMinSyncDelay (1 s), so bursts of slice events coalesce.
            self.queue.add_after(ObjectName(s.metadata.namespace or "", name), 1.0)

    def on_endpoint_slice_add(self, s: discovery_v1.EndpointSlice) -> None:
        """A slice we did not write (or newer than we wrote) makes its Service resync.
        Upstream: onEndpointSliceAdd"""
        if self._managed(s) and self.endpoint_slice_tracker.should_sync(s):
            self._queue_service_for_slice(s)

    def on_endpoint_slice_update(self, old: discovery_v1.EndpointSlice, cur: discovery_v1.EndpointSlice) -> None:
        """A slice whose service-name or managed-by label changed concerns both Services.
        Upstream: onEndpointSliceUpdate"""
        if old.metadata.resource_version == cur.metadata.resource_version:
            return
        old_labels, cur_labels = old.metadata.labels or {}, cur.metadata.labels or {}
        if (old_labels.get(u.LABEL_SERVICE_NAME) != cur_labels.get(u.LABEL_SERVICE_NAME)
                or old_labels.get(u.LABEL_MANAGED_BY) != cur_labels.get(u.LABEL_MANAGED_BY)):
            if self._managed(old):
                self._queue_service_for_slice(old)
            if self._managed(cur):
                self._queue_service_for_slice(cur)
            return
        if self._managed(cur) and self.endpoint_slice_tracker.should_sync(cur):
            self._queue_service_for_slice(cur)

    def on_endpoint_slice_delete(self, obj: Any) -> None:
        """Upstream: onEndpointSliceDelete"""
        s = object_from_tombstone(obj, discovery_v1.EndpointSlice)
        if s is not None and self._managed(s) and self.endpoint_slice_tracker.has(s):
            if self.endpoint_slice_tracker.handle_deletion(s):
                self._queue_service_for_slice(s)

    # --- the sync ------------------------------------------------------------------------------

    async def sync_service(self, key: ObjectName) -> None:
        """Converge one Service's EndpointSlices.

        1. Gone: forget its trackers, done. ExternalName or no selector: not ours.
        2. Its pods (by selector) and its slices (service-name + managed-by labels), those
           being deleted left out.
        3. If the slice informer lags our own writes, retry later rather than duplicate.
        4. Reconcile; a failure becomes a FailedToUpdateEndpointSlices event and a retry.
        Upstream: syncService
        """
        namespace, name = key
        try:
            service = self.service_lister.services(namespace).get(name)
        except errors.NotFound:
            self.trigger_time_tracker.delete_service(namespace, name)
            self.endpoint_slice_tracker.delete_service(namespace, name)
            self.reconciler.delete_service(namespace, name)
            return
        if service.spec is None or service.spec.type == "ExternalName":
            return                      # no endpoints for ExternalName (#105986)
        selector = eu.service_selector(service)
        if selector is None:
            return                      # slices of selector-less Services are written by their users
        pods = self.pod_lister.pods(namespace).list(selector)
        slice_selector = (labels.Requirement(u.LABEL_MANAGED_BY, "=", (u.CONTROLLER_NAME,)),
                          labels.Requirement(u.LABEL_SERVICE_NAME, "=", (name,)))
        slices = [s for s in self.endpoint_slice_lister.endpointslices(namespace).list(slice_selector)
                  if s.metadata.deletion_timestamp is None]
        if self.endpoint_slice_tracker.stale_slices(key, slices):
            raise StaleInformerCache("EndpointSlice informer cache is out of date")
        # Computed even if the sync writes nothing, so the tracker's state moves on.
        trigger_time = self.trigger_time_tracker.compute_endpoint_last_change_trigger_time(namespace, service, pods)
        try:
            await self.reconciler.reconcile(service, pods, slices, trigger_time)
        except Exception as err:
            self.recorder.event(service, "Warning", "FailedToUpdateEndpointSlices",
                                f"Error updating Endpoint Slices for Service {namespace}/{name}: {err}")
            raise
