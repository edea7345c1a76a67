"""What a PersistentVolumeClaim uses: `persistentvolumeclaims`, `count/persistentvolumeclaims`,
`requests.storage`, and both again per storage class as
`<class>.storageclass.storage.k8s.io/<resource>`.

The storage charged is the request rounded up to whole bytes, or what was allocated if more
(a resize in progress). Upstream: pkg/quota/v1/evaluator/core/persistent_volume_claims.go
(the VolumeAttributesClass scope is not implemented).
"""
from __future__ import annotations

from collections.abc import Iterable

from ...generic import (
    AdmissionRequest,
    Obj,
    ScopeSelector,
    UsageStatsOptions,
    calculate_usage_stats,
    matches,
    matches_no_scope,
    object_count_name,
)
from ....api.quantity import Quantity, one, parse
from ...resources import ResourceList

PVC_OBJECT_COUNT_NAME = object_count_name("", "persistentvolumeclaims")
PVC_RESOURCES = ("persistentvolumeclaims", "requests.storage")
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def resource_by_storage_class(storage_class: str, resource: str) -> str:
    """Upstream: V1ResourceByStorageClass."""
    return storage_class + STORAGE_CLASS_SUFFIX + resource


class PersistentVolumeClaimEvaluator:
    """Upstream: pvcEvaluator."""

    def group_resource(self) -> tuple[str, str]:
        return "", "persistentvolumeclaims"

    def constraints(self, required: list[str], item: Obj) -> None:
        return None

    def handles(self, a: AdmissionRequest) -> bool:
        """Create and update; a status update only when the allocated storage changed."""
        if a.subresource == "":
            return a.operation in ("CREATE", "UPDATE")
        if a.subresource == "status" and a.obj is not None and a.old_obj is not None:
            return requires_quota_replenish(a.obj, a.old_obj)
        return False

    def matches(self, quota: Obj, item: Obj) -> bool:
        return matches(quota, item, self.matching_resources, matches_no_scope)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out = []
        for name in names:
            if name == PVC_OBJECT_COUNT_NAME or name in PVC_RESOURCES:
                out.append(name)
            elif any(name.endswith(STORAGE_CLASS_SUFFIX + r) for r in PVC_RESOURCES):
                out.append(name)
        return out

    def matching_scopes(self, item: Obj, selectors: list[ScopeSelector]) -> list[ScopeSelector]:
        return []

    def usage(self, item: Obj) -> ResourceList:
        return pvc_usage(item)

    def usage_stats(self, options: UsageStatsOptions, items: list[Obj]) -> ResourceList:
        return calculate_usage_stats(options, items, matches_no_scope, self.usage)


def pvc_class(pvc: Obj) -> str:
    """The beta annotation wins over spec.storageClassName. Upstream: GetPersistentVolumeClaimClass."""
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return (pvc.get("spec") or {}).get("storageClassName") or ""


def _storage(rl: Obj | None) -> Quantity | None:
    raw = (rl or {}).get("storage")
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError:
        return None


def storage_usage(pvc: Obj) -> Quantity | None:
    """Whole bytes (issue #94313); the allocated size if larger. Upstream: getStorageUsage."""
    request = _storage(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    result = request.round_up() if request is not None else None
    allocated = _storage((pvc.get("status") or {}).get("allocatedResources"))
    if result is not None and allocated is not None and allocated > result:
        result = allocated.round_up()
    return result


def pvc_usage(pvc: Obj) -> ResourceList:
    """Upstream: pvcEvaluator.Usage."""
    result: ResourceList = {"persistentvolumeclaims": one(), PVC_OBJECT_COUNT_NAME: one()}
    storage_class = pvc_class(pvc)
    if storage_class:
        result[resource_by_storage_class(storage_class, "persistentvolumeclaims")] = one()
    requested = storage_usage(pvc)
    if requested is not None:
        result["requests.storage"] = requested
        if storage_class:
            result[resource_by_storage_class(storage_class, "requests.storage")] = requested
    return result


def requires_quota_replenish(pvc: Obj, old: Obj) -> bool:
    """The allocated storage changed. Upstream: RequiresQuotaReplenish."""
    return (_storage((pvc.get("status") or {}).get("allocatedResources"))
            != _storage((old.get("status") or {}).get("allocatedResources")))
