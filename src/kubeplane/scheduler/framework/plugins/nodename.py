"""NodeName: a pod that names a node fits only that node. Upstream: plugins/nodename/node_name.go"""
from __future__ import annotations

from ....api.types.core_v1 import Pod
from ..interface import CycleState, Status
from ..types import NodeInfo, unresolvable

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    NAME = "NodeName"

    def __init__(self, handle: object = None) -> None:
        pass

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not fits(pod, node_info):
            return unresolvable(ERR_REASON)
        return None


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Upstream: nodename.Fits"""
    name = pod.spec.node_name
    return not name or name == node_info.name
