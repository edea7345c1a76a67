"""Tables of apiregistration.k8s.io/v1.
Upstream: the APIService table convertor (kube-aggregator pkg/registry/apiservice/etcd/etcd.go)."""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]


def api_service_columns() -> list[Column]:
    return [_name(), _col("Service", "string", "The reference to the service that hosts this API endpoint."),
            _col("Available", "string", "Whether this service is available."), _age()]


def available(svc: Obj) -> str:
    """Upstream: getConditionString — the Available condition, with its reason when not True."""
    for c in (svc.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Available":
            status = c.get("status") or ""
            return f"{status} ({c['reason']})" if status != "True" and c.get("reason") else status
    return "Unknown"


def print_api_service(svc: Obj, now: float) -> Row:
    meta, ref = svc.get("metadata") or {}, (svc.get("spec") or {}).get("service")
    service = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, dict) else "Local"
    return [meta.get("name", ""), service, available(svc),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
