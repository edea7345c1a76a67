"""Defaulting of core/v1 PersistentVolumes, PersistentVolumeClaims, LimitRanges and Endpoints.

Upstream: pkg/apis/core/v1/defaults.go (SetDefaults_PersistentVolume,
SetDefaults_PersistentVolumeClaim, SetDefaults_PersistentVolumeClaimSpec,
SetDefaults_LimitRangeItem, SetDefaults_Endpoints and the per-source defaulters the generated
defaulter calls inside a PersistentVolumeSpec). Plain JSON dicts, filled in place; a value the
client sent is never overwritten. ResourceQuota has no defaults.
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _dict(d: Obj, key: str) -> Obj | None:
    v = d.get(key)
    return v if isinstance(v, dict) else None


def _list(d: Obj, key: str) -> list[Obj]:
    v = d.get(key)
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _status(obj: Obj) -> Obj:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    return status


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    return spec


# Per-source defaults of a PersistentVolumeSpec (SetDefaults_RBDPersistentVolumeSource,
# SetDefaults_ISCSIPersistentVolumeSource, SetDefaults_AzureDiskVolumeSource,
# SetDefaults_ScaleIOPersistentVolumeSource, SetDefaults_HostPathVolumeSource).
_SOURCE_DEFAULTS: dict[str, dict[str, Any]] = {
    "rbd": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    "iscsi": {"iscsiInterface": "default"},
    "azureDisk": {"cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": False, "kind": "Shared"},
    "scaleIO": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
    "hostPath": {"type": ""},
}


def _default_sources(spec: Obj) -> None:
    for source, defaults in _SOURCE_DEFAULTS.items():
        if (src := _dict(spec, source)) is not None:
            for key, value in defaults.items():
                current = src.get(key)
                if current is None or (current == "" and key != "type"):   # hostPath type "" is set
                    src[key] = value


def set_defaults_persistent_volume(pv: Obj) -> None:
    """Upstream: SetDefaults_PersistentVolume — phase Pending, reclaim policy Retain, volume
    mode Filesystem."""
    status = _status(pv)
    if not status.get("phase"):
        status["phase"] = "Pending"
    spec = _spec(pv)
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    _default_sources(spec)


def set_defaults_persistent_volume_claim_spec(spec: Obj) -> None:
    """Upstream: SetDefaults_PersistentVolumeClaimSpec"""
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"


def set_defaults_persistent_volume_claim(pvc: Obj) -> None:
    """Upstream: SetDefaults_PersistentVolumeClaim (phase Pending) and the claim's spec."""
    status = _status(pvc)
    if not status.get("phase"):
        status["phase"] = "Pending"
    set_defaults_persistent_volume_claim_spec(_spec(pvc))


def set_defaults_limit_range_item(item: Obj) -> None:
    """Upstream: SetDefaults_LimitRangeItem — a Container item's default limit is its max, its
    default request the default limit, else its min."""
    if item.get("type") != "Container":
        return
    default = dict(_dict(item, "default") or {})
    request = dict(_dict(item, "defaultRequest") or {})
    for key, value in (_dict(item, "max") or {}).items():
        default.setdefault(key, value)
    for key, value in default.items():
        request.setdefault(key, value)
    for key, value in (_dict(item, "min") or {}).items():
        request.setdefault(key, value)
    if default:
        item["default"] = default
    if request:
        item["defaultRequest"] = request


def set_defaults_limit_range(lr: Obj) -> None:
    for item in _list(_dict(lr, "spec") or {}, "limits"):
        set_defaults_limit_range_item(item)


def set_defaults_endpoints(ep: Obj) -> None:
    """Upstream: SetDefaults_Endpoints — a port's protocol is TCP."""
    for subset in _list(ep, "subsets"):
        for port in _list(subset, "ports"):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
