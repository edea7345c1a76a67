"""What a pod's containers use, as the kubelet reports it and metrics.k8s.io serves it (shared
by kubelet/resource_usage.py, which measures or declares it, and apiserver/metricsapi, which
reads it from the kubelets' Summary API)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


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
