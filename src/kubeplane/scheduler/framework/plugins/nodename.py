"""NodeName: a pod that names a node fits only that node. Upstream: plugins/nodename/node_name.go"""
from __future__ import annotations

from ....api.types.core_v1 import Pod
from ..interface import Code, CycleState, PreFilterResult, Status
from ..types import NodeInfo, unresolvable

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    NAME = "NodeName"

    def __init__(self, handle: object = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods that name no node: Filter passes them everywhere.

        Not upstream (NodeName has no PreFilter there); it saves a call per node per cycle.
        """
        if not pod.spec.node_name:
            return None, Status(Code.SKIP)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        name = pod.spec.node_name           # fits(), inlined: this runs for every node
        if name and name != node_info.name:
            return unresolvable(ERR_REASON)
        return None


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Upstream: nodename.Fits"""
    name = pod.spec.node_name
    return not name or name == node_info.name
