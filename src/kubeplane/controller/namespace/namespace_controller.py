"""The namespace controller: empties a namespace being deleted, then finalizes it.

Upstream: pkg/controller/namespace/namespace_controller.go. Deleting a namespace only marks it
(status.phase Terminating, deletionTimestamp) while spec.finalizers holds "kubernetes"; this
controller deletes every namespaced object in it, waits until they are gone, then removes the
token through /finalize and the API server deletes the namespace.

    nc = NamespaceController(clientset, factory.core_v1().namespaces(), clock=clock)
    factory.start()
    task = asyncio.create_task(nc.run())
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...api import errors
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import NamespaceLister
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, meta_namespace_key_func
from ...client.util.workqueue import (
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimitingQueue,
    RateLimitingQueueOptions,
)
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock
from .deletion import NamespacedResourcesDeleter, ResourcesRemainingError

log = logging.getLogger(__name__)

# Wait before acting on a deleted namespace, so that HA API servers observe the deletion and
# last-minute creations inside the namespace land before we list its content.
NAMESPACE_DELETION_GRACE_PERIOD = 5.0


class NamespaceController:
    def __init__(self, clientset: Clientset, ns_informer: ResourceInformer[NamespaceLister], *, clock: Clock = REAL_CLOCK,
                 workers: int = 10, finalizer_token: str = "kubernetes") -> None:
        self.clientset = clientset
        self.clock = clock
        self.workers = workers
        self.lister = ns_informer.lister()
        self.informer = ns_informer.informer()
        # namespace deletion is heavy: back off up to a minute per namespace, 10 qps overall.
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(
            name="namespace", clock=clock,
            rate_limiter=MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 60.0),
                                          BucketRateLimiter(10, 100, clock=clock))))
        self.namespaced_resources_deleter = NamespacedResourcesDeleter(clientset, clock=clock,
                                                                       finalizer_token=finalizer_token)
        self.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue_namespace,
            update_func=lambda old, new: self.enqueue_namespace(new)))

    def enqueue_namespace(self, ns: Any) -> None:
        """Queue a namespace being deleted, after the grace period. Upstream: enqueueNamespace"""
        if isinstance(ns, DeletedFinalStateUnknown) or ns.metadata.deletion_timestamp is None:
            return
        self.queue.add_after(meta_namespace_key_func(ns), NAMESPACE_DELETION_GRACE_PERIOD)

    async def run(self) -> None:
        """Wait for the namespace informer (the caller starts it), then run the workers until cancelled.

        Upstream: Run
        """
        try:
            await self.informer.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for _ in range(self.workers):
                    tg.create_task(self.worker())
        finally:
            self.queue.shut_down()

    async def worker(self) -> None:
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """One namespace: done, requeue after the estimate, or back off on an error.

        Upstream: worker's workFunc
        """
        return await process_next_work_item(self.queue, self.sync_namespace_from_key, self.handle_err)

    def handle_err(self, err: Exception | None, key: str) -> None:
        if err is None:
            self.queue.forget(key)
        elif isinstance(err, ResourcesRemainingError):
            # e.g. pods with a 30 s grace period: look again in 30/2 + 1 = 16 s.
            self.queue.add_after(key, err.estimate // 2 + 1)
        else:                                         # every failure is retried
            log.warning("deletion of namespace %s failed: %s", key, err)
            self.queue.add_rate_limited(key)

    async def sync_namespace_from_key(self, key: str) -> None:
        """Upstream: syncNamespaceFromKey"""
        try:
            namespace = self.lister.get(key)
        except errors.NotFound:
            return
        await self.namespaced_resources_deleter.delete(namespace.metadata.name)
