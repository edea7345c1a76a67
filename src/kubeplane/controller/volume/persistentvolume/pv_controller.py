"""The PersistentVolume binder's syncs: bind claims to volumes, track phases, reclaim.

A claim is bound when claim.spec.volumeName names a volume whose spec.claimRef points back at
the claim (UID included); the controller writes the volume side first, then the claim side, so
a crash in between is repaired by the next sync. `pv.kubernetes.io/bind-completed` on a claim
says the binding was finished once; `pv.kubernetes.io/bound-by-controller` on either side says
the controller (not the user) wrote that side's reference.

Phases: a claim is Pending, Bound or Lost; a volume Available, Bound, Released (its claim is
gone) or Failed. Released volumes are reclaimed by their policy: Retain keeps them, Delete
deletes them (a dynamically provisioned volume is deleted by its external provisioner).

Upstream: pkg/controller/volume/persistentvolume/pv_controller.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ....api import errors
from ....api.types import core_v1
from ... import controller_utils as cu
from ....api.volume import (
    ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER, NOT_SUPPORTED_PROVISIONER, check_access_modes,
    find_matching_volume, get_persistent_volume_claim_class, get_persistent_volume_class, has_annotation,
    is_delay_binding_mode, is_volume_bound_to_claim, storage_request, volume_capacity, volume_mode_mismatch,
)

if TYPE_CHECKING:
    from .pv_controller_base import PersistentVolumeController

log = logging.getLogger(__name__)

# Event reasons. Upstream: pkg/controller/volume/events
FAILED_BINDING = "FailedBinding"
VOLUME_MISMATCH = "VolumeMismatch"
CLAIM_LOST = "ClaimLost"
CLAIM_MISBOUND = "ClaimMisbound"
EXTERNAL_PROVISIONING = "ExternalProvisioning"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
WAIT_FOR_POD_SCHEDULED = "WaitForPodScheduled"
VOLUME_DELETE = "VolumeDelete"
VOLUME_FAILED_DELETE = "VolumeFailedDelete"
VOLUME_UNKNOWN_RECLAIM_POLICY = "VolumeUnknownReclaimPolicy"

PENDING, BOUND, LOST = "Pending", "Bound", "Lost"
AVAILABLE, RELEASED, FAILED = "Available", "Released", "Failed"


def _claim_key(claim: core_v1.PersistentVolumeClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


# --- claims ----------------------------------------------------------------------------------

async def sync_claim(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim) -> None:
    """Upstream: syncClaim"""
    if not has_annotation(claim, ANN_BIND_COMPLETED):
        await sync_unbound_claim(ctrl, claim)
    else:
        await sync_bound_claim(ctrl, claim)


async def sync_unbound_claim(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim) -> None:
    """A claim never bound: find (or have provisioned) a volume, or finish a user's pre-binding.

    Upstream: syncUnboundClaim
    """
    if not claim.spec.volume_name:
        delay_binding = should_delay_binding(ctrl, claim)
        volume = find_matching_volume(claim, ctrl.volume_lister.list(), None, frozenset(), delay_binding)
        if volume is not None:
            try:
                await bind(ctrl, volume, claim)
            except Exception as err:       # a provision's error counts; its start is kept
                ctrl.operation_timestamps.record(_claim_key(claim), err)
                raise
            ctrl.operation_timestamps.record(_claim_key(claim), None)   # provisioned and bound: its time
            return
        cls_name = get_persistent_volume_claim_class(claim)
        if delay_binding and not has_annotation(claim, ANN_SELECTED_NODE):
            emit_event_for_unbound_delay_binding_claim(ctrl, claim)
        elif cls_name:
            await provision_claim(ctrl, claim)
            return
        else:
            ctrl.recorder.event(claim, cu.EVENT_TYPE_NORMAL, FAILED_BINDING,
                                "no persistent volumes available for this claim and no storage class is set")
        await update_claim_status(ctrl, claim, PENDING, None)
        return
    try:
        volume = ctrl.volume_lister.get(claim.spec.volume_name)
    except errors.NotFound:
        # The user asked for a volume that does not exist (yet): wait for it.
        await update_claim_status(ctrl, claim, PENDING, None)
        return
    if volume.spec.claim_ref is None:
        if (reason := check_volume_satisfy_claim(volume, claim)) is not None:
            ctrl.recorder.event(claim, cu.EVENT_TYPE_WARNING, VOLUME_MISMATCH, reason)
            await update_claim_status(ctrl, claim, PENDING, None)
            return
        await bind(ctrl, volume, claim)
    elif is_volume_bound_to_claim(volume, claim):
        await bind(ctrl, volume, claim)         # bound by someone else: finish it
    elif has_annotation(claim, ANN_BOUND_BY_CONTROLLER):
        raise RuntimeError("invalid binding of claim "
                           f"{_claim_key(claim)!r} to volume {volume.metadata.name!r}: volume already claimed by "
                           f"{volume.spec.claim_ref.namespace}/{volume.spec.claim_ref.name}")
    else:
        # The user pre-bound the claim to a volume bound elsewhere: wait until it is free.
        await update_claim_status(ctrl, claim, PENDING, None)


async def sync_bound_claim(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim) -> None:
    """A claim bound once: keep it Bound, or mark it Lost. Upstream: syncBoundClaim"""
    if not claim.spec.volume_name:
        await update_claim_status_with_event(ctrl, claim, LOST, None, cu.EVENT_TYPE_WARNING, CLAIM_LOST,
                                             "Bound claim has lost reference to PersistentVolume. Data on the "
                                             "volume is lost!")
        return
    try:
        volume = ctrl.volume_lister.get(claim.spec.volume_name)
    except errors.NotFound:
        await update_claim_status_with_event(ctrl, claim, LOST, None, cu.EVENT_TYPE_WARNING, CLAIM_LOST,
                                             "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
        return
    ref = volume.spec.claim_ref
    if ref is None or ref.uid == claim.metadata.uid:
        await bind(ctrl, volume, claim)         # repairs a half-finished binding, or keeps status right
        return
    await update_claim_status_with_event(ctrl, claim, LOST, None, cu.EVENT_TYPE_WARNING, CLAIM_MISBOUND,
                                         "Two claims are bound to the same volume, this one is bound incorrectly")


def should_delay_binding(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim) -> bool:
    """WaitForFirstConsumer and the scheduler has not picked a node yet. Upstream: shouldDelayBinding"""
    if has_annotation(claim, ANN_SELECTED_NODE):
        return False
    return is_delay_binding_mode(claim, ctrl.get_class(get_persistent_volume_claim_class(claim)))


def emit_event_for_unbound_delay_binding_claim(ctrl: PersistentVolumeController,
                                               claim: core_v1.PersistentVolumeClaim) -> None:
    """WaitForFirstConsumer, or WaitForPodScheduled when a pod already uses the claim.

    Upstream: emitEventForUnboundDelayBindingClaim
    """
    for pod in ctrl.pod_lister.pods(claim.metadata.namespace or "").list():
        if pod.spec is None or (pod.status and pod.status.phase in ("Succeeded", "Failed")):
            continue
        if any(v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name == claim.metadata.name
               for v in pod.spec.volumes or []):
            ctrl.recorder.event(claim, cu.EVENT_TYPE_NORMAL, WAIT_FOR_POD_SCHEDULED,
                                f"waiting for pod {pod.metadata.name} to be scheduled")
            return
    ctrl.recorder.event(claim, cu.EVENT_TYPE_NORMAL, WAIT_FOR_FIRST_CONSUMER,
                        "waiting for first consumer to be created before binding")


def check_volume_satisfy_claim(volume: core_v1.PersistentVolume, claim: core_v1.PersistentVolumeClaim) -> str | None:
    """Why volume cannot serve claim, None if it can. Upstream: checkVolumeSatisfyClaim"""
    if storage_request(claim) > volume_capacity(volume):
        return "requested PV is too small"
    if get_persistent_volume_class(volume) != get_persistent_volume_claim_class(claim):
        return "storageClassName does not match"
    if volume_mode_mismatch(claim, volume):
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return None


async def provision_claim(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim) -> None:
    """Hand the claim to its class's (external) provisioner by annotating it. Upstream: provisionClaim
    (provisionClaimOperationExternal)"""
    cls = ctrl.get_class(get_persistent_volume_claim_class(claim))
    if cls is None:
        ctrl.recorder.event(claim, cu.EVENT_TYPE_WARNING, "ProvisioningFailed",
                            f'storageclass.storage.k8s.io "{get_persistent_volume_claim_class(claim)}" not found')
        await update_claim_status(ctrl, claim, PENDING, None)
        return
    provisioner = cls.provisioner or ""
    if provisioner == NOT_SUPPORTED_PROVISIONER:
        await update_claim_status(ctrl, claim, PENDING, None)
        return
    key = _claim_key(claim)
    ctrl.operation_timestamps.add_if_not_exist(key, provisioner, "provision")
    ann = claim.metadata.annotations or {}
    if ann.get(ANN_STORAGE_PROVISIONER) != provisioner or ann.get(ANN_BETA_STORAGE_PROVISIONER) != provisioner:
        new = claim.deep_copy()
        new.metadata.annotations = {**ann, ANN_STORAGE_PROVISIONER: provisioner,
                                    ANN_BETA_STORAGE_PROVISIONER: provisioner}
        try:
            claim = await ctrl.claims(new).update(new)
        except Exception as err:
            ctrl.operation_timestamps.record(key, err)
            raise
    ctrl.recorder.event(claim, cu.EVENT_TYPE_NORMAL, EXTERNAL_PROVISIONING,
                        f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or "
                        "manually by the system administrator. If volume creation is delayed, please verify that the "
                        "provisioner is running and correctly registered.")
    await update_claim_status(ctrl, claim, PENDING, None)


# --- binding ------------------------------------------------------------------------------------

async def bind(ctrl: PersistentVolumeController, volume: core_v1.PersistentVolume,
               claim: core_v1.PersistentVolumeClaim) -> None:
    """Volume side (claimRef), its phase Bound, claim side (volumeName, bind-completed), its
    status Bound. Each write is skipped when already done. Upstream: bind"""
    volume = await bind_volume_to_claim(ctrl, volume, claim)
    volume = await update_volume_phase(ctrl, volume, BOUND, "")
    claim = await bind_claim_to_volume(ctrl, claim, volume)
    await update_claim_status(ctrl, claim, BOUND, volume)


async def bind_volume_to_claim(ctrl: PersistentVolumeController, volume: core_v1.PersistentVolume,
                               claim: core_v1.PersistentVolumeClaim) -> core_v1.PersistentVolume:
    """Upstream: bindVolumeToClaim / GetBindVolumeToClaim"""
    ref = volume.spec.claim_ref
    bound = ref is not None and ref.name == claim.metadata.name and ref.namespace == claim.metadata.namespace \
        and ref.uid == claim.metadata.uid
    if bound:
        return volume
    new = volume.deep_copy()
    new.spec.claim_ref = core_v1.ObjectReference(kind="PersistentVolumeClaim", api_version="v1",
                                                 namespace=claim.metadata.namespace, name=claim.metadata.name,
                                                 uid=claim.metadata.uid,
                                                 resource_version=claim.metadata.resource_version)
    if ref is None:           # we set the reference, not the user
        new.metadata.annotations = {**(new.metadata.annotations or {}), ANN_BOUND_BY_CONTROLLER: "yes"}
    return await ctrl.client.core_v1().persistentvolumes().update(new)


async def update_volume_phase(ctrl: PersistentVolumeController, volume: core_v1.PersistentVolume, phase: str,
                              message: str) -> core_v1.PersistentVolume:
    """Upstream: updateVolumePhase"""
    st = volume.status or core_v1.PersistentVolumeStatus()
    if st.phase == phase:
        return volume
    new = volume.deep_copy()
    # The API server stamps lastPhaseTransitionTime on a phase change (its status strategy).
    new.status = core_v1.PersistentVolumeStatus(phase=phase, message=message or None, reason=st.reason)
    return await ctrl.client.core_v1().persistentvolumes().update_status(new)


async def bind_claim_to_volume(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim,
                               volume: core_v1.PersistentVolume) -> core_v1.PersistentVolumeClaim:
    """Upstream: bindClaimToVolume"""
    ann = dict(claim.metadata.annotations or {})
    dirty = False
    new = claim.deep_copy()
    if claim.spec.volume_name != volume.metadata.name:
        new.spec.volume_name = volume.metadata.name
        ann[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    if ann.get(ANN_BIND_COMPLETED) != "yes":
        ann[ANN_BIND_COMPLETED] = "yes"
        dirty = True
    if not dirty:
        return claim
    new.metadata.annotations = ann
    return await ctrl.claims(new).update(new)


async def update_claim_status(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim, phase: str,
                              volume: core_v1.PersistentVolume | None) -> core_v1.PersistentVolumeClaim:
    """Phase, and with a volume its access modes and capacity. Upstream: updateClaimStatus"""
    st = claim.status or core_v1.PersistentVolumeClaimStatus()
    want = core_v1.PersistentVolumeClaimStatus(**{f: getattr(st, f) for f in st.__struct_fields__})
    want.phase = phase
    if volume is None:
        want.access_modes = want.capacity = None
    else:
        want.access_modes = list(volume.spec.access_modes or []) or None
        cap = (volume.spec.capacity or {}).get("storage")
        want.capacity = {"storage": cap} if cap is not None else None
    if want == st:
        return claim
    new = claim.deep_copy()
    new.status = want
    return await ctrl.claims(new).update_status(new)


async def update_claim_status_with_event(ctrl: PersistentVolumeController, claim: core_v1.PersistentVolumeClaim,
                                         phase: str, volume: core_v1.PersistentVolume | None, event_type: str,
                                         reason: str, message: str) -> None:
    """Upstream: updateClaimStatusWithEvent (the event only on a phase change)."""
    if (claim.status.phase if claim.status else None) == phase:
        return
    new = await update_claim_status(ctrl, claim, phase, volume)
    ctrl.recorder.event(new, event_type, reason, message)


# --- volumes ------------------------------------------------------------------------------------

async def sync_volume(ctrl: PersistentVolumeController, volume: core_v1.PersistentVolume) -> None:
    """Upstream: syncVolume"""
    ref = volume.spec.claim_ref
    if ref is None or not ref.uid:
        # Unused, or reserved for a claim by name only (the claim's sync binds it).
        await update_volume_phase(ctrl, volume, AVAILABLE, "")
        return
    claim = ctrl.get_claim(ref.namespace or "", ref.name or "")
    if claim is not None and claim.metadata.uid != ref.uid:
        claim = None                                         # a new claim with the old name
    if claim is None:
        if (volume.status.phase if volume.status else None) != RELEASED:
            volume = await update_volume_phase(ctrl, volume, RELEASED, "")
        await reclaim_volume(ctrl, volume)
        return
    if not claim.spec.volume_name:
        # The binding is not completed (or the user unbound the claim): the claim's sync fixes it.
        ctrl.claim_queue.add(_claim_key(claim))
        return
    if claim.spec.volume_name == volume.metadata.name:
        await update_volume_phase(ctrl, volume, BOUND, "")
        return
    # Bound to a claim that is bound to another volume.
    if has_annotation(volume, ANN_DYNAMICALLY_PROVISIONED) and volume.spec.persistent_volume_reclaim_policy == "Delete":
        if (volume.status.phase if volume.status else None) != RELEASED:
            volume = await update_volume_phase(ctrl, volume, RELEASED, "")
        await reclaim_volume(ctrl, volume)
    elif has_annotation(volume, ANN_BOUND_BY_CONTROLLER):
        await unbind_volume(ctrl, volume)


async def unbind_volume(ctrl: PersistentVolumeController, volume: core_v1.PersistentVolume) -> None:
    """Drop a claimRef the controller wrote; the volume is Available again. Upstream: unbindVolume"""
    new = volume.deep_copy()
    if has_annotation(volume, ANN_BOUND_BY_CONTROLLER):
        new.spec.claim_ref = None
        new.metadata.annotations = {k: v for k, v in (new.metadata.annotations or {}).items()
                                    if k != ANN_BOUND_BY_CONTROLLER} or None
    else:
        new.spec.claim_ref.uid = None
    updated = await ctrl.client.core_v1().persistentvolumes().update(new)
    await update_volume_phase(ctrl, updated, AVAILABLE, "")


async def reclaim_volume(ctrl: PersistentVolumeController, volume: core_v1.PersistentVolume) -> None:
    """Retain: keep the Released volume. Delete: delete it, unless an external provisioner owns
    it (it deletes its own volumes). Upstream: reclaimVolume"""
    policy = volume.spec.persistent_volume_reclaim_policy or "Retain"
    if policy == "Retain":
        return
    if policy != "Delete":
        await update_volume_phase(ctrl, volume, FAILED, "Volume has unrecognized PersistentVolumeReclaimPolicy")
        ctrl.recorder.event(volume, cu.EVENT_TYPE_WARNING, VOLUME_UNKNOWN_RECLAIM_POLICY,
                            "Volume has unrecognized PersistentVolumeReclaimPolicy")
        return
    provisioner = (volume.metadata.annotations or {}).get(ANN_DYNAMICALLY_PROVISIONED)
    ctrl.operation_timestamps.add_if_not_exist(volume.metadata.name or "", provisioner or "", "delete")
    if provisioner and provisioner in ctrl.external_provisioners():
        return                                   # the provisioner deletes it
    try:
        await ctrl.client.core_v1().persistentvolumes().delete(volume.metadata.name)
    except errors.NotFound:
        return
    except errors.StatusError as err:
        ctrl.recorder.event(volume, cu.EVENT_TYPE_WARNING, VOLUME_FAILED_DELETE, str(err))
        ctrl.operation_timestamps.record(volume.metadata.name or "", err)
        raise
