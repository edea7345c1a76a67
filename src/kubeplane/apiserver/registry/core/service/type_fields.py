"""The Service strategy's part in allocation: fields that only a type needs go when the type
changes (after the allocators released what they held for them).

Upstream: dropTypeDependentFields (pkg/registry/core/service/strategy.go), called by
svcStrategy.PrepareForUpdate.
"""
from __future__ import annotations

from typing import Any

from .alloc import _ips, _spec, needs_cluster_ip, needs_health_check, needs_node_port

Obj = dict[str, Any]


def drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """Clear what the old type needed and the new one does not, where the client left it as
    it was (an allocated or defaulted value, not one the client asks for). Example: a
    NodePort Service patched to type ClusterIP loses its nodePorts; one patched to ExternalName
    also loses clusterIP(s), ipFamilies and ipFamilyPolicy."""
    spec, ospec = _spec(new), _spec(old)
    if needs_cluster_ip(old) and not needs_cluster_ip(new):
        if _ips(spec, "clusterIPs") == _ips(ospec, "clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if _ips(spec, "ipFamilies") == _ips(ospec, "ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == ospec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_port(old) and not needs_node_port(new) and _node_ports(spec) == _node_ports(ospec):
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.pop("nodePort", None)
    if needs_health_check(old) and not needs_health_check(new) \
            and spec.get("healthCheckNodePort") == ospec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if spec.get("type") != "LoadBalancer":
        spec.pop("allocateLoadBalancerNodePorts", None)
        if ospec.get("type") == "LoadBalancer" and spec.get("loadBalancerClass") == ospec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
        if isinstance(new.get("status"), dict):
            new["status"]["loadBalancer"] = {}      # no longer a load balancer
    if _externally_accessible(ospec) and not _externally_accessible(spec) \
            and spec.get("externalTrafficPolicy") == ospec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


def _node_ports(spec: Obj) -> list[Any]:
    return [p.get("nodePort") for p in spec.get("ports") or [] if isinstance(p, dict)]


def _externally_accessible(spec: Obj) -> bool:
    """Upstream: service.ExternallyAccessible."""
    t = spec.get("type")
    return t in ("LoadBalancer", "NodePort") or (t == "ClusterIP" and bool(spec.get("externalIPs")))
