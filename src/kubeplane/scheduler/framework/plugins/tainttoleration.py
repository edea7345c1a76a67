"""TaintToleration: filter on NoSchedule/NoExecute taints, prefer nodes with fewer
untolerated PreferNoSchedule taints. Upstream: plugins/tainttoleration/taint_toleration.go
"""
from __future__ import annotations

from ....api.types.core_v1 import Node, Pod, Toleration
from ..aggregate import NodeAggregate
from ..interface import MAX_NODE_SCORE, Code, CycleState, NodeScore, PreFilterResult, Status
from ..types import NodeInfo, unresolvable
from .helper import (
    default_normalize_score, find_matching_untolerated_taint, no_node_counted, passed_unless_counted,
    tolerations_tolerate_taint,
)

PRE_SCORE_STATE_KEY = "PreScoreTaintToleration"
_FILTER_EFFECTS = ("NoSchedule", "NoExecute")


class TaintToleration:
    NAME = "TaintToleration"

    def __init__(self, handle: object = None) -> None:
        self.handle = handle
        self.tainted: NodeAggregate[str] = NodeAggregate(_tainted, node_only=True)
        self.prefer_tainted: NodeAggregate[str] = NodeAggregate(_prefer_tainted, node_only=True)

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Skip Filter while no node has a NoSchedule or NoExecute taint: it would pass every
        node (ours, not upstream's; the count is a sum kept across cycles)."""
        return None, Status(Code.SKIP) if no_node_counted(self.handle, self.tainted) else None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[bool] | None:
        """True for the nodes Filter passes whatever the pod: those that no NoSchedule or NoExecute taint
        (the nodes the pre_filter's sum counts are left to Filter). Ours."""
        return passed_unless_counted(self.handle, self.tainted, state, nodes)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Reject the node if one of its NoSchedule/NoExecute taints is not tolerated.

        Upstream: TaintToleration.Filter
        """
        node = node_info.node
        taints = node.spec.taints if node.spec else None
        if not taints:
            return None
        taint = find_matching_untolerated_taint(taints, pod.spec.tolerations or [], _FILTER_EFFECTS)
        if taint is None:
            return None
        return unresolvable(f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}")

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Keep the tolerations that can tolerate PreferNoSchedule. Upstream: PreScore

        Skip (not upstream) when no node has a PreferNoSchedule taint the pod does not
        tolerate: every node would count 0 and normalize to 100, the same weighted 300
        added to every total, which changes no ranking, tie or choice of host.
        """
        if no_node_counted(self.handle, self.prefer_tainted):
            return Status(Code.SKIP)        # no PreferNoSchedule taint at all: no scan of the nodes
        tolerations = get_all_toleration_prefer_no_schedule(pod.spec.tolerations or [])
        tainted = [ni.node for ni in nodes if ni.node.spec and ni.node.spec.taints]
        if not any(count_intolerable_taints_prefer_no_schedule(node, tolerations) for node in tainted):
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, tolerations)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The number of PreferNoSchedule taints not tolerated (fewer is better, see normalize)."""
        return count_intolerable_taints_prefer_no_schedule(node_info.node, state.read(PRE_SCORE_STATE_KEY))

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None


def count_intolerable_taints_prefer_no_schedule(node: Node, tolerations: list[Toleration]) -> int:
    """Upstream: countIntolerableTaintsPreferNoSchedule"""
    taints = node.spec.taints if node.spec else None
    if not taints:
        return 0
    return sum(1 for t in taints if t.effect == "PreferNoSchedule" and not tolerations_tolerate_taint(tolerations, t))


def get_all_toleration_prefer_no_schedule(tolerations: list[Toleration]) -> list[Toleration]:
    """Tolerations with an empty effect or PreferNoSchedule. Upstream: getAllTolerationPreferNoSchedule"""
    return [t for t in tolerations if not t.effect or t.effect == "PreferNoSchedule"]


def _tainted(ni: NodeInfo) -> dict[str, int] | None:
    spec = ni.node.spec
    taints = spec.taints if spec is not None else None
    return {"tainted": 1} if taints and any(t.effect in _FILTER_EFFECTS for t in taints) else None


def _prefer_tainted(ni: NodeInfo) -> dict[str, int] | None:
    spec = ni.node.spec
    taints = spec.taints if spec is not None else None
    return {"prefer": 1} if taints and any(t.effect == "PreferNoSchedule" for t in taints) else None
