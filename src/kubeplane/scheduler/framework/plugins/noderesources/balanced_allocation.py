"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay in proportion.

Upstream: noderesources/balanced_allocation.go
"""
from __future__ import annotations

import math

from .....api.types.core_v1 import Pod
from ...interface import MAX_NODE_SCORE, Code, CycleState, Status
from ...types import NodeInfo
from .resource_allocation import (
    DEFAULT_RESOURCES, ResourceAllocationScorer, ResourceSpec, ScoreCachedByGeneration, num_all_nodes,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def balanced_resource_scorer(requested: list[int], allocatable: list[int]) -> int:
    """(1 - standard deviation of the used fractions) * 100.

    Example: after placement cpu 2000m/4000m = 0.5, memory 6Gi/8Gi = 0.75; with two
    resources std = |0.5 - 0.75| / 2 = 0.125 -> int((1 - 0.125) * 100) = 87.
    Upstream: balancedResourceScorer
    """
    fractions = []
    for req, alloc in zip(requested, allocatable):
        if alloc == 0:
            continue
        fractions.append(min(req / alloc, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


class BalancedAllocation(ScoreCachedByGeneration):
    NAME = NAME
    PRE_SCORE_STATE_KEY = PRE_SCORE_STATE_KEY

    def __init__(self, handle: object = None, *, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.handle = handle
        self.scorer = ResourceAllocationScorer(NAME, balanced_resource_scorer, use_requested=True,
                                               resources=resources)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Skip BestEffort pods, or they would all pile onto one node (issue #129138).

        Upstream: BalancedAllocation.PreScore
        """
        reqs = self.scorer.pod_resource_request_list(pod, state)
        if not any(reqs):
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, (reqs, self.scorer.score_cache(reqs, num_all_nodes(self.handle, nodes))))
        return None

    def score_node(self, node_info: NodeInfo, reqs: list[int]) -> int:
        """The score, uncached. Upstream: BalancedAllocation.Score

        For cpu and memory this is balanced_resource_scorer written out: with both
        allocatable, 100 * (1 - |cpu fraction - memory fraction| / 2), each fraction capped
        at 1; with fewer than two, the deviation is 0 -> 100.
        """
        if not self.scorer.cpu_memory:
            return self.scorer.score(node_info, reqs)
        alloc = node_info.allocatable
        a_cpu, a_mem = alloc.milli_cpu, alloc.memory
        if not (a_cpu and a_mem):
            return MAX_NODE_SCORE               # int((1 - 0.0) * 100)
        used = node_info.requested
        f_cpu = (used.milli_cpu + reqs[0]) / a_cpu
        f_mem = (used.memory + reqs[1]) / a_mem
        if f_cpu > 1.0:
            f_cpu = 1.0
        if f_mem > 1.0:
            f_mem = 1.0
        return int((1 - abs((f_cpu - f_mem) / 2)) * MAX_NODE_SCORE)
