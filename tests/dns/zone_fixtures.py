"""Objects for the cluster DNS tests: typed Services, EndpointSlices and Namespaces as the
informers hand them over."""
from __future__ import annotations

from typing import Any

from kubeplane.api.types import core_v1, discovery_v1
from kubeplane.api.types.base import from_dict
from kubeplane.dns.records import ClusterZone


def service(name: str, ns: str = "default", *, cluster_ip: str = "10.96.0.20", type_: str = "ClusterIP",
            ports: list[dict[str, Any]] | None = None, external_name: str | None = None) -> core_v1.Service:
    spec: dict[str, Any] = {"type": type_, "ports": ports if ports is not None else
                            [{"name": "http", "port": 80, "protocol": "TCP"}]}
    if type_ == "ExternalName":
        spec = {"type": type_, "externalName": external_name}
    else:
        spec["clusterIP"] = cluster_ip
        spec["clusterIPs"] = [cluster_ip]
    return from_dict({"metadata": {"name": name, "namespace": ns}, "spec": spec}, core_v1.Service)


def endpoint_slice(service_name: str, endpoints: list[dict[str, Any]], ns: str = "default", *,
                   name: str = "", ports: list[dict[str, Any]] | None = None) -> discovery_v1.EndpointSlice:
    return from_dict({"metadata": {"name": name or f"{service_name}-abcde", "namespace": ns,
                                   "labels": {"kubernetes.io/service-name": service_name}},
                      "addressType": "IPv4", "endpoints": endpoints,
                      "ports": ports if ports is not None else [{"name": "http", "port": 8080, "protocol": "TCP"}]},
                     discovery_v1.EndpointSlice)


def namespace(name: str) -> core_v1.Namespace:
    return from_dict({"metadata": {"name": name}}, core_v1.Namespace)


def zone_with(*objs: Any, **kwargs: Any) -> ClusterZone:
    z = ClusterZone(dns_ips=("10.96.0.10",), now=lambda: 1_700_000_000.0, **kwargs)
    z.set_namespace(namespace("default"))
    z.set_namespace(namespace("kube-system"))
    for o in objs:
        if isinstance(o, core_v1.Service):
            z.set_service(o)
        elif isinstance(o, discovery_v1.EndpointSlice):
            z.set_slice(o)
        else:
            z.set_namespace(o)
    return z
