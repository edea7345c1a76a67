"""Table columns and row printer of discovery.k8s.io EndpointSlices, exactly as upstream's.

Upstream: pkg/printers/internalversion/printers.go (printEndpointSlice, formatDiscoveryPorts,
formatDiscoveryEndpoints, listWithMoreString).
"""
from __future__ import annotations

from typing import Any

from .columns import _age, _col, _doc, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]
Column = dict[str, Any]
_SLICE = "io.k8s.api.discovery.v1.EndpointSlice"
MAX_SHOWN = 3


def endpoint_slice_columns() -> list[Column]:
    return [_name(), _col("AddressType", "string", _doc(_SLICE, "addressType")),
            _col("Ports", "string", _doc(_SLICE, "ports")), _col("Endpoints", "string", _doc(_SLICE, "endpoints")),
            _age()]


def list_with_more_string(items: list[str]) -> str:
    """Upstream: listWithMoreString over the first three of all the items."""
    ret = ",".join(items[:MAX_SHOWN])
    if len(items) > MAX_SHOWN:
        return f"{ret} + {len(items) - MAX_SHOWN} more..."
    return ret or "<unset>"


def format_discovery_ports(ports: list[Obj] | None) -> str:
    """Upstream: formatDiscoveryPorts — the port number, else its name, else <unset>."""
    shown = []
    for p in ports or []:
        num = p.get("port")
        shown.append(str(num) if num is not None else p["name"] if p.get("name") is not None else "<unset>")
    return list_with_more_string(shown)


def format_discovery_endpoints(endpoints: list[Obj] | None) -> str:
    """Upstream: formatDiscoveryEndpoints — every address of every endpoint."""
    return list_with_more_string([a for e in endpoints or [] for a in e.get("addresses") or []])


def print_endpoint_slice(eps: Obj, now: float) -> Row:
    """Upstream: printEndpointSlice"""
    meta = eps.get("metadata") or {}
    return [meta.get("name", ""), eps.get("addressType") or "", format_discovery_ports(eps.get("ports")),
            format_discovery_endpoints(eps.get("endpoints")),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
