"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint.

Upstream: plugins/nodeunschedulable/node_unschedulable.go
"""
from __future__ import annotations

from ....api.types.core_v1 import Pod, Taint
from ..interface import CycleState, Status
from ..types import NodeInfo, unresolvable
from .helper import tolerations_tolerate_taint

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")


class NodeUnschedulable:
    NAME = "NodeUnschedulable"

    def __init__(self, handle: object = None) -> None:
        pass

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return unresolvable(ERR_REASON_UNKNOWN_CONDITION)
        if not (node.spec and node.spec.unschedulable):
            return None
        if tolerations_tolerate_taint(pod.spec.tolerations or [], _TAINT):
            return None
        return unresolvable(ERR_REASON_UNSCHEDULABLE)
