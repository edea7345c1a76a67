"""Fields Go's JSON encoder always writes, filled in where a client left them out.

Upstream decodes every object into a Go struct and encodes that, so a field whose JSON tag has
no `omitempty` is always in the answer (an empty string, a 0), and a struct-typed field is
always there too (encoding/json never omits a struct, omitempty or not). Clients rely on it:
lightkube 1.0 cannot list Nodes whose `status.nodeInfo` lacks `kubeProxyVersion` (deprecated
since 1.31, no longer reported by kubelets, yet still tagged `json:"kubeProxyVersion"` in
1.37 and listed as required in the OpenAPI schema).

kubeplane stores the JSON it was sent, so these are filled when an object is written (run by
the kind's defaulter, on every write path including /status).
"""
from __future__ import annotations

from typing import Any

# Upstream: NodeSystemInfo (k8s.io/api/core/v1/types.go): every string without omitempty
# (swap, a pointer, is omitempty).
NODE_SYSTEM_INFO_FIELDS = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                           "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                           "operatingSystem", "architecture")


def _struct(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def fill_node(node: dict[str, Any]) -> None:
    """A Node as Go encodes it: `spec: {}`; status with `daemonEndpoints.kubeletEndpoint.Port`
    and the ten strings of `nodeInfo`, "" or 0 when unset. Example: a bare `{"metadata":
    {"name": "n"}}` gets `"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
    "nodeInfo": {"machineID": "", ..., "kubeProxyVersion": "", ...}}`.
    """
    _struct(node, "spec")
    status = _struct(node, "status")
    endpoint = _struct(_struct(status, "daemonEndpoints"), "kubeletEndpoint")
    endpoint.setdefault("Port", 0)
    info = _struct(status, "nodeInfo")
    for key in NODE_SYSTEM_INFO_FIELDS:
        info.setdefault(key, "")
