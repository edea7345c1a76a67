"""Creating, updating and deleting a StatefulSet's pods and claims, with upstream's events.

Writes go through the clientset, reads through the pod and claim listers
(`StatefulPodControlObjectManager`, a seam tests can replace).

Upstream: pkg/controller/statefulset/stateful_pod_control.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from ...api import errors
from ...api.types import apps_v1, core_v1
from .. import controller_utils as cu
from . import stateful_set_utils as ssu

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.listers import PersistentVolumeClaimLister, PodLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Upstream: retry.DefaultBackoff (4 steps) around the pod update.
_UPDATE_RETRIES = 4


class StatefulPodControlObjectManager(Protocol):
    """Pod and claim reads (listers) and writes (API). Upstream: StatefulPodControlObjectManager"""

    async def create_pod(self, pod: core_v1.Pod) -> None: ...

    def get_pod(self, namespace: str, name: str) -> core_v1.Pod: ...

    async def update_pod(self, pod: core_v1.Pod) -> None: ...

    async def delete_pod(self, pod: core_v1.Pod) -> None: ...

    async def create_claim(self, claim: core_v1.PersistentVolumeClaim) -> None: ...

    def get_claim(self, namespace: str, name: str) -> core_v1.PersistentVolumeClaim: ...

    async def update_claim(self, claim: core_v1.PersistentVolumeClaim) -> None: ...


class RealObjectManager:
    """Upstream: realStatefulPodControlObjectManager"""

    def __init__(self, client: Clientset, pod_lister: PodLister, claim_lister: PersistentVolumeClaimLister) -> None:
        self.client = client
        self.pod_lister = pod_lister
        self.claim_lister = claim_lister

    async def create_pod(self, pod: core_v1.Pod) -> None:
        await self.client.core_v1().pods(pod.metadata.namespace or "").create(pod)

    def get_pod(self, namespace: str, name: str) -> core_v1.Pod:
        return self.pod_lister.pods(namespace).get(name)

    async def update_pod(self, pod: core_v1.Pod) -> None:
        await self.client.core_v1().pods(pod.metadata.namespace or "").update(pod)

    async def delete_pod(self, pod: core_v1.Pod) -> None:
        await self.client.core_v1().pods(pod.metadata.namespace or "").delete(pod.metadata.name)

    async def create_claim(self, claim: core_v1.PersistentVolumeClaim) -> None:
        await self.client.core_v1().persistentvolumeclaims(claim.metadata.namespace or "").create(claim)

    def get_claim(self, namespace: str, name: str) -> core_v1.PersistentVolumeClaim:
        return self.claim_lister.persistentvolumeclaims(namespace).get(name)

    async def update_claim(self, claim: core_v1.PersistentVolumeClaim) -> None:
        await self.client.core_v1().persistentvolumeclaims(claim.metadata.namespace or "").update(claim)


class StatefulPodControl:
    """Upstream: StatefulPodControl"""

    def __init__(self, object_mgr: StatefulPodControlObjectManager, recorder: EventRecorder) -> None:
        self.object_mgr = object_mgr
        self.recorder = recorder

    async def create_stateful_pod(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
        """Claims first, then the pod, then claim owner refs per the retention policy.

        An AlreadyExists pod is raised without an event. Upstream: CreateStatefulPod
        """
        try:
            await self.create_persistent_volume_claims(s, pod)
        except Exception as err:
            self.record_pod_event("create", s, pod, err)
            raise
        try:
            await self.object_mgr.create_pod(pod)
        except errors.AlreadyExists:
            raise
        except Exception as err:
            self.record_pod_event("create", s, pod, err)
            raise
        try:
            await self.update_pod_claim_for_retention_policy(s, pod)
        except Exception as err:
            self.record_pod_event("update", s, pod, err)
            raise
        self.record_pod_event("create", s, pod, None)

    async def update_stateful_pod(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
        """Restore identity, storage and claim ownership; update the pod if any changed,
        re-reading it on a conflict. pod is a private copy. Upstream: UpdateStatefulPod"""
        attempted = False
        err: Exception | None = None
        for _ in range(_UPDATE_RETRIES):
            err = None
            try:
                if not await self._make_consistent(s, pod):
                    break
                attempted = True
                await self.object_mgr.update_pod(pod)
                break
            except errors.Conflict as conflict:
                err = conflict
                try:
                    pod = self.object_mgr.get_pod(s.metadata.namespace or "", pod.metadata.name).deep_copy()
                except errors.StatusError as get_err:
                    log.error("error getting updated Pod", extra={"pod": pod.metadata.name, "err": str(get_err)})
            except Exception as other:
                err = other
                break
        if attempted:
            self.record_pod_event("update", s, pod, err)
        if err is not None:
            raise err

    async def _make_consistent(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
        """Fix pod (in place) and its claims; True when the pod itself must be written."""
        dirty = False
        if not ssu.identity_matches(s, pod):
            ssu.update_identity(s, pod)
            dirty = True
        if not ssu.storage_matches(s, pod):
            ssu.update_storage(s, pod)
            dirty = True
            try:
                await self.create_persistent_volume_claims(s, pod)
            except Exception as err:
                self.record_pod_event("update", s, pod, err)
                raise
        try:
            if not self.claims_match_retention_policy(s, pod):
                await self.update_pod_claim_for_retention_policy(s, pod)
                dirty = True
        except Exception as err:
            self.record_pod_event("update", s, pod, err)
            raise
        return dirty

    async def delete_stateful_pod(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
        """Upstream: DeleteStatefulPod"""
        try:
            await self.object_mgr.delete_pod(pod)
        except Exception as err:
            self.record_pod_event("delete", s, pod, err)
            raise
        self.record_pod_event("delete", s, pod, None)

    def claims_match_retention_policy(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
        """Whether every existing claim of pod has the owner refs the policy asks for (missing
        claims are picked up on a later sync). Upstream: ClaimsMatchRetentionPolicy"""
        ordinal = ssu.get_ordinal(pod)
        for template in s.spec.volume_claim_templates or []:
            name = ssu.get_persistent_volume_claim_name(s, template, ordinal)
            try:
                claim = self.object_mgr.get_claim(s.metadata.namespace or "", name)
            except errors.NotFound:
                continue
            if not ssu.is_claim_owner_up_to_date(claim, s, pod):
                return False
        return True

    async def update_pod_claim_for_retention_policy(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
        """Rewrite the owner refs of pod's claims to match the policy. Upstream: UpdatePodClaimForRetentionPolicy"""
        ordinal = ssu.get_ordinal(pod)
        for template in s.spec.volume_claim_templates or []:
            name = ssu.get_persistent_volume_claim_name(s, template, ordinal)
            try:
                claim = self.object_mgr.get_claim(s.metadata.namespace or "", name)
            except errors.NotFound:
                continue
            if ssu.has_unexpected_controller(claim, s, pod):
                self.recorder.event(s, cu.EVENT_TYPE_WARNING, "ConflictingController",
                                    f"PersistentVolumeClaim {name} has a conflicting OwnerReference that acts as a "
                                    "manging controller, the retention policy is ignored for this claim")
            if not ssu.is_claim_owner_up_to_date(claim, s, pod):
                claim = claim.deep_copy()
                ssu.update_claim_owner_ref_for_set_and_pod(claim, s, pod)
                try:
                    await self.object_mgr.update_claim(claim)
                except Exception as err:
                    raise RuntimeError(f"could not update claim {name} for delete policy ownerRefs: {err}") from err

    def pod_claim_is_stale(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
        """Under whenScaled Delete, a claim still owned by an earlier pod of that name (its
        garbage collection pending) blocks creating the pod. Upstream: PodClaimIsStale"""
        if ssu.get_persistent_volume_claim_retention_policy(s).when_scaled == ssu.RETAIN:
            return False
        for claim in ssu.get_persistent_volume_claims(s, pod).values():
            try:
                pvc = self.object_mgr.get_claim(claim.metadata.namespace or "", claim.metadata.name)
            except errors.NotFound:
                continue
            if ssu.has_stale_owner_ref(pvc, pod, ssu.POD_KIND):
                return True
        return False

    async def create_missing_persistent_volume_claims(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
        """Upstream: createMissingPersistentVolumeClaims"""
        await self.create_persistent_volume_claims(s, pod)
        try:
            await self.update_pod_claim_for_retention_policy(s, pod)
        except Exception as err:
            self.record_pod_event("update", s, pod, err)
            raise

    async def create_persistent_volume_claims(self, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
        """Create the pod's missing claims; a claim being deleted is an error (the pod must wait).

        Upstream: createPersistentVolumeClaims
        """
        errs: list[Exception] = []
        for claim in ssu.get_persistent_volume_claims(s, pod).values():
            try:
                pvc = self.object_mgr.get_claim(claim.metadata.namespace or "", claim.metadata.name)
            except errors.NotFound:
                try:
                    await self.object_mgr.create_claim(claim)
                except errors.AlreadyExists as err:
                    errs.append(RuntimeError(f"failed to create PVC {claim.metadata.name}: {err}"))
                except Exception as err:
                    errs.append(RuntimeError(f"failed to create PVC {claim.metadata.name}: {err}"))
                    self.record_claim_event("create", s, pod, claim, err)
                else:
                    self.record_claim_event("create", s, pod, claim, None)
                continue
            except Exception as err:
                errs.append(RuntimeError(f"failed to retrieve PVC {claim.metadata.name}: {err}"))
                self.record_claim_event("create", s, pod, claim, err)
                continue
            if pvc.metadata.deletion_timestamp is not None:
                errs.append(RuntimeError(f"pvc {claim.metadata.name} is being deleted"))
        if (agg := cu.new_aggregate(errs)) is not None:
            raise agg

    def record_pod_event(self, verb: str, s: apps_v1.StatefulSet, pod: core_v1.Pod, err: Exception | None) -> None:
        """Successful<Verb> "<verb> Pod web-0 in StatefulSet web successful", or Failed<Verb>
        "... failed error: <err>". Upstream: recordPodEvent"""
        if err is None:
            self.recorder.event(s, cu.EVENT_TYPE_NORMAL, f"Successful{verb.title()}",
                                f"{verb.lower()} Pod {pod.metadata.name} in StatefulSet {s.metadata.name} successful")
        else:
            self.recorder.event(s, cu.EVENT_TYPE_WARNING, f"Failed{verb.title()}",
                                f"{verb.lower()} Pod {pod.metadata.name} in StatefulSet {s.metadata.name} "
                                f"failed error: {err}")

    def record_claim_event(self, verb: str, s: apps_v1.StatefulSet, pod: core_v1.Pod,
                           claim: core_v1.PersistentVolumeClaim, err: Exception | None) -> None:
        """Upstream: recordClaimEvent"""
        if err is None:
            self.recorder.event(s, cu.EVENT_TYPE_NORMAL, f"Successful{verb.title()}",
                                f"{verb.lower()} Claim {claim.metadata.name} Pod {pod.metadata.name} in StatefulSet "
                                f"{s.metadata.name} success")
        else:
            self.recorder.event(s, cu.EVENT_TYPE_WARNING, f"Failed{verb.title()}",
                                f"{verb.lower()} Claim {claim.metadata.name} for Pod {pod.metadata.name} in "
                                f"StatefulSet {s.metadata.name} failed error: {err}")
