"""Claim/volume matching and the binding annotations, shared by the PV binder, the
provisioner and the scheduler's VolumeBinding (a library below them all, as upstream's
component-helpers are).

Upstream: pkg/controller/volume/persistentvolume/util/util.go (FindMatchingVolume,
CheckAccessModes, IsVolumeBoundToClaim), component-helpers/storage/volume (annotations,
GetPersistentVolumeClass, GetPersistentVolumeClaimClass, IsDelayBindingMode) and
component-helpers/scheduling/corev1/nodeaffinity (a volume's required node affinity).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from . import errors, labels, types
from .quantity import parse_quantity
from .types import core_v1, meta_v1, storage_v1

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


_NO_META = meta_v1.ObjectMeta()
_NO_CLAIM_SPEC = core_v1.PersistentVolumeClaimSpec()
_NO_VOLUME_SPEC = core_v1.PersistentVolumeSpec()


def _meta(obj: Any) -> meta_v1.ObjectMeta:
    return obj.metadata or _NO_META


def _cspec(claim: core_v1.PersistentVolumeClaim) -> core_v1.PersistentVolumeClaimSpec:
    return claim.spec or _NO_CLAIM_SPEC


def _vspec(volume: core_v1.PersistentVolume) -> core_v1.PersistentVolumeSpec:
    return volume.spec or _NO_VOLUME_SPEC


def has_annotation(obj: Any, key: str) -> bool:
    return key in (_meta(obj).annotations or {})


def get_persistent_volume_class(volume: core_v1.PersistentVolume) -> str:
    """The beta annotation, else spec.storageClassName. Upstream: GetPersistentVolumeClass"""
    ann = _meta(volume).annotations or {}
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return _vspec(volume).storage_class_name or ""


def get_persistent_volume_claim_class(claim: core_v1.PersistentVolumeClaim) -> str:
    """Upstream: GetPersistentVolumeClaimClass"""
    ann = _meta(claim).annotations or {}
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return _cspec(claim).storage_class_name or ""


def storage_request(claim: core_v1.PersistentVolumeClaim) -> Fraction:
    resources = _cspec(claim).resources
    req = ((resources.requests if resources else None) or {}).get("storage")
    return (parse_quantity(req) if req is not None else None) or Fraction(0)


def volume_capacity(volume: core_v1.PersistentVolume) -> Fraction:
    cap = (_vspec(volume).capacity or {}).get("storage")
    return (parse_quantity(cap) if cap is not None else None) or Fraction(0)


def check_access_modes(claim: core_v1.PersistentVolumeClaim, volume: core_v1.PersistentVolume) -> bool:
    """The volume offers every mode the claim asks for. Upstream: CheckAccessModes"""
    offered = set(_vspec(volume).access_modes or [])
    return all(m in offered for m in (_cspec(claim).access_modes or []))


def volume_mode_mismatch(claim: core_v1.PersistentVolumeClaim, volume: core_v1.PersistentVolume) -> bool:
    """Filesystem unless Block. Upstream: CheckVolumeModeMismatches"""
    return (_cspec(claim).volume_mode or "Filesystem") != (_vspec(volume).volume_mode or "Filesystem")


def is_volume_bound_to_claim(volume: core_v1.PersistentVolume, claim: core_v1.PersistentVolumeClaim) -> bool:
    """The volume's claimRef names the claim (and its UID, when the ref has one). Upstream: IsVolumeBoundToClaim"""
    ref, meta = _vspec(volume).claim_ref, _meta(claim)
    if ref is None or ref.name != meta.name or ref.namespace != meta.namespace:
        return False
    return not ref.uid or ref.uid == meta.uid


def check_node_affinity(volume: core_v1.PersistentVolume, node: core_v1.Node) -> bool:
    """The node satisfies the volume's required node affinity (none: any node). Upstream: CheckNodeAffinity"""
    na = _vspec(volume).node_affinity
    if na is None or na.required is None:
        return True
    return any(_term_matches(t, node) for t in na.required.node_selector_terms or [])


def _term_matches(term: core_v1.NodeSelectorTerm, node: core_v1.Node) -> bool:
    """Every expression and field of the term holds; an empty term matches nothing.

    Upstream: nodeaffinity nodeSelectorTerm.match (the scheduler's NodeAffinity plugin has
    its own copy of the same rules, above this layer).
    """
    exprs, fields = term.match_expressions or [], term.match_fields or []
    if not exprs and not fields:
        return False
    node_labels, name = _meta(node).labels or {}, _meta(node).name or ""
    return all(_requirement_matches(r, node_labels) for r in exprs) and all(
        r.key == "metadata.name" and (name in (r.values or [])) == (r.operator == "In")
        and r.operator in ("In", "NotIn") for r in fields)


def _requirement_matches(r: core_v1.NodeSelectorRequirement, node_labels: dict[str, str]) -> bool:
    """In, NotIn, Exists, DoesNotExist, Gt, Lt over node labels."""
    key, values = r.key or "", r.values or []
    has = key in node_labels
    if r.operator == "In":
        return has and node_labels[key] in values
    if r.operator == "NotIn":
        return not has or node_labels[key] not in values
    if r.operator == "Exists":
        return has
    if r.operator == "DoesNotExist":
        return not has
    if r.operator in ("Gt", "Lt") and has and len(values) == 1:
        try:
            lv, rv = int(node_labels[key]), int(values[0])
        except ValueError:
            return False
        return lv > rv if r.operator == "Gt" else lv < rv
    return False


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
        ls = _cspec(claim).selector
        selector = labels.from_label_selector(types.to_dict(ls)) if ls else None
    except errors.StatusError:
        return None
    smallest: core_v1.PersistentVolume | None = None
    for volume in volumes:
        meta = _meta(volume)
        if (meta.name or "") in excluded or volume_mode_mismatch(claim, volume):
            continue
        if meta.deletion_timestamp is not None:
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
        if phase != "Available" or _vspec(volume).claim_ref is not None:
            continue
        if selector is not None and not labels.matches(selector, meta.labels):
            continue
        if get_persistent_volume_class(volume) != requested_class or not affinity_ok:
            continue
        if smallest is None or volume_capacity(smallest) > volume_capacity(volume):
            smallest = volume
    return smallest


def is_delay_binding_mode(claim: core_v1.PersistentVolumeClaim, cls: storage_v1.StorageClass | None) -> bool:
    """The claim's class binds WaitForFirstConsumer. Upstream: IsDelayBindingMode"""
    return cls is not None and cls.volume_binding_mode == VOLUME_BINDING_WAIT_FOR_FIRST_CONSUMER
