"""Validation of the storage.k8s.io/v1 kinds, with upstream's messages and field paths.

Upstream: pkg/apis/storage/validation/validation.go (ValidateStorageClass[Update],
ValidateVolumeAttachment[V1|Update], ValidateCSINode[Update], ValidateCSIDriver[Update],
ValidateCSIStorageCapacity[Update], ValidateVolumeAttributesClass[Update]) and
apivalidation.ValidateCSIDriverName, validateAllowedTopologies. Left out: the
inline volume spec of a VolumeAttachment beyond a PV spec's rules, CSINode allocatable counts'
update rules.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import core
from . import meta as m
from .names import is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain
from ..quantity import PARSE_ERROR, parse_quantity

Obj = dict[str, Any]
SUPPORTED_RECLAIM_POLICIES = ["Delete", "Retain"]
SUPPORTED_BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
SUPPORTED_FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"]
SUPPORTED_LIFECYCLE_MODES = ["Ephemeral", "Persistent"]
MAX_PROVISIONER_PARAMETER_SIZE = 256 * 1024
MAX_PROVISIONER_PARAMETER_LEN = 512
CSI_NODE_ID_MAX_LENGTH = 192
MAX_TOKEN_SECONDS = 1 << 32
MIN_TOKEN_SECONDS = 600


def _meta_update(new: Obj, old: Obj) -> list[FieldError]:
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_csi_driver_name(name: str, path: str) -> list[FieldError]:
    """Upstream: ValidateCSIDriverName (≤ 63 characters, a DNS subdomain once lowercased)."""
    if not name:
        return [errors.required(path)]
    errs = [errors.too_long(path, 63)] if len(name) > 63 else []
    errs += [errors.invalid(path, name, msg) for msg in is_dns1123_subdomain(name.lower())]
    return errs


def _provisioner(value: str, path: str) -> list[FieldError]:
    """Upstream: validateProvisioner (a qualified name once lowercased)."""
    if not value:
        return [errors.required(path)]
    return [errors.invalid(path, value.lower(), msg) for msg in is_qualified_name(value.lower())]


def _parameters(params: Obj, allow_empty: bool, path: str) -> list[FieldError]:
    """Upstream: validateParameters"""
    errs: list[FieldError] = []
    if len(params) > MAX_PROVISIONER_PARAMETER_LEN:
        errs.append(errors.too_long(path, MAX_PROVISIONER_PARAMETER_LEN))
        return errs
    total = 0
    for k, v in params.items():
        if not k:
            errs.append(errors.invalid(path, k, "field can not be empty."))
        total += len(k) + len(str(v))
    if total > MAX_PROVISIONER_PARAMETER_SIZE:
        errs.append(errors.too_long(path, MAX_PROVISIONER_PARAMETER_SIZE))
    if not allow_empty and not params:
        errs.append(errors.required(path, "must contain at least one key/value pair"))
    return errs


def validate_storage_class(sc: Obj) -> list[FieldError]:
    """Upstream: ValidateStorageClass"""
    errs = m.validate_object_meta(sc.get("metadata") or {}, False, name_is_dns_subdomain)
    errs += _provisioner(sc.get("provisioner") or "", "provisioner")
    errs += _parameters(sc.get("parameters") or {}, True, "parameters")
    policy = sc.get("reclaimPolicy")
    if policy and policy not in SUPPORTED_RECLAIM_POLICIES:
        errs.append(errors.not_supported("reclaimPolicy", policy, SUPPORTED_RECLAIM_POLICIES))
    mode = sc.get("volumeBindingMode")
    if mode is None:
        errs.append(errors.required("volumeBindingMode"))
    elif mode not in SUPPORTED_BINDING_MODES:
        errs.append(errors.not_supported("volumeBindingMode", mode, SUPPORTED_BINDING_MODES))
    return errs + validate_allowed_topologies(sc.get("allowedTopologies") or [], "allowedTopologies")


def validate_allowed_topologies(terms: list[Any], path: str) -> list[FieldError]:
    """Upstream: validateAllowedTopologies — each term valid, no term twice (as a key -> values map)."""
    errs: list[FieldError] = []
    seen: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(terms):
        expressions, term_errs = validate_topology_selector_term(term if isinstance(term, dict) else {},
                                                                 f"{path}[{i}]")
        errs += term_errs
        if expressions in seen:
            errs.append(errors.duplicate(f"{path}[{i}].matchLabelExpressions", ""))
        seen.append(expressions)
    return errs


def validate_topology_selector_term(term: Obj, path: str) -> tuple[dict[str, frozenset[str]], list[FieldError]]:
    """Upstream: ValidateTopologySelectorTerm / validateTopologySelectorLabelRequirement (values
    required and unique, keys label names and unique)."""
    errs: list[FieldError] = []
    expressions: dict[str, frozenset[str]] = {}
    for i, req in enumerate(term.get("matchLabelExpressions") or []):
        req = req if isinstance(req, dict) else {}
        req_path = f"{path}.matchLabelExpressions[{i}]"
        values = [str(v) for v in req.get("values") or []]
        if not values:
            errs.append(errors.required(req_path + ".values"))
        for j, value in enumerate(values):
            if value in values[:j]:
                errs.append(errors.duplicate(f"{req_path}.values[{j}]", value))
        key = req.get("key") or ""
        errs += m.validate_label_name(key, req_path + ".key")
        if key in expressions:
            errs.append(errors.duplicate(req_path + ".key", key))
        expressions[key] = frozenset(values)
    return expressions, errs


def validate_storage_class_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateStorageClassUpdate — parameters, provisioner, reclaimPolicy and
    volumeBindingMode are fixed."""
    errs = _meta_update(new, old)
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(errors.forbidden("parameters", "updates to parameters are forbidden."))
    if (new.get("provisioner") or "") != (old.get("provisioner") or ""):
        errs.append(errors.forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(errors.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    errs += m.immutable(new.get("volumeBindingMode"), old.get("volumeBindingMode"), "volumeBindingMode")
    return errs


def validate_volume_attachment(va: Obj) -> list[FieldError]:
    """Upstream: ValidateVolumeAttachment + ValidateVolumeAttachmentV1"""
    errs = m.validate_object_meta(va.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = va.get("spec") or {}
    attacher = spec.get("attacher") or ""
    if not attacher:
        errs.append(errors.required("spec.attacher"))
    source = spec.get("source") or {}
    inline, pv_name = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    exactly_one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if inline is None and pv_name is None:
        errs.append(errors.required("spec.source", exactly_one))
    elif inline is not None and pv_name is not None:
        errs.append(errors.forbidden("spec.source", exactly_one))
    elif pv_name is not None and not pv_name:
        errs.append(errors.required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"))
    elif inline is not None:
        errs += core.validate_persistent_volume_spec({**inline, "capacity": {"storage": "1"},
                                                      "accessModes": inline.get("accessModes") or ["ReadWriteOnce"]},
                                                     "spec.source.inlineVolumeSpec")
    node = spec.get("nodeName") or ""
    errs += [errors.invalid("spec.nodeName", node, msg) for msg in is_dns1123_subdomain(node)]
    errs += _volume_attachment_status(va.get("status") or {})
    if attacher:
        errs += validate_csi_driver_name(attacher, "spec.attacher")
    if pv_name:
        errs += [errors.invalid("spec.source.persistentVolumeName", pv_name, msg) for msg in is_dns1123_subdomain(pv_name)]
    return errs


def _volume_attachment_status(status: Obj) -> list[FieldError]:
    """Upstream: validateVolumeAttachmentStatus (the error messages' size)."""
    errs: list[FieldError] = []
    for key in ("attachError", "detachError"):
        message = (status.get(key) or {}).get("message") or ""
        if len(message.encode()) > 1024:
            errs.append(errors.too_long(f"status.{key}.message", 1024))
    metadata = status.get("attachmentMetadata") or {}
    if sum(len(k) + len(str(v)) for k, v in metadata.items()) > 256 * 1024:
        errs.append(errors.too_long("status.attachmentMetadata", 256 * 1024))
    return errs


def validate_volume_attachment_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateVolumeAttachmentUpdate — the spec is immutable."""
    errs = _meta_update(new, old) + [e for e in validate_volume_attachment(new) if not e.field.startswith("metadata.")]
    if not m.semantic_equal(new.get("spec"), old.get("spec")):
        errs.append(errors.invalid("spec", new.get("spec"), m.FIELD_IMMUTABLE))
    return errs


def validate_volume_attachment_status_update(new: Obj, old: Obj) -> list[FieldError]:
    return _meta_update(new, old) + _volume_attachment_status(new.get("status") or {})


def validate_csi_node(node: Obj) -> list[FieldError]:
    """Upstream: ValidateCSINode (driver names unique and valid, nodeID required, topology keys)."""
    errs = m.validate_object_meta(node.get("metadata") or {}, False, name_is_dns_subdomain)
    seen: set[str] = set()
    for i, driver in enumerate((node.get("spec") or {}).get("drivers") or []):
        path = f"spec.drivers[{i}]"
        name = driver.get("name") or ""
        errs += validate_csi_driver_name(name, path + ".name")
        node_id = driver.get("nodeID") or ""
        if not node_id:
            errs.append(errors.required(path + ".nodeID"))
        elif len(node_id) > CSI_NODE_ID_MAX_LENGTH:
            errs.append(errors.invalid(path + ".nodeID", node_id,
                                       f"must be {CSI_NODE_ID_MAX_LENGTH} characters or less"))
        keys: set[str] = set()
        for j, key in enumerate(driver.get("topologyKeys") or []):
            kp = f"{path}.topologyKeys[{j}]"
            if not key:
                errs.append(errors.required(kp))
            if key in keys:
                errs.append(errors.duplicate(kp, key))
            keys.add(key)
            errs += [errors.invalid(kp, key, msg) for msg in is_qualified_name(key)] if key else []
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None and count < 0:
            errs.append(errors.invalid(path + ".allocatable.count", count, m.IS_NEGATIVE))
        if name in seen:
            errs.append(errors.duplicate(path + ".name", name))
        seen.add(name)
    return errs


def validate_csi_node_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCSINodeUpdate — a driver that stays keeps its nodeID and topology keys."""
    errs = _meta_update(new, old) + [e for e in validate_csi_node(new) if not e.field.startswith("metadata.")]
    old_drivers = {d.get("name"): d for d in (old.get("spec") or {}).get("drivers") or []}
    for i, driver in enumerate((new.get("spec") or {}).get("drivers") or []):
        before = old_drivers.get(driver.get("name"))
        if before is None:
            continue
        errs += m.immutable(driver.get("nodeID"), before.get("nodeID"), f"spec.drivers[{i}].nodeID")
        errs += m.immutable(driver.get("topologyKeys"), before.get("topologyKeys"), f"spec.drivers[{i}].topologyKeys")
    return errs


def _csi_driver_spec(spec: Obj) -> list[FieldError]:
    """Upstream: validateCSIDriverSpec"""
    # "attachedRequired": upstream's field path (sic).
    errs = [errors.required(f"spec.{path}") for key, path in (
        ("attachRequired", "attachedRequired"), ("podInfoOnMount", "podInfoOnMount"),
        ("requiresRepublish", "requiresRepublish"), ("storageCapacity", "storageCapacity"),
        ("seLinuxMount", "seLinuxMount")) if spec.get(key) is None]
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in SUPPORTED_FS_GROUP_POLICIES:
        errs.append(errors.not_supported("spec.fsGroupPolicy", policy, SUPPORTED_FS_GROUP_POLICIES))
    for mode in spec.get("volumeLifecycleModes") or []:
        if mode not in SUPPORTED_LIFECYCLE_MODES:
            errs.append(errors.not_supported("spec.volumeLifecycleModes", mode, SUPPORTED_LIFECYCLE_MODES))
    audiences: set[str] = set()
    for i, token in enumerate(spec.get("tokenRequests") or []):
        path = f"spec.tokenRequests[{i}]"
        audience = token.get("audience") or ""
        if audience in audiences:
            errs.append(errors.duplicate(path + ".audience", audience))
        audiences.add(audience)
        seconds = token.get("expirationSeconds")
        if seconds is not None and seconds < MIN_TOKEN_SECONDS:
            errs.append(errors.invalid(path + ".expirationSeconds", seconds,
                                       "may not specify a duration less than 10 minutes"))
        elif seconds is not None and seconds > MAX_TOKEN_SECONDS:
            errs.append(errors.invalid(path + ".expirationSeconds", seconds,
                                       "may not specify a duration larger than 2^32 seconds"))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")     # validateNodeAllocatableUpdatePeriodSeconds
    if isinstance(period, int) and period < 10:
        errs.append(errors.invalid("spec.nodeAllocatableUpdatePeriodSeconds", period,
                                   "must be greater than or equal to 10 seconds"))
    return errs


def validate_csi_driver(driver: Obj) -> list[FieldError]:
    """Upstream: ValidateCSIDriver (the name is a DNS subdomain: ValidateCSIDriverName)."""
    errs = m.validate_object_meta(driver.get("metadata") or {}, False, name_is_dns_subdomain)
    return errs + _csi_driver_spec(driver.get("spec") or {})


def validate_csi_driver_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCSIDriverUpdate — attachRequired and volumeLifecycleModes are immutable."""
    errs = _meta_update(new, old) + _csi_driver_spec(new.get("spec") or {})
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs += m.immutable(new_spec.get("attachRequired"), old_spec.get("attachRequired"), "spec.attachedRequired")
    errs += m.immutable(new_spec.get("volumeLifecycleModes"), old_spec.get("volumeLifecycleModes"),
                        "spec.volumeLifecycleModes")
    return errs


def validate_csi_storage_capacity(cap: Obj) -> list[FieldError]:
    """Upstream: ValidateCSIStorageCapacity"""
    errs = m.validate_object_meta(cap.get("metadata") or {}, True, name_is_dns_subdomain)
    if cap.get("nodeTopology") is not None:
        errs += m.validate_label_selector(cap["nodeTopology"], "nodeTopology")
    name = cap.get("storageClassName") or ""
    errs += [errors.invalid("storageClassName", name, msg) for msg in is_dns1123_subdomain(name)]
    for key in ("capacity", "maximumVolumeSize"):
        if cap.get(key) is None:
            continue
        value = parse_quantity(cap[key])
        if value is None:
            errs.append(errors.invalid(key, cap[key], PARSE_ERROR))
        elif value < 0:
            errs.append(errors.invalid(key, str(cap[key]), m.IS_NEGATIVE))
    return errs


def validate_csi_storage_capacity_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCSIStorageCapacityUpdate — only the capacities change."""
    errs = _meta_update(new, old) + [e for e in validate_csi_storage_capacity(new) if not e.field.startswith("metadata.")]
    errs += m.immutable(new.get("nodeTopology"), old.get("nodeTopology"), "nodeTopology")
    errs += m.immutable(new.get("storageClassName"), old.get("storageClassName"), "storageClassName")
    return errs


def validate_volume_attributes_class(vac: Obj) -> list[FieldError]:
    """Upstream: ValidateVolumeAttributesClass"""
    errs = m.validate_object_meta(vac.get("metadata") or {}, False, name_is_dns_subdomain)
    errs += _provisioner(vac.get("driverName") or "", "driverName")
    return errs + _parameters(vac.get("parameters") or {}, True, "parameters")


def validate_volume_attributes_class_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateVolumeAttributesClassUpdate — driverName and parameters are fixed."""
    errs = _meta_update(new, old)
    if (new.get("driverName") or "") != (old.get("driverName") or ""):
        errs.append(errors.forbidden("driverName", "updates to driverName are forbidden."))
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(errors.forbidden("parameters", "updates to parameters are forbidden."))
    return errs
