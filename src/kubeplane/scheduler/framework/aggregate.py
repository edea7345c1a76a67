"""Sums over all of the snapshot's nodes, kept up to date by revisiting only changed nodes.

PodTopologySpread's PreFilter counts, per topology domain, the pods matching a constraint on
every node; InterPodAffinity's PreFilter counts, per topology pair, the pods its terms select
(and the existing pods whose anti-affinity selects the incoming pod). Upstream recomputes them
over all nodes for every pod, on 16 goroutines. Here a NodeAggregate holds, for one query
(a constraint's selector and namespace, a pod's terms), each node's contribution and their
sum; the next pod asking the same query (the next replica of a workload) gets the sum after
re-reading only the nodes the snapshot copied since (Snapshot.changed_since): one or two per
cycle. A change of the node set, or another snapshot, starts the sum over.

    agg = aggregates.get(key, lambda: NodeAggregate(contribution))
    counts = agg.totals(snapshot)        # {key: sum over nodes of contribution(ni)[key]}

Ours, not upstream's: the sums are exactly what the full loop gives (tests compare both).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from .types import NodeInfo

K = TypeVar("K", bound=Hashable)
Contribution = Callable[[NodeInfo], "dict[Any, int] | None"]


class NodeAggregate(Generic[K]):
    """sum(contribution(ni) for ni in snapshot.node_info_list), key by key (zero sums dropped)."""

    __slots__ = ("contribution", "snapshot", "seq", "layout_seq", "per_node", "sums", "nodes", "selecting_pods")

    def __init__(self, contribution: Contribution, node_only: bool = False, selecting_pods: bool = False) -> None:
        self.contribution = contribution
        self.snapshot: Any = None
        self.seq = self.layout_seq = -1
        self.per_node: dict[str, dict[K, int]] = {}
        self.sums: dict[K, int] = {}
        # node_only (a contribution of the Node object alone, not of its pods): per node the
        # Node its contribution was taken from; a NodeInfo changed by its pods only is skipped.
        # selecting_pods (of the Node and of which pods are there with which namespaces, labels
        # and deletion timestamps, as selectors count them): per node the Node and the
        # NodeInfo's pods_generation; a NodeInfo changed by status writes only is skipped.
        self.nodes: dict[str, Any] | None = {} if node_only or selecting_pods else None
        self.selecting_pods = selecting_pods

    def totals(self, snapshot: Any) -> dict[K, int]:
        """The sums for snapshot as it is now. Callers must not modify the dict."""
        if (snapshot is not self.snapshot or not snapshot.tracked or snapshot.layout_seq != self.layout_seq
                or snapshot.seq < self.seq):
            self._recompute(snapshot)
        elif snapshot.seq != self.seq:
            node_info_map = snapshot.node_info_map
            for name in snapshot.changed_since(self.seq):
                self._replace(name, node_info_map.get(name))
            self.seq = snapshot.seq
        return self.sums

    def _recompute(self, snapshot: Any) -> None:
        self.snapshot = snapshot
        self.seq, self.layout_seq = snapshot.seq, snapshot.layout_seq
        self.per_node = {}
        self.sums = {}
        if self.nodes is not None:
            self.nodes = {}
        for ni in snapshot.node_info_list:
            self._replace(ni.name, ni)

    def _replace(self, name: str, ni: NodeInfo | None) -> None:
        nodes = self.nodes
        if nodes is not None:
            node = ni.node if ni is not None else None
            if self.selecting_pods:
                pods_generation = ni.pods_generation if ni is not None else -1
                seen = nodes.get(name)
                if node is not None and seen is not None and seen[0] is node and seen[1] == pods_generation:
                    return
                nodes[name] = (node, pods_generation)
            else:
                if node is not None and nodes.get(name) is node:
                    return
                nodes[name] = node
        sums = self.sums
        old = self.per_node.pop(name, None)
        if old:
            for k, v in old.items():
                left = sums.get(k, 0) - v
                if left:
                    sums[k] = left
                else:
                    del sums[k]
        new = self.contribution(ni) if ni is not None and ni.node is not None else None
        if new:
            self.per_node[name] = new
            for k, v in new.items():
                left = sums.get(k, 0) + v
                if left:
                    sums[k] = left
                else:
                    del sums[k]


class AggregateCache:
    """At most `size` NodeAggregates by query key, least recently used dropped first.

    Each holds a small dict per node that contributes (~250 bytes): 16 of them on 5,000
    nodes ~20 MB at most, and only pods with spread constraints or (anti-)affinity make them.
    More workloads than that alternating costs what the loop over every node cost."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, NodeAggregate[Any]] = OrderedDict()

    def peek(self, key: Hashable) -> NodeAggregate[Any] | None:
        """The aggregate of key if kept (then the most recently used), else None: lets a
        caller build the contribution only on a miss."""
        agg = self._items.get(key)
        if agg is not None:
            self._items.move_to_end(key)
        return agg

    def get(self, key: Hashable, contribution: Contribution, node_only: bool = False,
            selecting_pods: bool = False) -> NodeAggregate[Any]:
        agg = self._items.get(key)
        if agg is None:
            agg = self._items[key] = NodeAggregate(contribution, node_only, selecting_pods)
            if len(self._items) > self.size:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(key)
        return agg
