"""A simulated local-path provisioner: the dynamic provisioner kind ships, as data only.

kind installs rancher's local-path-provisioner and a default StorageClass `standard` for it
(WaitForFirstConsumer, reclaim Delete). This provisioner makes the same PersistentVolumes
for claims the PV binder hands it (annotation `volume.kubernetes.io/storage-provisioner:
rancher.io/local-path`) once the scheduler has picked their node
(`volume.kubernetes.io/selected-node`): a hostPath volume `<base>/pvc-<uid>_<ns>_<name>`
pinned to that node, claimRef already set, so the binder only finishes the binding. When such
a volume is Released under the Delete policy, it deletes it (the real one also removes the
directory with a helper pod; there is no directory here).

Upstream: github.com/rancher/local-path-provisioner (provisioner.go: Provision, Delete) on
sigs.k8s.io/sig-storage-lib-external-provisioner (controller.go: the claim/volume loops and
the Provisioning / ProvisioningSucceeded events).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ....api import errors
from ....api.types import core_v1, meta_v1
from ....client.tools.cache import ResourceEventHandlerFuncs, object_from_tombstone
from ....client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ....client.util.workqueue.worker import process_next_work_item
from ....utils.clock import REAL_CLOCK, Clock
from ...controller_utils import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from ....api.volume import (
    ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER, get_persistent_volume_claim_class,
)
from ....api.localpath import PROVISIONER_NAME

if TYPE_CHECKING:
    from ....client.clientset import Clientset
    from ....client.informers import ResourceInformer
    from ....client.listers import PersistentVolumeClaimLister, PersistentVolumeLister, StorageClassLister
    from ....client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# The event source the real provisioner reports as (its leader's identity).
COMPONENT = "rancher.io/local-path_local-path-provisioner"
# kind's local-path-config: nodePathMap DEFAULT_PATH_FOR_NON_LISTED_NODES.
BASE_PATH = "/var/local-path-provisioner"
ANN_PROVISIONER_SELECTED_NODE = "local.path.provisioner/selected-node"


def volume_for_claim(claim: core_v1.PersistentVolumeClaim, node: str, reclaim_policy: str) -> core_v1.PersistentVolume:
    """The PV local-path makes for claim on node. Upstream: LocalPathProvisioner.Provision"""
    name = f"pvc-{claim.metadata.uid}"
    path = f"{BASE_PATH}/{name}_{claim.metadata.namespace}_{claim.metadata.name}"
    storage = ((claim.spec.resources.requests if claim.spec.resources else None) or {}).get("storage", "0")
    term = core_v1.NodeSelectorTerm(match_expressions=[core_v1.NodeSelectorRequirement(
        key="kubernetes.io/hostname", operator="In", values=[node])])
    return core_v1.PersistentVolume(
        metadata=meta_v1.ObjectMeta(name=name, annotations={ANN_DYNAMICALLY_PROVISIONED: PROVISIONER_NAME,
                                                            ANN_PROVISIONER_SELECTED_NODE: node}),
        spec=core_v1.PersistentVolumeSpec(
            access_modes=list(claim.spec.access_modes or []) or None, capacity={"storage": storage},
            claim_ref=core_v1.ObjectReference(kind="PersistentVolumeClaim", api_version="v1",
                                              namespace=claim.metadata.namespace, name=claim.metadata.name,
                                              uid=claim.metadata.uid,
                                              resource_version=claim.metadata.resource_version),
            host_path=core_v1.HostPathVolumeSource(path=path, type="DirectoryOrCreate"),
            node_affinity=core_v1.VolumeNodeAffinity(required=core_v1.NodeSelector(node_selector_terms=[term])),
            persistent_volume_reclaim_policy=reclaim_policy,
            storage_class_name=get_persistent_volume_claim_class(claim) or None,
            volume_mode=claim.spec.volume_mode or "Filesystem"))


class LocalPathProvisioner:
    """Provisions claims handed to rancher.io/local-path, deletes their Released volumes."""

    def __init__(self, claim_informer: ResourceInformer[PersistentVolumeClaimLister],
                 volume_informer: ResourceInformer[PersistentVolumeLister],
                 class_informer: ResourceInformer[StorageClassLister], client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.recorder = recorder
        self.claim_lister = claim_informer.lister()
        self.volume_lister = volume_informer.lister()
        self.class_lister = class_informer.lister()
        self.claim_queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="local-path-claims", clock=clock))
        self.volume_queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="local-path-volumes", clock=clock))
        self._informers = [i.informer() for i in (claim_informer, volume_informer, class_informer)]
        claim_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self._enqueue_claim, lambda old, new: self._enqueue_claim(new), None))
        volume_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self._enqueue_volume, lambda old, new: self._enqueue_volume(new), None))

    def _enqueue_claim(self, obj: Any) -> None:
        claim = object_from_tombstone(obj, core_v1.PersistentVolumeClaim)
        if claim is not None and (claim.metadata.annotations or {}).get(ANN_STORAGE_PROVISIONER) == PROVISIONER_NAME:
            self.claim_queue.add(f"{claim.metadata.namespace}/{claim.metadata.name}")

    def _enqueue_volume(self, obj: Any) -> None:
        volume = object_from_tombstone(obj, core_v1.PersistentVolume)
        if volume is not None and \
                (volume.metadata.annotations or {}).get(ANN_DYNAMICALLY_PROVISIONED) == PROVISIONER_NAME:
            self.volume_queue.add(volume.metadata.name)

    def _event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(obj, type_, reason, message)

    async def run(self) -> None:
        try:
            for inf in self._informers:
                if not inf.has_synced():
                    await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._work(self.claim_queue, self.sync_claim))
                tg.create_task(self._work(self.volume_queue, self.sync_volume))
        finally:
            self.claim_queue.shut_down()
            self.volume_queue.shut_down()

    async def _work(self, queue: RateLimitingQueue[str], sync: Any) -> None:
        def handle_err(err: Exception | None, key: str) -> None:
            if err is None:
                queue.forget(key)
            else:
                log.info("local-path sync failed, requeuing", extra={"key": key, "err": str(err)})
                queue.add_rate_limited(key)
        while await process_next_work_item(queue, sync, handle_err):
            pass

    async def sync_claim(self, key: str) -> None:
        """Provision a volume for an unbound claim of ours whose node is chosen.

        Upstream: ProvisionController.syncClaim / provisionClaimOperation
        """
        namespace, _, name = key.partition("/")
        try:
            claim = self.claim_lister.persistentvolumeclaims(namespace).get(name)
        except errors.NotFound:
            return
        ann = claim.metadata.annotations or {}
        if claim.spec.volume_name or claim.metadata.deletion_timestamp is not None or \
                ann.get(ANN_STORAGE_PROVISIONER) != PROVISIONER_NAME:
            return
        try:
            self.volume_lister.get(f"pvc-{claim.metadata.uid}")
            return                                  # provisioned already; the binder binds it
        except errors.NotFound:
            pass
        node = ann.get(ANN_SELECTED_NODE)
        if not node:
            # local-path needs a node: it only works with WaitForFirstConsumer.
            self._event(claim, EVENT_TYPE_WARNING, "ProvisioningFailed",
                        "failed to provision volume with StorageClass "
                        f'"{get_persistent_volume_claim_class(claim)}": configuration error, no node was specified')
            return
        try:
            cls = self.class_lister.get(get_persistent_volume_claim_class(claim))
        except errors.NotFound:
            return
        self._event(claim, EVENT_TYPE_NORMAL, "Provisioning",
                    f'External provisioner is provisioning volume for claim "{namespace}/{name}"')
        volume = volume_for_claim(claim, node, cls.reclaim_policy or "Delete")
        try:
            await self.client.core_v1().persistentvolumes().create(volume)
        except errors.AlreadyExists:
            return
        self._event(claim, EVENT_TYPE_NORMAL, "ProvisioningSucceeded",
                    f"Successfully provisioned volume {volume.metadata.name}")

    async def sync_volume(self, name: str) -> None:
        """Delete our Released volumes under the Delete policy. Upstream: deleteVolumeOperation"""
        try:
            volume = self.volume_lister.get(name)
        except errors.NotFound:
            return
        if (volume.status.phase if volume.status else None) != "Released" or \
                volume.spec.persistent_volume_reclaim_policy != "Delete" or \
                volume.metadata.deletion_timestamp is not None:
            return
        try:
            await self.client.core_v1().persistentvolumes().delete(name)
        except errors.NotFound:
            return
