"""StorageObjectInUseProtection: every new claim and volume carries its protection finalizer,
so it is not removed while a pod uses it (the pvc-protection and pv-protection controllers take
the finalizer off once nothing does).

Upstream: plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go (admitPV,
admitPVC); volumeutil.PVCProtectionFinalizer, PVProtectionFinalizer.
"""
from __future__ import annotations

from ..chain import register
from ..interface import Attributes, Operation, Plugin

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"
_FINALIZERS = {"persistentvolumeclaims": PVC_PROTECTION_FINALIZER, "persistentvolumes": PV_PROTECTION_FINALIZER}


@register
class StorageObjectInUseProtection(Plugin):
    NAME = "StorageObjectInUseProtection"
    OPERATIONS = frozenset({Operation.CREATE})
    RESOURCES = frozenset({("", "persistentvolumes"), ("", "persistentvolumeclaims")})
    SUBRESOURCES = frozenset({""})
    MUTATING = True

    async def admit(self, a: Attributes) -> None:
        finalizer = _FINALIZERS.get(a.resource)
        if finalizer is None or a.group or a.subresource or not isinstance(a.obj, dict):
            return
        meta = a.obj.setdefault("metadata", {})
        finalizers = meta.get("finalizers") or []
        if finalizer not in finalizers:
            meta["finalizers"] = [*finalizers, finalizer]
