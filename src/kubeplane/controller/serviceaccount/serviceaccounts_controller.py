"""The service account controller: a "default" ServiceAccount in every active namespace,
created when the namespace appears and created again when someone deletes it.

Upstream: pkg/controller/serviceaccount/serviceaccounts_controller.go. Pods need it: the
ServiceAccount admission plugin gives a pod without serviceAccountName the "default" one and
refuses the pod while it does not exist (it looks the default one up for ~1-2 s, the time this
controller usually takes, so a pod created right after its namespace is still admitted; a
controller creating pods retries on its own).

    sac = ServiceAccountsController(clientset, factory.core_v1().serviceaccounts(),
                                    factory.core_v1().namespaces(), clock=clock)
    factory.start()
    task = asyncio.create_task(sac.run())
"""
from __future__ import annotations

import logging
from typing import Any

from ...api import errors
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import NamespaceLister, ServiceAccountLister
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import forget_or_retry, process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

# Upstream: DefaultServiceAccountsControllerOptions — the accounts every namespace gets.
SERVICE_ACCOUNTS_TO_ENSURE = ("default",)


class ServiceAccountsController:
    def __init__(self, clientset: Clientset, sa_informer: ResourceInformer[ServiceAccountLister],
                 ns_informer: ResourceInformer[NamespaceLister], *, clock: Clock = REAL_CLOCK,
                 service_accounts: tuple[str, ...] = SERVICE_ACCOUNTS_TO_ENSURE) -> None:
        self.clientset = clientset
        self.service_accounts_to_ensure = service_accounts
        self.sa_lister = sa_informer.lister()
        self.sa_informer = sa_informer.informer()
        self.ns_lister = ns_informer.lister()
        self.ns_informer = ns_informer.informer()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="serviceaccount", clock=clock))
        # Test seam, as upstream's syncHandler.
        self.sync_handler = self.sync_namespace
        self.sa_informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=self.service_account_deleted))
        self.ns_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.namespace_added, update_func=self.namespace_updated))

    def service_account_deleted(self, obj: Any) -> None:
        """Look at the account's namespace again: it may need its default account back.
        Upstream: serviceAccountDeleted"""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        self.queue.add(obj.metadata.namespace)

    def namespace_added(self, ns: Any) -> None:
        """Upstream: namespaceAdded"""
        self.queue.add(ns.metadata.name)

    def namespace_updated(self, old: Any, new: Any) -> None:
        """Upstream: namespaceUpdated"""
        self.queue.add(new.metadata.name)

    async def run(self, workers: int = 1) -> None:
        """Wait for both informers (the caller starts them), then run the workers until cancelled.
        Upstream: Run (kube-controller-manager starts it with one worker)."""
        await run_workers(self.queue, (self.sa_informer, self.ns_informer), self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def sync_namespace(self, key: str) -> None:
        """Create the accounts an active namespace lacks. Upstream: syncNamespace"""
        try:
            ns = self.ns_lister.get(key)
        except errors.NotFound:
            return
        if ns.status is None or ns.status.phase != "Active":
            return                       # a terminating namespace gets nothing new
        failures: list[Exception] = []
        for name in self.service_accounts_to_ensure:
            try:
                self.sa_lister.serviceaccounts(key).get(name)
                continue
            except errors.NotFound:
                pass
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": key}}
            try:
                await self.clientset.core_v1().serviceaccounts(key).create(sa)
            except errors.AlreadyExists:
                pass
            except errors.StatusError as e:
                # a namespace that began terminating since we looked: nothing to do
                if not errors.has_status_cause(e, errors.NAMESPACE_TERMINATING_CAUSE):
                    failures.append(e)
        if failures:
            raise failures[0] if len(failures) == 1 else ExceptionGroup("create failures", failures)
