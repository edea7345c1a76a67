"""Defaulting of storage.k8s.io/v1 StorageClasses and CSIDrivers (the group's other kinds have
none; a VolumeAttachment's inline PersistentVolumeSpec is defaulted as a PV's).

Upstream: pkg/apis/storage/v1/defaults.go (SetDefaults_StorageClass, SetDefaults_CSIDriver,
SetDefaults_VolumeAttachment via the generated defaulter).
"""
from __future__ import annotations

from typing import Any

from . import core

Obj = dict[str, Any]


def set_defaults_storage_class(sc: Obj) -> None:
    """Upstream: SetDefaults_StorageClass — reclaim policy Delete, binding mode Immediate."""
    if not sc.get("reclaimPolicy"):
        sc["reclaimPolicy"] = "Delete"
    if not sc.get("volumeBindingMode"):
        sc["volumeBindingMode"] = "Immediate"


def set_defaults_csi_driver(driver: Obj) -> None:
    """Upstream: SetDefaults_CSIDriver (seLinuxMount: the SELinuxMountReadWriteOncePod gate is on)."""
    spec = driver.get("spec")
    if not isinstance(spec, dict):
        spec = driver["spec"] = {}
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       ("seLinuxMount", False)):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def set_defaults_volume_attachment(va: Obj) -> None:
    """The inline PersistentVolumeSpec of a migrated in-tree volume gets a PV spec's source
    defaults (the generated SetObjectDefaults_VolumeAttachment)."""
    source = (va.get("spec") or {}).get("source")
    inline = source.get("inlineVolumeSpec") if isinstance(source, dict) else None
    if isinstance(inline, dict):
        core._default_sources(inline)
