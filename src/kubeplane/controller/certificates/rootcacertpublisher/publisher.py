"""The root CA publisher: a `kube-root-ca.crt` ConfigMap holding the cluster CA in every
namespace, put back when deleted or changed. Pods read it through the projected volume the
ServiceAccount admission plugin mounts (the `ca.crt` of /var/run/secrets/kubernetes.io/serviceaccount).

Upstream: pkg/controller/certificates/rootcacertpublisher/publisher.go (NewPublisher,
configMapDeleted, configMapUpdated, namespaceAdded, namespaceUpdated, syncNamespace).

    pub = Publisher(clientset, factory.core_v1().configmaps(), factory.core_v1().namespaces(),
                    root_ca=ca_pem, clock=clock)
    factory.start()
    task = asyncio.create_task(pub.run())
"""
from __future__ import annotations

import logging
from typing import Any

from ....api import errors
from ....client.clientset import Clientset
from ....client.informers import ResourceInformer
from ....client.listers import ConfigMapLister, NamespaceLister
from ....client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ....client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ....client.util.workqueue.worker import forget_or_retry, process_next_work_item, run_workers
from ....utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

ROOT_CA_CERT_CONFIG_MAP_NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class Publisher:
    def __init__(self, clientset: Clientset, cm_informer: ResourceInformer[ConfigMapLister],
                 ns_informer: ResourceInformer[NamespaceLister], *, root_ca: bytes,
                 clock: Clock = REAL_CLOCK) -> None:
        if not root_ca:
            raise ValueError("root CA certificate can not be empty")       # upstream's NewPublisher check
        self.clientset = clientset
        self.root_ca = root_ca.decode()
        self.cm_lister = cm_informer.lister()
        self.cm_informer = cm_informer.informer()
        self.ns_informer = ns_informer.informer()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="root_ca_cert_publisher", clock=clock))
        self.sync_handler = self.sync_namespace          # test seam, as upstream's
        self.cm_informer.add_event_handler(ResourceEventHandlerFuncs(
            delete_func=self.config_map_deleted, update_func=self.config_map_updated))
        self.ns_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.namespace_added, update_func=self.namespace_updated))

    def config_map_deleted(self, obj: Any) -> None:
        """Upstream: configMapDeleted"""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if obj.metadata.name == ROOT_CA_CERT_CONFIG_MAP_NAME:
            self.queue.add(obj.metadata.namespace)

    def config_map_updated(self, old: Any, new: Any) -> None:
        """Upstream: configMapUpdated"""
        if new.metadata.name == ROOT_CA_CERT_CONFIG_MAP_NAME:
            self.queue.add(new.metadata.namespace)

    def namespace_added(self, ns: Any) -> None:
        """Upstream: namespaceAdded"""
        self.queue.add(ns.metadata.name)

    def namespace_updated(self, old: Any, new: Any) -> None:
        """Only an active namespace is worth a look. Upstream: namespaceUpdated"""
        if new.status is not None and new.status.phase == "Active":
            self.queue.add(new.metadata.name)

    async def run(self, workers: int = 1) -> None:
        """Wait for both informers (the caller starts them), then run the workers until cancelled.
        Upstream: Run (kube-controller-manager starts it with one worker)."""
        await run_workers(self.queue, (self.cm_informer, self.ns_informer), self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def sync_namespace(self, ns: str) -> None:
        """Create the ConfigMap, or put its data and description back. Upstream: syncNamespace"""
        data = {"ca.crt": self.root_ca}
        configmaps = self.clientset.core_v1().configmaps(ns)
        try:
            cm = self.cm_lister.configmaps(ns).get(ROOT_CA_CERT_CONFIG_MAP_NAME)
        except errors.NotFound:
            try:
                await configmaps.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                    "name": ROOT_CA_CERT_CONFIG_MAP_NAME, "namespace": ns,
                    "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}}, "data": data})
            except errors.StatusError as e:
                # don't retry a create if the namespace doesn't exist or is terminating
                if isinstance(e, errors.NotFound) or errors.has_status_cause(e, errors.NAMESPACE_TERMINATING_CAUSE):
                    return
                raise
            return
        annotations = dict(cm.metadata.annotations or {})
        if dict(cm.data or {}) == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        annotations[DESCRIPTION_ANNOTATION] = DESCRIPTION
        updated = cm.deep_copy()
        updated.data = data
        updated.metadata.annotations = annotations
        await configmaps.update(updated)
