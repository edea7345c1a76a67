"""Table columns and row printers of the storage.k8s.io kinds, exactly as upstream's AddHandlers.

Upstream: pkg/printers/internalversion/printers.go (printStorageClass, printCSIDriver,
printCSINode, printCSIStorageCapacity, printVolumeAttachment, printVolumeAttributesClass) and
pkg/apis/storage/util (IsDefaultAnnotation).
"""
from __future__ import annotations

from typing import Any

from .columns import _age, _col, _doc, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]
Column = dict[str, Any]
_STORAGE = "io.k8s.api.storage.v1."
IS_DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
ALPHA_IS_DEFAULT_VAC_ANNOTATION = "volumeattributesclass.alpha.kubernetes.io/is-default-class"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _age_of(obj: Obj, now: float) -> str:
    return translate_timestamp_since(_meta(obj).get("creationTimestamp"), now)


def is_default_annotation(meta: Obj) -> bool:
    """Upstream: storageutil.IsDefaultAnnotation"""
    annotations = meta.get("annotations") or {}
    return "true" in (annotations.get(IS_DEFAULT_STORAGE_CLASS_ANNOTATION),
                      annotations.get(BETA_IS_DEFAULT_STORAGE_CLASS_ANNOTATION))


def storage_class_columns() -> list[Column]:
    sc = _STORAGE + "StorageClass"
    return [_name(), _col("Provisioner", "string", _doc(sc, "provisioner")),
            _col("ReclaimPolicy", "string", _doc(sc, "reclaimPolicy")),
            _col("VolumeBindingMode", "string", _doc(sc, "volumeBindingMode")),
            _col("AllowVolumeExpansion", "string", _doc(sc, "allowVolumeExpansion")), _age()]


def print_storage_class(sc: Obj, now: float) -> Row:
    """Upstream: printStorageClass — the default class is named "<name> (default)"."""
    meta = _meta(sc)
    name = meta.get("name", "") + (" (default)" if is_default_annotation(meta) else "")
    expansion = sc.get("allowVolumeExpansion")
    return [name, sc.get("provisioner") or "", sc.get("reclaimPolicy") or "Delete",
            sc.get("volumeBindingMode") or "Immediate", bool(expansion), _age_of(sc, now)], None


def csi_driver_columns() -> list[Column]:
    spec = _STORAGE + "CSIDriverSpec"
    return [_name(), _col("AttachRequired", "boolean", _doc(spec, "attachRequired")),
            _col("PodInfoOnMount", "boolean", _doc(spec, "podInfoOnMount")),
            _col("StorageCapacity", "boolean", _doc(spec, "storageCapacity")),
            _col("TokenRequests", "string", _doc(spec, "tokenRequests")),
            _col("RequiresRepublish", "boolean", _doc(spec, "requiresRepublish")),
            _col("Modes", "string", _doc(spec, "volumeLifecycleModes")), _age()]


def print_csi_driver(driver: Obj, now: float) -> Row:
    """Upstream: printCSIDriver"""
    spec = driver.get("spec") or {}
    attach = spec.get("attachRequired")
    tokens = spec.get("tokenRequests")
    token_requests = "<unset>" if tokens is None else ",".join(t.get("audience") or "" for t in tokens)
    modes = ",".join(spec.get("volumeLifecycleModes") or []) or "<none>"
    return [_meta(driver).get("name", ""), True if attach is None else bool(attach), bool(spec.get("podInfoOnMount")),
            bool(spec.get("storageCapacity")), token_requests, bool(spec.get("requiresRepublish")), modes,
            _age_of(driver, now)], None


def csi_node_columns() -> list[Column]:
    return [_name(), _col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
            _age()]


def print_csi_node(node: Obj, now: float) -> Row:
    """Upstream: printCSINode (the number of drivers)"""
    return [_meta(node).get("name", ""), len((node.get("spec") or {}).get("drivers") or []), _age_of(node, now)], None


def csi_storage_capacity_columns() -> list[Column]:
    cap = _STORAGE + "CSIStorageCapacity"
    return [_name(), _col("StorageClassName", "string", _doc(cap, "storageClassName")),
            _col("Capacity", "string", _doc(cap, "capacity"))]


def print_csi_storage_capacity(cap: Obj, now: float) -> Row:
    """Upstream: printCSIStorageCapacity"""
    capacity = cap.get("capacity")
    return [_meta(cap).get("name", ""), cap.get("storageClassName") or "",
            "<unset>" if capacity is None else str(capacity)], None


def volume_attachment_columns() -> list[Column]:
    spec = _STORAGE + "VolumeAttachmentSpec"
    return [_name(), _col("Attacher", "string", _doc(spec, "attacher"), fmt="name"),
            _col("PV", "string", _doc(_STORAGE + "VolumeAttachmentSource", "persistentVolumeName")),
            _col("Node", "string", _doc(spec, "nodeName")),
            _col("Attached", "boolean", _doc(_STORAGE + "VolumeAttachmentStatus", "attached")), _age()]


def print_volume_attachment(va: Obj, now: float) -> Row:
    """Upstream: printVolumeAttachment"""
    spec = va.get("spec") or {}
    return [_meta(va).get("name", ""), spec.get("attacher") or "",
            (spec.get("source") or {}).get("persistentVolumeName") or "", spec.get("nodeName") or "",
            bool((va.get("status") or {}).get("attached")), _age_of(va, now)], None


def volume_attributes_class_columns() -> list[Column]:
    return [_name(), _col("DriverName", "string", _doc(_STORAGE + "VolumeAttributesClass", "driverName")), _age()]


def print_volume_attributes_class(vac: Obj, now: float) -> Row:
    """Upstream: printVolumeAttributesClass (IsDefaultAnnotationForVolumeAttributesClass: "(default)")."""
    meta = _meta(vac)
    default = (meta.get("annotations") or {}).get(ALPHA_IS_DEFAULT_VAC_ANNOTATION) == "true"
    return [meta.get("name", "") + (" (default)" if default else ""), vac.get("driverName") or "",
            _age_of(vac, now)], None
