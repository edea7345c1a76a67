"""Service links: the environment variables through which a container finds the Services of
its namespace (and the API server), as the kubelet sets them.

    service_env(pod, services)   # {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "WEB_PORT": "tcp://...", ...}

Services with a ClusterIP only (not headless, not ExternalName): those of the pod's namespace
when `enableServiceLinks` is unset or true, and the `kubernetes` Service of `default` always.
For a Service `web-api` with ClusterIP 10.96.0.20 and port `http` 80/TCP:

    WEB_API_SERVICE_HOST=10.96.0.20          WEB_API_PORT=tcp://10.96.0.20:80
    WEB_API_SERVICE_PORT=80                  WEB_API_PORT_80_TCP=tcp://10.96.0.20:80
    WEB_API_SERVICE_PORT_HTTP=80             WEB_API_PORT_80_TCP_PROTO=tcp
                                             WEB_API_PORT_80_TCP_PORT=80
                                             WEB_API_PORT_80_TCP_ADDR=10.96.0.20

Upstream: Kubelet.getServiceEnvVarMap (kubelet_pods.go), envvars.FromServices
(pkg/kubelet/envvars/envvars.go).
"""
from __future__ import annotations

from typing import Any

MASTER_NAMESPACE = "default"
KUBERNETES_SERVICE = "kubernetes"


def service_env(pod: Any, services: list[Any]) -> dict[str, str]:
    """The pod's service link variables (services: every Service the kubelet knows of)."""
    ns = pod.metadata.namespace or "default"
    links = pod.spec.enable_service_links if pod.spec is not None else None
    chosen: dict[str, Any] = {}
    for svc in services:
        spec, m = svc.spec, svc.metadata
        if spec is None or not spec.cluster_ip or spec.cluster_ip == "None":
            continue
        if m.namespace == MASTER_NAMESPACE and m.name == KUBERNETES_SERVICE:
            chosen.setdefault(m.name, svc)   # always, even with enableServiceLinks false
        elif m.namespace == ns and links is not False:
            chosen[m.name or ""] = svc
    env: dict[str, str] = {}
    for svc in sorted(chosen.values(), key=lambda s: (s.metadata.namespace, s.metadata.name)):
        env.update(_from_service(svc))
    return env


def _from_service(svc: Any) -> dict[str, str]:
    """Upstream: envvars.FromServices for one Service."""
    spec = svc.spec
    name = (svc.metadata.name or "").upper().replace("-", "_")
    ip, ports = spec.cluster_ip, spec.ports or []
    env = {f"{name}_SERVICE_HOST": ip}
    if ports:
        env[f"{name}_SERVICE_PORT"] = str(ports[0].port)
    for p in ports:
        if p.name:
            env[f"{name}_SERVICE_PORT_{p.name.upper().replace('-', '_')}"] = str(p.port)
    if ports:
        first = ports[0]
        env[f"{name}_PORT"] = f"{(first.protocol or 'TCP').lower()}://{_host_port(ip, first.port)}"
    for p in ports:
        proto = (p.protocol or "TCP")
        prefix = f"{name}_PORT_{p.port}_{proto.upper()}"
        env[prefix] = f"{proto.lower()}://{_host_port(ip, p.port)}"
        env[f"{prefix}_PROTO"] = proto.lower()
        env[f"{prefix}_PORT"] = str(p.port)
        env[f"{prefix}_ADDR"] = ip
    return env


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
