"""LeastAllocated: prefer nodes with the most room left. Upstream: noderesources/least_allocated.go"""
from __future__ import annotations

from ...interface import MAX_NODE_SCORE
from .resource_allocation import DEFAULT_RESOURCES, ResourceSpec


def least_requested_score(requested: int, capacity: int) -> int:
    """(capacity - requested) * 100 / capacity, 0 when full or over.

    Example: 4000m allocatable, 1000m requested after placement -> 3000*100/4000 = 75.
    Upstream: leastRequestedScore
    """
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_resource_scorer(resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES):  # type: ignore[no-untyped-def]
    """The weighted mean of least_requested_score over resources the node has.

    Upstream: leastResourceScorer
    """
    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for spec, req, alloc in zip(resources, requested, allocatable):
            if alloc == 0:
                continue
            node_score += least_requested_score(req, alloc) * spec.weight
            weight_sum += spec.weight
        return node_score // weight_sum if weight_sum else 0
    return scorer
