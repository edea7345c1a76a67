"""From an APIService's service reference to one endpoint's address, as upstream routes it.

The aggregator proxies to an endpoint of the Service, not to its ClusterIP (kubeplane has no
service network): the Service must be ClusterIP, NodePort or LoadBalancer and have the port the
APIService names; the endpoint is a random ready one of its EndpointSlices (label
kubernetes.io/service-name) that serves that port's name. A Service without selector plus a
manual EndpointSlice (or Endpoints, mirrored into a slice) pointing at 127.0.0.1:<port> is how
a local server is reached.

Upstream: ResolveEndpoint, RandomEndpoint, findServicePort (apiserver pkg/util/proxy/proxy.go),
hasAvailableEndpoint (kube-aggregator pkg/controllers/status/remote/remote_available_controller.go).
"""
from __future__ import annotations

import random
from typing import Any

from ...api import errors

Obj = dict[str, Any]
SERVICE_NAME_LABEL = "kubernetes.io/service-name"      # discoveryv1.LabelServiceName
ROUTABLE_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")


class ResolveError(Exception):
    """The service cannot be routed to; str() is upstream's error text."""


def service_unavailable(message: str) -> errors.StatusError:
    """Upstream: errors.NewServiceUnavailable."""
    return errors.StatusError(503, "ServiceUnavailable", message)


def find_service_port(svc: Obj, port: int) -> Obj:
    """The service's port numbered `port`. Upstream: findServicePort"""
    for p in (svc.get("spec") or {}).get("ports") or []:
        if p.get("port") == port:
            return dict(p)
    raise ResolveError(f'no service port {port} found for service "{svc["metadata"]["name"]}"')


def resolve_endpoint(svc: Obj | None, slices: list[Obj], namespace: str, name: str, port: int,
                     rng: random.Random | None = None) -> tuple[str, int]:
    """(host, port) of a random ready endpoint of the service's port, preferring the service's
    first IP family; ResolveError with upstream's text otherwise. Upstream: ResolveEndpoint"""
    if svc is None:
        raise ResolveError(f'service "{name}" not found')
    spec = svc.get("spec") or {}
    svc_type = spec.get("type") or "ClusterIP"
    if svc_type not in ROUTABLE_TYPES:
        raise ResolveError(f'unsupported service type "{svc_type}"')
    svc_port = find_service_port(svc, port)
    families = spec.get("ipFamilies") or []
    return random_endpoint(name, slices, svc_port.get("name") or "", families[0] if families else "", rng)


def random_endpoint(svc_name: str, slices: list[Obj], port_name: str, preferred_family: str,
                    rng: random.Random | None = None) -> tuple[str, int]:
    """A ready endpoint of a slice serving port_name, slices of the preferred family first,
    otherwise in random order. Upstream: RandomEndpoint"""
    rng = rng or random.Random()
    order = list(slices)
    rng.shuffle(order)
    order.sort(key=lambda s: s.get("addressType") != preferred_family)
    for s in order:
        for p in s.get("ports") or []:
            if (p.get("name") or "") != port_name or p.get("port") is None:
                continue
            endpoints = s.get("endpoints") or []
            if not endpoints:
                continue
            offset = rng.randrange(len(endpoints))
            for i in range(len(endpoints)):
                ep = endpoints[(i + offset) % len(endpoints)]
                if (ep.get("conditions") or {}).get("ready") is False or not ep.get("addresses"):
                    continue
                return ep["addresses"][0], int(p["port"])
    raise ResolveError(f'no endpoints available for service "{svc_name}"')


def has_available_endpoint(port_name: str, slices: list[Obj]) -> bool:
    """Some slice has a ready endpoint and a port of that name. Upstream: hasAvailableEndpoint"""
    return any(any((e.get("conditions") or {}).get("ready") is not False for e in s.get("endpoints") or [])
               and any((p.get("name") or "") == port_name and p.get("port") is not None for p in s.get("ports") or [])
               for s in slices)


def host_port(host: str, port: int) -> str:
    """Go's net.JoinHostPort."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
