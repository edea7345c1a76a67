"""Table columns and row printers of PersistentVolumes, PersistentVolumeClaims, LimitRanges,
ResourceQuotas, Endpoints and ComponentStatuses, exactly as upstream's AddHandlers.

Upstream: pkg/printers/internalversion/printers.go (the column definitions in AddHandlers,
printPersistentVolume, printPersistentVolumeClaim, printLimitRange, printResourceQuota,
printEndpoints/formatEndpoints, printComponentStatus) and pkg/apis/core/helper
(GetAccessModesAsString, GetPersistentVolumeClass, GetPersistentVolumeClaimClass).
Quantities are shown as stored (upstream shows them canonicalised, which its decoder does on
write: "1024Mi" reads back "1Gi" there).
"""
from __future__ import annotations

from typing import Any

from .columns import _CORE, _age, _col, _doc, _name
from .printers import Row, format_rfc3339, translate_timestamp_since

Obj = dict[str, Any]
Column = dict[str, Any]
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _quantity(value: Any) -> str:
    return "0" if value is None else str(value)


def access_modes_as_string(modes: list[str] | None) -> str:
    """Upstream: helper.GetAccessModesAsString (fixed order, duplicates once)."""
    modes = modes or []
    short = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
    return ",".join(abbr for mode, abbr in short if mode in modes)


def _storage_class(obj: Obj) -> str:
    """Upstream: GetPersistentVolumeClass / GetPersistentVolumeClaimClass (the beta annotation wins)."""
    annotations = _meta(obj).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return (obj.get("spec") or {}).get("storageClassName") or ""


def persistent_volume_columns() -> list[Column]:
    spec, status = _CORE + "PersistentVolumeSpec", _CORE + "PersistentVolumeStatus"
    return [
        _name(),
        _col("Capacity", "string", _doc(spec, "capacity")),
        _col("Access Modes", "string", _doc(spec, "accessModes")),
        _col("Reclaim Policy", "string", _doc(spec, "persistentVolumeReclaimPolicy")),
        _col("Status", "string", _doc(status, "phase")),
        _col("Claim", "string", _doc(spec, "claimRef")),
        _col("StorageClass", "string", "StorageClass of the pv"),
        _col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        _col("Reason", "string", _doc(status, "reason")),
        _age(),
        _col("VolumeMode", "string", _doc(spec, "volumeMode"), priority=1),
    ]


def print_persistent_volume(pv: Obj, now: float) -> Row:
    """Upstream: printPersistentVolume"""
    meta, spec, status = _meta(pv), pv.get("spec") or {}, pv.get("status") or {}
    claim = spec.get("claimRef")
    claim_str = f"{claim.get('namespace') or ''}/{claim.get('name') or ''}" if isinstance(claim, dict) else ""
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase") or ""
    return [meta.get("name", ""), _quantity((spec.get("capacity") or {}).get("storage")),
            access_modes_as_string(spec.get("accessModes")), spec.get("persistentVolumeReclaimPolicy") or "",
            phase, claim_str, _storage_class(pv), spec.get("volumeAttributesClassName") or "<unset>",
            status.get("reason") or "", translate_timestamp_since(meta.get("creationTimestamp"), now),
            spec.get("volumeMode") or "<unset>"], None


def persistent_volume_claim_columns() -> list[Column]:
    spec, status = _CORE + "PersistentVolumeClaimSpec", _CORE + "PersistentVolumeClaimStatus"
    return [
        _name(),
        _col("Status", "string", _doc(status, "phase")),
        _col("Volume", "string", _doc(spec, "volumeName")),
        _col("Capacity", "string", _doc(status, "capacity")),
        _col("Access Modes", "string", _doc(status, "accessModes")),
        _col("StorageClass", "string", "StorageClass of the pvc"),
        _col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        _age(),
        _col("VolumeMode", "string", _doc(spec, "volumeMode"), priority=1),
    ]


def print_persistent_volume_claim(pvc: Obj, now: float) -> Row:
    """Upstream: printPersistentVolumeClaim — capacity and access modes once bound."""
    meta, spec, status = _meta(pvc), pvc.get("spec") or {}, pvc.get("status") or {}
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase") or ""
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes_as_string(status.get("accessModes"))
        capacity = _quantity((status.get("capacity") or {}).get("storage"))
    return [meta.get("name", ""), phase, spec.get("volumeName") or "", capacity, modes, _storage_class(pvc),
            spec.get("volumeAttributesClassName") or "<unset>",
            translate_timestamp_since(meta.get("creationTimestamp"), now), spec.get("volumeMode") or "<unset>"], None


def limit_range_columns() -> list[Column]:
    return [_name(), _col("Created At", "date", _doc(_META, "creationTimestamp"))]


def print_limit_range(lr: Obj, now: float) -> Row:
    """Upstream: printLimitRange (the creation time itself, not an age)."""
    meta = _meta(lr)
    return [meta.get("name", ""), format_rfc3339(meta.get("creationTimestamp"))], None


def resource_quota_columns() -> list[Column]:
    return [
        _name(),
        _col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
        _col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use "
             "independent of contention on the node."),
        _age(),
    ]


def print_resource_quota(quota: Obj, now: float) -> Row:
    """Upstream: printResourceQuota — "used/hard" per resource of status.hard, limits.* apart
    (the age last, as 1.37 prints it; older releases put it second)."""
    meta, status = _meta(quota), quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        column = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        column.append(f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard[resource])}")
    return [meta.get("name", ""), ", ".join(requests), ", ".join(limits),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def endpoints_columns() -> list[Column]:
    return [_name(), _col("Endpoints", "string", _doc(_CORE + "Endpoints", "subsets")), _age()]


def format_endpoints(ep: Obj) -> str:
    """Upstream: formatEndpoints — the first three ip:port pairs, then "+ N more..."."""
    subsets = ep.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    limit, more, count = 3, False, 0
    for ss in subsets:
        addresses = [a.get("ip") or "" for a in ss.get("addresses") or []]
        ports = ss.get("ports") or []
        pairs: list[list[str]] = [addresses] if not ports else \
            [[_join_host_port(ip, p.get("port", 0)) for ip in addresses] for p in ports]
        for group in pairs:
            count += len(group)
            for item in group:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(item)
    ret = ",".join(shown)
    return f"{ret} + {count - limit} more..." if more else ret


def _join_host_port(ip: str, port: Any) -> str:
    """Go's net.JoinHostPort: an IPv6 address is bracketed."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def print_endpoints(ep: Obj, now: float) -> Row:
    """Upstream: printEndpoints"""
    meta = _meta(ep)
    return [meta.get("name", ""), format_endpoints(ep), translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def component_status_columns() -> list[Column]:
    return [_name(), _col("Status", "string", "Status of the component conditions"),
            _col("Message", "string", "Message of the component conditions"),
            _col("Error", "string", "Error of the component conditions")]


def print_component_status(cs: Obj, now: float) -> Row:
    """Upstream: printComponentStatus — the Healthy condition: Healthy, Unhealthy or Unknown."""
    status, message, error = "Unknown", "", ""
    for c in cs.get("conditions") or []:
        if c.get("type") == "Healthy":
            status = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message, error = c.get("message") or "", c.get("error") or ""
            break
    return [_meta(cs).get("name", ""), status, message, error], None
