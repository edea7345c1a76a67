"""The shared scorer behind LeastAllocated and BalancedAllocation.

Upstream: noderesources/resource_allocation.go
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .....api.types.core_v1 import Pod
from ....quantity import CPU, EPHEMERAL_STORAGE, MEMORY
from ...types import NodeInfo, Resource, is_scalar_resource_name, pod_requests


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int = 1


# Upstream: defaultResourceSpec (apis/config/v1/defaults.go): cpu and memory, weight 1 each.
DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def _get(r: Resource, name: str) -> int:
    if name == CPU:
        return r.milli_cpu
    if name == MEMORY:
        return r.memory
    if name == EPHEMERAL_STORAGE:
        return r.ephemeral_storage
    return r.scalar_resources.get(name, 0)


class ResourceAllocationScorer:
    """Score = scorer(requested-after-placement, allocatable) over the configured resources.

    use_requested=False (LeastAllocated) counts the non-zero requests, so pods that ask for
    nothing still spread; BalancedAllocation counts the real requests.
    Upstream: resourceAllocationScorer
    """

    def __init__(self, name: str, scorer: Callable[[list[int], list[int]], int], *,
                 use_requested: bool, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.name = name
        self.scorer = scorer
        self.use_requested = use_requested
        self.resources = resources
        self._cpu_memory = tuple(r.name for r in resources) == (CPU, MEMORY)

    def pod_resource_request_list(self, pod: Pod) -> list[int]:
        """The pod's request per configured resource. Upstream: calculatePodResourceRequestList"""
        req = pod_requests(pod, non_zero=not self.use_requested)
        return [_get(req, r.name) for r in self.resources]

    def score(self, node_info: NodeInfo, pod_request_list: list[int]) -> int:
        """Upstream: resourceAllocationScorer.score"""
        if self._cpu_memory:       # the default resources: the hot path, without lookups
            used = node_info.requested if self.use_requested else node_info.non_zero_requested
            alloc = node_info.allocatable
            a_cpu, a_mem = alloc.milli_cpu, alloc.memory
            return self.scorer([used.milli_cpu + pod_request_list[0] if a_cpu else 0,
                                used.memory + pod_request_list[1] if a_mem else 0], [a_cpu, a_mem])
        requested_node = node_info.requested if self.use_requested else node_info.non_zero_requested
        requested, allocatable = [], []
        for spec, pod_req in zip(self.resources, pod_request_list):
            name = spec.name
            if pod_req == 0 and is_scalar_resource_name(name):
                requested.append(0)          # an extended resource the pod does not use: ignored
                allocatable.append(0)
                continue
            alloc = _get(node_info.allocatable, name)
            used = node_info.requested.ephemeral_storage if name == EPHEMERAL_STORAGE else _get(requested_node, name)
            requested.append(used + pod_req if alloc else 0)
            allocatable.append(alloc)
        return self.scorer(requested, allocatable)
