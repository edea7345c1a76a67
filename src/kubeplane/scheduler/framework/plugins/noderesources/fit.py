"""NodeResourcesFit: does the pod's request fit what the node has left? Scores with the
LeastAllocated strategy (upstream's default ScoringStrategy).

Upstream: noderesources/fit.go
"""
from __future__ import annotations

from dataclasses import dataclass

from .....api.types.core_v1 import Pod
from ...interface import MAX_NODE_SCORE, Code, CycleState, Status, node_column
from ...types import NodeInfo, Resource, pod_requests
from .least_allocated import least_resource_scorer
from .resource_allocation import (
    DEFAULT_RESOURCES, ResourceAllocationScorer, ResourceSpec, ScoreCachedByGeneration, cycle_pod_requests,
    num_all_nodes,
)

NAME = "NodeResourcesFit"
MAX_FIT_CACHES = 64             # distinct pod requests with a cache of Filter verdicts by generation
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


class Fit(ScoreCachedByGeneration):
    NAME = NAME
    PRE_SCORE_STATE_KEY = PRE_SCORE_STATE_KEY

    def __init__(self, handle: object = None, *, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.handle = handle
        self.scorer = ResourceAllocationScorer(NAME, least_resource_scorer(resources), use_requested=False,
                                               resources=resources)
        # (cpu weight, memory weight) when scoring exactly cpu and memory: Score's inline path.
        self.cpu_memory_weights = (resources[0].weight, resources[1].weight) if self.scorer.cpu_memory else None
        self._fit_caches: dict[tuple[int, int, int], dict[int, bool]] = {}

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[None, Status | None]:
        """Compute the pod's requests once for every node's Filter. Upstream: Fit.PreFilter"""
        state.write(PRE_FILTER_STATE_KEY, cycle_pod_requests(state, pod))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Reject with every insufficient resource as a reason. Upstream: Fit.Filter

        The common case (room for one more pod, no extended resources, cpu, memory and
        ephemeral storage within what is left) is decided inline; anything else goes
        through fits_request for the full list of reasons.
        """
        req = state.storage.get(PRE_FILTER_STATE_KEY)
        if req is None:
            req = compute_pod_resource_request(pod)
        alloc, used = node_info.allocatable, node_info.requested
        if (len(node_info.pods) < alloc.allowed_pod_number and not req.scalar_resources
                and (req.milli_cpu <= 0 or req.milli_cpu <= alloc.milli_cpu - used.milli_cpu)
                and (req.memory <= 0 or req.memory <= alloc.memory - used.memory)
                and (req.ephemeral_storage <= 0
                     or req.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage)):
            return None
        insufficient = fits_request(req, node_info)
        if not insufficient:
            return None
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if any(i.unresolvable for i in insufficient) \
            else Code.UNSCHEDULABLE
        return Status(code, *(i.reason for i in insufficient))

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[bool] | None:
        """Per node, whether filter passes it for sure (False: call filter for the verdict and
        its reasons); None when the pod asks for extended resources (filter decides alone).

        Ours, not upstream's: the verdict depends only on the pod's requests and the node's
        pods, requests and allocatable, and a NodeInfo's layout_generation changes with each of
        them (snapshot copies keep it; a status write moves only the generation), so verdicts
        are kept by layout_generation per request: the
        replicas of a workload look every node up at C speed and decide only the one or two
        nodes the last cycle changed.
        """
        req = state.storage.get(PRE_FILTER_STATE_KEY)
        if req is None:
            req = compute_pod_resource_request(pod)
        if req.scalar_resources:
            return None
        key = (req.milli_cpu, req.memory, req.ephemeral_storage)
        cache = self._fit_caches.get(key)
        if cache is None:
            if len(self._fit_caches) >= MAX_FIT_CACHES:
                self._fit_caches.clear()
            cache = self._fit_caches[key] = {}
        elif len(cache) > 4 * num_all_nodes(self.handle, nodes) + 1024:
            cache.clear()
        gens = node_column(state, nodes, "layout_generation")
        verdicts = list(map(cache.get, gens))
        if None in verdicts:
            cpu, mem, eph = key
            for i, ok in enumerate(verdicts):
                if ok is None:
                    ni = nodes[i]
                    alloc, used = ni.allocatable, ni.requested
                    ok = verdicts[i] = cache[gens[i]] = (
                        len(ni.pods) < alloc.allowed_pod_number
                        and (cpu <= 0 or cpu <= alloc.milli_cpu - used.milli_cpu)
                        and (mem <= 0 or mem <= alloc.memory - used.memory)
                        and (eph <= 0 or eph <= alloc.ephemeral_storage - used.ephemeral_storage))
        return verdicts

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """The pod's non-zero request list, and the score cache for it. Upstream: Fit.PreScore"""
        reqs = self.scorer.pod_resource_request_list(pod, state)
        state.write(PRE_SCORE_STATE_KEY, (reqs, self.scorer.score_cache(reqs, num_all_nodes(self.handle, nodes))))
        return None

    def score_node(self, node_info: NodeInfo, reqs: list[int]) -> int:
        """LeastAllocated over the node's non-zero requests plus the pod's, uncached. Upstream: Fit.Score

        For cpu and memory this is least_resource_scorer written out: per resource the node
        has, (capacity - requested) * 100 // capacity (0 when over) times its weight; then
        the weighted mean. Example: 4000m allocatable, 1000m requested after placement ->
        75; memory 50 -> (75 + 50) // 2 = 62.
        """
        weights = self.cpu_memory_weights
        if weights is None:
            return self.scorer.score(node_info, reqs)
        used, alloc = node_info.non_zero_requested, node_info.allocatable
        capacity = alloc.milli_cpu
        node_score = weight_sum = 0
        if capacity:
            requested = used.milli_cpu + reqs[0]
            if requested <= capacity:
                node_score = (capacity - requested) * MAX_NODE_SCORE // capacity * weights[0]
            weight_sum = weights[0]
        capacity = alloc.memory
        if capacity:
            requested = used.memory + reqs[1]
            if requested <= capacity:
                node_score += (capacity - requested) * MAX_NODE_SCORE // capacity * weights[1]
            weight_sum += weights[1]
        return node_score // weight_sum if weight_sum else 0
