"""NodePorts: a pod's hostPorts must be free on the node. Upstream: plugins/nodeports/node_ports.go"""
from __future__ import annotations

from ....api.types.core_v1 import Pod
from ..interface import Code, CycleState, PreFilterResult, Status
from ..types import NodeInfo, get_container_ports, unschedulable

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilterNodePorts"


class NodePorts:
    NAME = "NodePorts"

    def __init__(self, handle: object = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods without host ports. Upstream: NodePorts.PreFilter"""
        ports = get_container_ports(pod)
        if not ports:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, ports)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            ports = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            ports = get_container_ports(pod)
        if not fits_ports(ports, node_info):
            return unschedulable(ERR_REASON)
        return None


def fits_ports(want: list[tuple[str, str, int]], node_info: NodeInfo) -> bool:
    """Upstream: fitsPorts"""
    return not any(node_info.used_ports.check_conflict(ip, proto, port) for ip, proto, port in want)
