"""Defaulting of discovery.k8s.io/v1 EndpointSlices.

Upstream: pkg/apis/discovery/v1/defaults.go (SetDefaults_EndpointPort: name "", protocol TCP).
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def set_defaults_endpoint_slice(eps: Obj) -> None:
    ports = eps.get("ports")
    for port in ports if isinstance(ports, list) else ():
        if isinstance(port, dict):
            if port.get("name") is None:
                port["name"] = ""
            if port.get("protocol") is None:
                port["protocol"] = "TCP"
