"""NodeResourcesFit: does the pod's request fit what the node has left? Scores with the
LeastAllocated strategy (upstream's default ScoringStrategy).

Upstream: noderesources/fit.go
"""
from __future__ import annotations

from dataclasses import dataclass

from .....api.types.core_v1 import Pod
from ...interface import Code, CycleState, Status
from ...types import NodeInfo, Resource, pod_requests
from .least_allocated import least_resource_scorer
from .resource_allocation import DEFAULT_RESOURCES, ResourceAllocationScorer, ResourceSpec

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True)
class InsufficientResource:
    """Upstream: noderesources.InsufficientResource"""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False     # the request exceeds the node's whole allocatable


def compute_pod_resource_request(pod: Pod) -> Resource:
    """Upstream: computePodResourceRequest (see types.pod_requests for the init-container rule)."""
    return pod_requests(pod)


def fits_request(req: Resource, node_info: NodeInfo) -> list[InsufficientResource]:
    """Every resource the node lacks for the pod, pods first, then cpu, memory, ephemeral
    storage and extended resources.

    Example: node allocatable 4 cpu with 3500m requested, pod asks 1 cpu -> 1000 > 500
    left -> [Insufficient cpu]; a pod asking 5 cpu is also unresolvable (5 > 4 even empty).
    Upstream: fitsRequest
    """
    out = []
    alloc, used = node_info.allocatable, node_info.requested
    if len(node_info.pods) + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource("pods", "Too many pods", 1, len(node_info.pods), alloc.allowed_pod_number))
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar_resources:
        return out
    for name, want, have, total in (("cpu", req.milli_cpu, used.milli_cpu, alloc.milli_cpu),
                                    ("memory", req.memory, used.memory, alloc.memory),
                                    ("ephemeral-storage", req.ephemeral_storage, used.ephemeral_storage,
                                     alloc.ephemeral_storage)):
        if want > 0 and want > total - have:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, have, total, want > total))
    for name, want in req.scalar_resources.items():
        if want == 0:
            continue
        total, have = alloc.scalar_resources.get(name, 0), used.scalar_resources.get(name, 0)
        if want > total - have:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, have, total, want > total))
    return out


class Fit:
    NAME = NAME

    def __init__(self, handle: object = None, *, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.scorer = ResourceAllocationScorer(NAME, least_resource_scorer(resources), use_requested=False,
                                               resources=resources)

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, compute_pod_resource_request(pod))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Reject with every insufficient resource as a reason. Upstream: Fit.Filter"""
        try:
            req = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            req = compute_pod_resource_request(pod)
        insufficient = fits_request(req, node_info)
        if not insufficient:
            return None
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if any(i.unresolvable for i in insufficient) \
            else Code.UNSCHEDULABLE
        return Status(code, *(i.reason for i in insufficient))

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self.scorer.pod_resource_request_list(pod))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return self.scorer.score(node_info, state.read(PRE_SCORE_STATE_KEY))
