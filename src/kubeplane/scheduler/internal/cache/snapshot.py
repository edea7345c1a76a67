"""Snapshot: the NodeInfos one scheduling cycle sees, refreshed incrementally from the cache.

Upstream: pkg/scheduler/internal/cache/snapshot.go
"""
from __future__ import annotations

from ...framework.types import NodeInfo


class Snapshot:
    """node_info_map: name -> NodeInfo copy; the lists hold the same objects in node order.

    Invariant: node_info_list holds exactly node_info_map's values;
    have_pods_with_affinity_node_info_list holds those with pods_with_affinity, and
    have_pods_with_required_anti_affinity_node_info_list those with required anti-affinity
    pods; generation is the newest cache generation the copies reflect.

    The change log lets a plugin keep a sum over all nodes up to date by revisiting only
    the nodes that changed (framework/aggregate.py): seq grows with every update that
    changed something; node_changes maps each node copied since the node set last changed
    to the seq of its latest copy, oldest first; layout_seq is the seq at which the node
    set (or a NodeInfo outside the cache's updates) last changed, when sums start over.
    A snapshot no cache updates (tracked False, as built by tests) has no usable log.
    Ours: upstream recomputes such sums over all nodes, in parallel, every cycle.
    """

    def __init__(self, node_infos: list[NodeInfo] | None = None) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.have_pods_with_affinity_node_info_list: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity_node_info_list: list[NodeInfo] = []
        self.generation = 0
        self.seq = 0
        self.layout_seq = 0
        self.node_changes: dict[str, int] = {}
        self.tracked = False
        for ni in node_infos or ():
            self.node_info_map[ni.name] = ni
        self.rebuild_lists()

    @classmethod
    def from_nodes(cls, nodes: list, pods: list | None = None) -> Snapshot:
        """A snapshot of nodes with pods placed by spec.nodeName. Upstream: NewSnapshot"""
        infos: dict[str, NodeInfo] = {}
        for n in nodes:
            infos[n.metadata.name] = ni = NodeInfo()
            ni.set_node(n)
        for p in pods or ():
            if p.spec.node_name in infos:
                infos[p.spec.node_name].add_pod(p)
        return cls(list(infos.values()))

    def changed_since(self, seq: int) -> list[str]:
        """Names of the nodes copied after seq (the caller checked layout_seq <= seq)."""
        out = []
        changes = self.node_changes
        for name in reversed(changes):
            if changes[name] <= seq:
                break
            out.append(name)
        return out

    def rebuild_lists(self) -> None:
        self.node_info_list = list(self.node_info_map.values())
        self.update_affinity_lists()

    def update_affinity_lists(self) -> None:
        self.have_pods_with_affinity_node_info_list = [n for n in self.node_info_list if n.pods_with_affinity]
        self.have_pods_with_required_anti_affinity_node_info_list = [
            n for n in self.node_info_list if n.pods_with_required_anti_affinity]

    def affinity_changed(self, changes: list[tuple[NodeInfo, bool, bool]]) -> None:
        """Put NodeInfos in or out of the affinity lists after a copy, given (copy, had pods
        with affinity before, had pods with required anti-affinity before), without visiting
        every node: a node that gains its first such pod is appended, one that loses its last
        is filtered out. The lists are then in change order, not node order (their users sum
        over them). Upstream rebuilds both lists over all nodes."""
        for ni, had_aff, had_anti in changes:
            has_aff, has_anti = bool(ni.pods_with_affinity), bool(ni.pods_with_required_anti_affinity)
            if has_aff != had_aff:
                self.have_pods_with_affinity_node_info_list = _with(
                    self.have_pods_with_affinity_node_info_list, ni, has_aff)
            if has_anti != had_anti:
                self.have_pods_with_required_anti_affinity_node_info_list = _with(
                    self.have_pods_with_required_anti_affinity_node_info_list, ni, has_anti)

    def get(self, node_name: str) -> NodeInfo:
        """KeyError if the node is not in the snapshot."""
        return self.node_info_map[node_name]

    def num_nodes(self) -> int:
        return len(self.node_info_list)




def _with(node_infos: list[NodeInfo], ni: NodeInfo, member: bool) -> list[NodeInfo]:
    """node_infos with ni appended (in place: it was not there) or filtered out."""
    if member:
        node_infos.append(ni)
        return node_infos
    return [x for x in node_infos if x is not ni]
