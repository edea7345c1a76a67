"""The resource quota controller: keeps every ResourceQuota's `status.hard` equal to its spec and
`status.used` equal to what its namespace really uses.

The admission plugin charges each write as it happens; this controller computes usage from
scratch (every object of each tracked resource in the namespace) when a quota is created or its
hard limits change, when objects give usage back (a pod deleted or finished, a service that
stops being a NodePort, a PVC deleted, any custom object deleted: the QuotaMonitor), and every
`resync_period` for every quota, which also corrects charges for writes that admission let
through but that then failed. Custom resources (`count/widgets.example.com`) are learnt from
discovery, re-read every 30 s as upstream's Sync and at once when a CRD changes what is served
(controller/resource_discovery.py).

A quota whose status is missing usage for something it tracks blocks admission ("status unknown
for quota") until it is computed, so those go to a priority queue with workers of their own.

    rq = ResourceQuotaController(factory.informer_for("", "v1", "resourcequotas"), factory, clientset)
    factory.start()
    await rq.run()

Upstream: pkg/controller/resourcequota/resource_quota_controller.go (Controller,
syncResourceQuota, replenishQuota, addQuota, enqueueAll, Sync) and resource_quota_monitor.go.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from ...api import errors, types
from ...api.resources import ResourceInfo, served_resources
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.metadata import MetadataClient, custom_resources
from ...client.rest import ResourceClient
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, meta_namespace_key_func
from ...client.tools.cache.listers import GenericLister
from ...client.tools.cache.store import NAMESPACE_INDEX
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item
from ...quota import resources as q
from ...quota.evaluator.core import Registry, new_registry
from ...quota.generic import Obj
from ...quota.usage import calculate_usage
from ...utils.clock import REAL_CLOCK, Clock
from ..resource_discovery import DiscoveryTrigger
from .resource_quota_monitor import InformerSource, QuotaMonitor
from .sync import needs_usage_calculation, quota_status, quotas_to_replenish

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResourceQuotaControllerOptions:
    workers: int = 5                 # --concurrent-resource-quota-syncs
    resync_period: float = 300.0     # --resource-quota-sync-period (seconds): full recalculation


class ResourceQuotaController:
    """Upstream: resourcequota.Controller."""

    def __init__(self, rq_informer: ResourceInformer[GenericLister[Any]], factory: InformerSource,
                 clientset: Clientset, *, clock: Clock = REAL_CLOCK,
                 options: ResourceQuotaControllerOptions = ResourceQuotaControllerOptions()) -> None:
        self.clientset = clientset
        self.clock = clock
        self.options = options
        self.rq_informer = rq_informer.informer()
        self.rq_lister = rq_informer.lister()
        self.registry: Registry = new_registry(clock)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="resourcequota_primary", clock=clock))
        # quotas that lack usage block admission: computed first, by workers of their own.
        self.missing_usage_queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="resourcequota_priority", clock=clock))
        self.sync_handler = self.sync_resource_quota_from_key          # test seam
        self.rq_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_quota, update_func=self.update_quota, delete_func=self.enqueue_resource_quota))
        self.monitor = QuotaMonitor(factory, self.replenish_quota, clock=clock, transport=clientset.transport,
                                    has_quotas=self.namespace_has_quotas)
        self.discovery = DiscoveryTrigger(factory, clock)
        # the custom resources discovery last gave, by (group, plural)
        self.custom: dict[tuple[str, str], ResourceInfo] = {}

    # --- event handlers ------------------------------------------------------------------

    def add_quota(self, rq: Any) -> None:
        """Queue a quota, on the priority queue if its usage must be computed. Upstream: addQuota."""
        key = meta_namespace_key_func(rq)
        if needs_usage_calculation(types.to_dict(rq), self.registry):
            self.missing_usage_queue.add(key)
        else:
            self.queue.add(key)

    def update_quota(self, old: Any, cur: Any) -> None:
        """Only a change of the hard limits needs a sync (status writes come back here too)."""
        old_hard = (old.spec.hard if old.spec else None) or {}
        cur_hard = (cur.spec.hard if cur.spec else None) or {}
        try:
            if q.equals(q.parse_list(old_hard), q.parse_list(cur_hard)):
                return
        except ValueError:
            pass
        self.add_quota(cur)

    def enqueue_resource_quota(self, rq: Any) -> None:
        if isinstance(rq, DeletedFinalStateUnknown):
            self.queue.add(rq.key)
            return
        self.queue.add(meta_namespace_key_func(rq))

    def namespace_has_quotas(self, namespace: str) -> bool:
        """Whether the namespace holds a ResourceQuota: replenish_quota's "check if this namespace
        even has a quota" as one lookup in the lister's namespace index, which the monitor asks
        before it looks at an event at all."""
        return self.rq_lister.indexer.has_index_value(NAMESPACE_INDEX, namespace)

    def replenish_quota(self, group: str, resource: str, namespace: str) -> None:
        """Queue the namespace's quotas tracking something of group/resource (an object of it
        gave usage back). Upstream: replenishQuota."""
        evaluator = self.registry.get(group, resource)
        if evaluator is None:
            return
        quotas = [types.to_dict(rq) for rq in self.rq_lister.namespace(namespace).list()]
        for rq in quotas_to_replenish(quotas, evaluator):
            self.queue.add(f"{namespace}/{rq['metadata']['name']}")

    def enqueue_all(self) -> None:
        """Every quota, rate limited (the periodic full recalculation). Upstream: enqueueAll."""
        for rq in self.rq_lister.list():
            self.queue.add_rate_limited(meta_namespace_key_func(rq))

    # --- workers -------------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the informers (the caller starts the factory), then run until cancelled."""
        try:
            await self.rq_informer.wait_synced()
            await self.monitor.wait_synced()
            await self.sync_resources()
            async with asyncio.TaskGroup() as tg:
                for _ in range(self.options.workers):
                    tg.create_task(self.worker(self.queue))
                    tg.create_task(self.worker(self.missing_usage_queue))
                tg.create_task(self.resync_loop())
                tg.create_task(self.discovery_loop())
        finally:
            self.queue.shut_down()
            self.missing_usage_queue.shut_down()
            await self.monitor.stop_runtime_monitors()

    async def discovery_loop(self) -> None:
        """Upstream: Sync(discoveryFunc, 30s) — here also woken by CRD events."""
        while True:
            await self.discovery.wait()
            await self.sync_resources()

    async def sync_resources(self) -> None:
        """Read discovery and monitor the quotable custom resources it lists; a failed read
        keeps what is monitored (tried again next time). Upstream: Sync / resyncMonitors."""
        try:
            found = self.discovery.without_deleted(await custom_resources(self.clientset.transport))
        except Exception as e:                      # noqa: BLE001 - discovery is retried next period
            log.warning("resource quota controller: failed to discover resources: %s", e)
            return
        self.custom = {(ri.group, ri.plural): ri for ri in found}
        self.monitor.sync_monitors(found)

    async def resync_loop(self) -> None:
        """Upstream: wait.Until(enqueueAll, resyncPeriod)."""
        while True:
            self.enqueue_all()
            await self.clock.sleep(self.options.resync_period)

    async def worker(self, queue: RateLimitingQueue[str]) -> None:
        def handle_err(err: Exception | None, key: str) -> None:
            if err is None:
                queue.forget(key)
                return
            log.info("Error syncing resource quota", extra={"resourcequota": key, "err": repr(err)})
            queue.add_rate_limited(key)

        while await process_next_work_item(queue, self.sync_handler, handle_err):
            pass

    # --- sync ----------------------------------------------------------------------------

    async def sync_resource_quota_from_key(self, key: str) -> None:
        ns, name = key.split("/", 1)
        try:
            rq = self.rq_lister.namespace(ns).get(name)
        except errors.NotFound:
            return
        await self.sync_resource_quota(types.to_dict(rq))

    async def sync_resource_quota(self, rq: Obj) -> None:
        """Recompute usage and write the status if it changed. Upstream: syncResourceQuota."""
        ns = rq["metadata"]["namespace"]
        spec = rq.get("spec") or {}
        try:
            hard = q.parse_list(spec.get("hard"))
        except ValueError as e:
            log.warning("Skipping resource quota with a malformed quantity", extra={"resourcequota": ns, "err": str(e)})
            return
        new_usage, errs = await calculate_usage(ns, spec.get("scopes"), hard, self.registry,
                                                spec.get("scopeSelector"), self.list_items)
        status, dirty = quota_status(rq, hard, new_usage)
        if dirty:
            client = self.quota_client(ns)
            await client.update_status(types.from_dict({**rq, "status": status}, client.type))
        if errs:
            raise errs[0]

    def quota_client(self, ns: str) -> ResourceClient[Any]:
        return self.clientset.core_v1().resource("resourcequotas", ns)

    async def list_items(self, group: str, resource: str, namespace: str) -> list[Obj]:
        """The objects of a resource in a namespace: from the monitor's cache when it watches
        the resource, else listed from the API server (a resource that is not served has none)."""
        cached = self.monitor.list(group, resource, namespace)
        if cached is not None:
            return cached
        custom = self.custom.get((group, resource))
        if custom is not None:              # counted: its objects' metadata is enough
            return [types.to_dict(o) for o in (await MetadataClient(self.clientset.transport, custom, namespace)
                                               .list()).items or []]
        ri = served(group, resource)
        if ri is None:
            return []
        client: ResourceClient[Any] = ResourceClient(self.clientset.transport, ri, namespace)
        return [types.to_dict(o) for o in (await client.list()).items]


def served(group: str, resource: str) -> ResourceInfo | None:
    """The served version of group/resource, if any."""
    return next((r for r in served_resources() if r.group == group and r.plural == resource), None)
