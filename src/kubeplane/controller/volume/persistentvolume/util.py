"""Claim/volume matching and the binder's annotations.

Upstream: pkg/controller/volume/persistentvolume/util/util.go (FindMatchingVolume,
CheckAccessModes, IsVolumeBoundToClaim), component-helpers/storage/volume (annotations,
GetPersistentVolumeClass, GetPersistentVolumeClaimClass, IsDelayBindingMode).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from ....api import errors, labels, types
from ....api.quantity import parse_quantity
from ....api.types import core_v1, storage_v1

# Upstream: storagehelpers / volume util annotations.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"

VOLUME_BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"


def has_annotation(obj: Any, key: str) -> bool:
    return key in (obj.metadata.annotations or {})


def get_persistent_volume_class(volume: core_v1.PersistentVolume) -> str:
    """The beta annotation, else spec.storageClassName. Upstream: GetPersistentVolumeClass"""
    ann = volume.metadata.annotations or {}
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return (volume.spec.storage_class_name if volume.spec else None) or ""


def get_persistent_volume_claim_class(claim: core_v1.PersistentVolumeClaim) -> str:
    """Upstream: GetPersistentVolumeClaimClass"""
    ann = claim.metadata.annotations or {}
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return (claim.spec.storage_class_name if claim.spec else None) or ""


def storage_request(claim: core_v1.PersistentVolumeClaim) -> Fraction:
    req = ((claim.spec.resources.requests if claim.spec and claim.spec.resources else None) or {}).get("storage")
    return (parse_quantity(req) if req is not None else None) or Fraction(0)


def volume_capacity(volume: core_v1.PersistentVolume) -> Fraction:
    cap = ((volume.spec.capacity if volume.spec else None) or {}).get("storage")
    return (parse_quantity(cap) if cap is not None else None) or Fraction(0)


def check_access_modes(claim: core_v1.PersistentVolumeClaim, volume: core_v1.PersistentVolume) -> bool:
    """The volume offers every mode the claim asks for. Upstream: CheckAccessModes"""
    offered = set((volume.spec.access_modes if volume.spec else None) or [])
    return all(m in offered for m in (claim.spec.access_modes or []))


def volume_mode_mismatch(claim: core_v1.PersistentVolumeClaim, volume: core_v1.PersistentVolume) -> bool:
    """Filesystem unless Block. Upstream: CheckVolumeModeMismatches"""
    return ((claim.spec.volume_mode or "Filesystem") != ((volume.spec.volume_mode if volume.spec else None)
                                                         or "Filesystem"))


def is_volume_bound_to_claim(volume: core_v1.PersistentVolume, claim: core_v1.PersistentVolumeClaim) -> bool:
    """The volume's claimRef names the claim (and its UID, when the ref has one). Upstream: IsVolumeBoundToClaim"""
    ref = volume.spec.claim_ref if volume.spec else None
    if ref is None or ref.name != claim.metadata.name or ref.namespace != claim.metadata.namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def check_node_affinity(volume: core_v1.PersistentVolume, node: core_v1.Node) -> bool:
    """The node satisfies the volume's required node affinity (none: any node). Upstream: CheckNodeAffinity"""
    from ....scheduler.framework.plugins.nodeaffinity import term_matches
    na = volume.spec.node_affinity if volume.spec else None
    if na is None or na.required is None:
        return True
    return any(term_matches(t, node) for t in na.required.node_selector_terms or [])


def find_matching_volume(claim: core_v1.PersistentVolumeClaim, volumes: Sequence[core_v1.PersistentVolume],
                         node: core_v1.Node | None, excluded: set[str] | frozenset[str],
                         delay_binding: bool) -> core_v1.PersistentVolume | None:
    """The volume pre-bound to the claim, else the smallest Available one that fits: class,
    selector, access modes, capacity >= request, volume mode, node affinity (with a node).

    Example: claim 1Gi RWO, volumes 5Gi RWO, 2Gi RWO, 1Gi ROX -> the 2Gi one.
    Without a node, a delay-binding claim gets only a pre-bound volume (the scheduler picks
    the node first). Upstream: FindMatchingVolume
    """
    requested = storage_request(claim)
    requested_class = get_persistent_volume_claim_class(claim)
    try:
        selector = labels.from_label_selector(types.to_dict(claim.spec.selector)) if claim.spec.selector else None
    except errors.StatusError:
        return None
    smallest: core_v1.PersistentVolume | None = None
    for volume in volumes:
        if volume.metadata.name in excluded or volume_mode_mismatch(claim, volume):
            continue
        if volume.metadata.deletion_timestamp is not None:
            continue
        # Capacity and access modes: upstream's index (findByClaim) filters these first.
        if volume_capacity(volume) < requested or not check_access_modes(claim, volume):
            continue
        affinity_ok = node is None or check_node_affinity(volume, node)
        if is_volume_bound_to_claim(volume, claim):
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        phase = volume.status.phase if volume.status else None
        if phase != "Available" or volume.spec.claim_ref is not None:
            continue
        if selector is not None and not labels.matches(selector, volume.metadata.labels):
            continue
        if get_persistent_volume_class(volume) != requested_class or not affinity_ok:
            continue
        if smallest is None or volume_capacity(smallest) > volume_capacity(volume):
            smallest = volume
    return smallest


def is_delay_binding_mode(claim: core_v1.PersistentVolumeClaim, cls: storage_v1.StorageClass | None) -> bool:
    """The claim's class binds WaitForFirstConsumer. Upstream: IsDelayBindingMode"""
    return cls is not None and cls.volume_binding_mode == VOLUME_BINDING_WAIT_FOR_FIRST_CONSUMER
