"""What each running container uses: the kubelet's resource metrics (upstream: the
/metrics/resource endpoint and the Summary API, which metrics-server scrapes).

Simulated containers use what their pod declares, read at every scrape, so patching the
annotation changes the load of a running pod (how an e2e makes an HPA scale):

    sim.kubeplane.io/cpu-usage: 250m              every container of the pod
    sim.kubeplane.io/memory-usage: 64Mi
    sim.kubeplane.io/cpu-usage.<container>: 1     one container (wins over the pod's)

Without an annotation a container uses a tenth of its request (1m CPU and 4Mi memory without
one). A node uses the sum of its running pods plus NODE_BASE (the kubelet and system daemons).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable

from ..api import quantity

PREFIX = "sim.kubeplane.io/"
DEFAULT_FRACTION = Fraction(1, 10)                 # of the request
DEFAULT_CPU, DEFAULT_MEMORY = Fraction(1, 1000), Fraction(4 * 1024 * 1024)
NODE_BASE = {"cpu": Fraction(50, 1000), "memory": Fraction(256 * 1024 * 1024)}


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    name: str
    cpu: Fraction          # cores
    memory: Fraction       # bytes


@dataclass(frozen=True, slots=True)
class PodUsage:
    namespace: str
    name: str
    containers: tuple[ContainerUsage, ...]


def container_usage(pod: Any, container: Any) -> ContainerUsage:
    annotations = pod.metadata.annotations or {}
    requests = (container.resources.requests if container.resources else None) or {}
    values = []
    for resource, default in (("cpu", DEFAULT_CPU), ("memory", DEFAULT_MEMORY)):
        declared = annotations.get(f"{PREFIX}{resource}-usage.{container.name}") or annotations.get(
            f"{PREFIX}{resource}-usage")
        q = quantity.Quantity.parse(declared) if declared else None
        if q is not None and q.value >= 0:
            values.append(q.value)
        elif resource in requests and (r := quantity.Quantity.parse(requests[resource])) is not None:
            values.append(r.value * DEFAULT_FRACTION)
        else:
            values.append(default)
    return ContainerUsage(container.name, values[0], values[1])


def pod_usage(pod: Any) -> PodUsage | None:
    """The usage of the pod's running containers; None if none runs (metrics-server skips it)."""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    running = {s.name for s in statuses if s.state is not None and s.state.running is not None}
    if not running:
        return None
    containers = tuple(container_usage(pod, c) for c in pod.spec.containers or () if c.name in running)
    return PodUsage(pod.metadata.namespace or "", pod.metadata.name or "", containers)


def node_usage(pods: Iterable[Any], node: str) -> tuple[dict[str, Fraction], list[PodUsage]]:
    """(the node's total, each running pod's usage) for the pods bound to `node`."""
    usages = [u for p in pods if p.spec is not None and p.spec.node_name == node and (u := pod_usage(p)) is not None]
    total = dict(NODE_BASE)
    for u in usages:
        for c in u.containers:
            total["cpu"] += c.cpu
            total["memory"] += c.memory
    return total, usages
