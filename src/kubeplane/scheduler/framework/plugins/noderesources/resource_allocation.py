"""The shared scorer behind LeastAllocated and BalancedAllocation.

Upstream: noderesources/resource_allocation.go
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .....api.types.core_v1 import Pod
from ....quantity import CPU, EPHEMERAL_STORAGE, MEMORY
from ...interface import CycleState, node_column
from ...types import NodeInfo, Resource, cycle_pod_info, is_scalar_resource_name, pod_requests

MAX_CACHED_REQUEST_LISTS = 64       # distinct pod request lists with a score cache



def cycle_pod_requests(state: CycleState | None, pod: Pod, non_zero: bool = False) -> Resource:
    """pod_requests(pod, non_zero=...), worked out once per pod: kept by the cycle's PodInfo
    (types.cycle_pod_info: the queue's, which keeps them across attempts; read-only: shared)."""
    if state is None:
        return pod_requests(pod, non_zero=non_zero)
    pi = cycle_pod_info(state, pod)
    return pi.non_zero_requests if non_zero else pi.requests


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


class ScoreCachedByGeneration:
    """Score through the score cache PreScore stored under PRE_SCORE_STATE_KEY.

    For plugins whose PreScore writes (pod request list, ResourceAllocationScorer.score_cache)
    and whose score_node(node_info, request list) computes a score uncached: a node's
    score is looked up by its layout_generation when an earlier cycle scored the same node
    state for the same requests, and computed and remembered otherwise. (The score reads
    the node's requests, pod count and allocatable, which change only with the layout: a
    status write, which moves only the generation, leaves the score as it was.)
    """

    PRE_SCORE_STATE_KEY: str

    def score_node(self, node_info: NodeInfo, reqs: list[int]) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Upstream: Fit.Score, BalancedAllocation.Score (with the cache in front)"""
        reqs, cache = state.storage[self.PRE_SCORE_STATE_KEY]
        score = cache.get(node_info.layout_generation)
        if score is None:
            score = cache[node_info.layout_generation] = self.score_node(node_info, reqs)
        return score

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """[score(state, pod, ni) for ni in nodes], without a call per cached node."""
        reqs, cache = state.storage[self.PRE_SCORE_STATE_KEY]
        gens = node_column(state, nodes, "layout_generation")
        out = list(map(cache.get, gens))          # at C level: most nodes are unchanged
        if None in out:
            score_node = self.score_node
            for i, score in enumerate(out):
                if score is None:
                    out[i] = cache[gens[i]] = score_node(nodes[i], reqs)
        return out


def num_all_nodes(handle: Any, nodes: list[NodeInfo]) -> int:
    """The snapshot's node count (the scored nodes when there is no snapshot). The score
    cache is sized by it: filtering starts each cycle where the last stopped, so successive
    cycles score different slices of the cluster, and a cache sized by one slice was
    cleared before any node came round again (no hit at 5,000 nodes)."""
    lister = getattr(handle, "snapshot_shared_lister", None)
    snapshot = lister() if lister is not None else None
    return max(len(nodes), snapshot.num_nodes() if snapshot is not None else 0)


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
        # The default resources, which the plugins score inline (without lists or lookups).
        self.cpu_memory = tuple(r.name for r in resources) == (CPU, MEMORY)
        self._score_caches: dict[tuple[int, ...], dict[int, int]] = {}

    def score_cache(self, pod_request_list: list[int], num_nodes: int) -> dict[int, int]:
        """NodeInfo layout_generation -> score, for pods requesting pod_request_list.

        A score depends only on the node's requests and allocatable and on the pod's
        request list, and a NodeInfo's layout_generation changes with every change to them
        (snapshot copies keep it), so a layout_generation names one set of inputs. Pods of one
        workload ask for the same, and a cycle changes one node: the next cycle computes
        one score and looks up the rest. Entries of superseded generations are dropped by
        clearing when the cache outgrows the cluster several times over.
        """
        key = tuple(pod_request_list)
        caches = self._score_caches
        cache = caches.get(key)
        if cache is None:
            if len(caches) >= MAX_CACHED_REQUEST_LISTS:
                caches.clear()
            cache = caches[key] = {}
        elif len(cache) > 4 * num_nodes + 1024:
            cache.clear()
        return cache

    def pod_resource_request_list(self, pod: Pod, state: CycleState | None = None) -> list[int]:
        """The pod's request per configured resource. Upstream: calculatePodResourceRequestList"""
        req = cycle_pod_requests(state, pod, non_zero=not self.use_requested)
        return [_get(req, r.name) for r in self.resources]

    def score(self, node_info: NodeInfo, pod_request_list: list[int]) -> int:
        """Upstream: resourceAllocationScorer.score"""
        if self.cpu_memory:       # the default resources: the hot path, without lookups
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
            capacity = _get(node_info.allocatable, name)
            in_use = node_info.requested.ephemeral_storage if name == EPHEMERAL_STORAGE else _get(requested_node, name)
            requested.append(in_use + pod_req if capacity else 0)
            allocatable.append(capacity)
        return self.scorer(requested, allocatable)
