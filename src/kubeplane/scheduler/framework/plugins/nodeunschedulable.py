"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint.

Upstream: plugins/nodeunschedulable/node_unschedulable.go
"""
from __future__ import annotations

from ....api.types.core_v1 import Pod, Taint
from ..aggregate import NodeAggregate
from ..interface import Code, CycleState, PreFilterResult, Status
from ..types import NodeInfo, unresolvable
from .helper import no_node_counted, passed_unless_counted, tolerations_tolerate_taint

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")


class NodeUnschedulable:
    NAME = "NodeUnschedulable"

    def __init__(self, handle: object = None) -> None:
        self.handle = handle
        self.cordoned: NodeAggregate[str] = NodeAggregate(_cordoned, node_only=True)

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Skip Filter while no node is unschedulable: it would pass every node (ours, not
        upstream's: the count is a sum kept across cycles, so a cycle costs a node less call
        per node, not a pass over them)."""
        return None, Status(Code.SKIP) if no_node_counted(self.handle, self.cordoned) else None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[bool] | None:
        """True for the nodes Filter passes whatever the pod: those that is not unschedulable
        (the nodes the pre_filter's sum counts are left to Filter). Ours."""
        return passed_unless_counted(self.handle, self.cordoned, state, nodes)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return unresolvable(ERR_REASON_UNKNOWN_CONDITION)
        if not (node.spec and node.spec.unschedulable):
            return None
        if tolerations_tolerate_taint(pod.spec.tolerations or [], _TAINT):
            return None
        return unresolvable(ERR_REASON_UNSCHEDULABLE)


def _cordoned(ni: NodeInfo) -> dict[str, int] | None:
    spec = ni.node.spec
    return {"unschedulable": 1} if spec is not None and spec.unschedulable else None
