"""The scheduler cache: nodes with the pods bound or *assumed* to be on them.

Assuming a pod puts it on its chosen node before the binding round-trips through the API
server and the watch, so the next scheduling cycle already counts its requests; the
informer's add later confirms it, and a failed binding forgets it.

Upstream: pkg/scheduler/internal/cache/cache.go (the state machine in its doc comment:
Initial -Assume-> Assumed -Add-> Added; Assumed -Forget-> Initial; Assumed -Expire-> Initial).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ....api.types.core_v1 import Node, Pod
from ...framework.types import NodeInfo, PodInfo
from .snapshot import Snapshot

log = logging.getLogger(__name__)


def pod_key(pod: Pod) -> str:
    """The UID (upstream's GetPodKey), or namespace/name for objects without one."""
    meta = pod.metadata
    return meta.uid or f"{meta.namespace}/{meta.name}"


@dataclass
class PodState:
    pod: Pod
    deadline: float | None = None          # when an assumed pod whose binding finished expires
    binding_finished: bool = False


class Cache:
    """nodes: name -> NodeInfo; pod_states: key -> PodState; assumed_pods: keys not yet confirmed.

    Invariants (checked by check_invariants): assumed_pods is a subset of pod_states; every
    pod in pod_states is in exactly one NodeInfo, that of its spec.nodeName, and every pod in
    a NodeInfo is in pod_states; a NodeInfo without a node exists only while it holds pods.
    ttl == 0 (upstream's durationToExpireAssumedPod, issue #106361) means assumed pods
    never expire: only the informer (Add) or a failed binding (Forget) resolves them.
    """

    def __init__(self, ttl: float = 0.0) -> None:
        self.ttl = ttl
        self.nodes: dict[str, NodeInfo] = {}
        self.pod_states: dict[str, PodState] = {}
        self.assumed_pods: set[str] = set()
        # node name -> generation of its NodeInfo's last change (an entry goes with its
        # NodeInfo), least recent first: update_snapshot walks it from the end and
        # stops at the snapshot's generation, so a cycle visits only the nodes that changed.
        # Upstream keeps a doubly linked list of NodeInfos, most recently updated first.
        self.changed: dict[str, int] = {}
        self.live_nodes = 0           # NodeInfos with a node: the snapshot's size

    # --- pods --------------------------------------------------------------------------------

    def assume_pod(self, pod: Pod, pod_info: PodInfo | None = None) -> None:
        """Place a pod (spec.nodeName set) on its node ahead of the binding. Upstream: AssumePod

        pod_info: the scheduled pod's PodInfo, of which pod is the assumed copy (its parsed
        terms and requests are reused)."""
        key = pod_key(pod)
        if key in self.pod_states:
            raise ValueError(f"pod {key} is in the cache, so can't be assumed")
        self._add_pod(pod, pod_info)
        self.pod_states[key] = PodState(pod)
        self.assumed_pods.add(key)

    def finish_binding(self, pod: Pod, now: float) -> None:
        """Start the expiry clock of an assumed pod. Upstream: FinishBinding"""
        key = pod_key(pod)
        ps = self.pod_states.get(key)
        if ps is not None and key in self.assumed_pods:
            ps.binding_finished = True
            ps.deadline = now + self.ttl if self.ttl > 0 else None

    def forget_pod(self, pod: Pod) -> None:
        """Undo assume_pod (the binding failed). Upstream: ForgetPod"""
        key = pod_key(pod)
        ps = self.pod_states.get(key)
        if ps is not None and ps.pod.spec.node_name != pod.spec.node_name:
            raise ValueError(f"pod {key} was assumed on {pod.spec.node_name} but assigned to {ps.pod.spec.node_name}")
        if ps is None or key not in self.assumed_pods:
            raise ValueError(f"pod {key} wasn't assumed so cannot be forgotten")
        self._remove_pod(ps.pod)
        del self.pod_states[key]
        self.assumed_pods.discard(key)

    def add_pod(self, pod: Pod) -> None:
        """The informer saw a bound pod: confirm an assumed one, or add it. Upstream: AddPod"""
        key = pod_key(pod)
        ps = self.pod_states.get(key)
        if ps is not None and key in self.assumed_pods:
            # The binding landed (possibly elsewhere than assumed, if someone else bound it).
            self._update_pod(ps.pod, pod)
            ps.pod = pod
            ps.deadline = None
            self.assumed_pods.discard(key)
        elif ps is None:
            self._add_pod(pod)
            self.pod_states[key] = PodState(pod)
        else:
            log.warning("pod was already in added state", extra={"pod": key})

    def update_pod(self, old: Pod, new: Pod) -> None:
        """Upstream: UpdatePod (only for added, not assumed, pods)."""
        key = pod_key(old)
        ps = self.pod_states.get(key)
        if ps is None or key in self.assumed_pods:
            raise ValueError(f"pod {key} is not added to scheduler cache, so cannot be updated")
        self._update_pod(ps.pod, new)
        ps.pod = new

    def remove_pod(self, pod: Pod) -> None:
        """Upstream: RemovePod (assumed or added)."""
        key = pod_key(pod)
        ps = self.pod_states.get(key)
        if ps is None:
            raise ValueError(f"pod {key} is not found in scheduler cache, so cannot be removed from it")
        self._remove_pod(ps.pod)
        del self.pod_states[key]
        self.assumed_pods.discard(key)

    def is_assumed_pod(self, pod: Pod) -> bool:
        return pod_key(pod) in self.assumed_pods

    def get_pod(self, pod: Pod) -> Pod | None:
        ps = self.pod_states.get(pod_key(pod))
        return ps.pod if ps else None

    def cleanup_assumed_pods(self, now: float) -> list[Pod]:
        """Expire assumed pods whose binding finished more than ttl ago. Upstream: cleanupAssumedPods"""
        expired = []
        for key in list(self.assumed_pods):
            ps = self.pod_states[key]
            if ps.binding_finished and ps.deadline is not None and now > ps.deadline:
                log.warning("Pod expired", extra={"pod": key, "node": ps.pod.spec.node_name})
                self.remove_pod(ps.pod)
                expired.append(ps.pod)
        return expired

    def _add_pod(self, pod: Pod, pod_info: PodInfo | None = None) -> None:
        name = pod.spec.node_name or ""
        ni = self.nodes.get(name)
        if ni is None:
            ni = self.nodes[name] = NodeInfo()     # the node's own event may come later
        ni.add_pod_info(pod_info.for_assumed(pod) if pod_info is not None else PodInfo(pod))
        self._moved_to_head(name, ni.generation)

    def _remove_pod(self, pod: Pod) -> None:
        name = pod.spec.node_name or ""
        ni = self.nodes.get(name)
        if ni is None:
            log.error("Node not found when trying to remove pod", extra={"node": name, "pod": pod_key(pod)})
            return
        ni.remove_pod(pod)
        self._moved_to_head(name, ni.generation)
        if not ni.pods and ni.node is None:
            self._remove_node_info(name)

    def _update_pod(self, old: Pod, new: Pod) -> None:
        """Upstream: cacheImpl.updatePod (remove, then add). A pod whose spec did not change
        (a status write: the kubelet's, or PodScheduled) keeps its place and its parsed
        requests, ports and terms; only the object is swapped, and the node still changes
        generation. Same aggregates, without re-parsing quantities for every status write."""
        name = old.spec.node_name or ""
        ni = self.nodes.get(name)
        # `is`: the informer hands an unchanged spec over as is (client/rest.py _SpecSharing)
        if ni is not None and (new.spec is old.spec or new.spec == old.spec) and ni.replace_pod(old, new):
            self._moved_to_head(name, ni.generation)
            return
        self._remove_pod(old)
        self._add_pod(new)

    def _moved_to_head(self, name: str, generation: int) -> None:
        """Record that node name changed at generation. Upstream: cacheImpl.moveNodeInfoToHead"""
        changed = self.changed
        changed.pop(name, None)
        changed[name] = generation

    def _remove_node_info(self, name: str) -> None:
        """Forget an empty node-less NodeInfo and its last change: a snapshot still holding
        the node finds it by count (update_snapshot). Upstream: cacheImpl.removeNodeInfoFromList
        """
        del self.nodes[name]
        del self.changed[name]

    # --- nodes -------------------------------------------------------------------------------

    def add_node(self, node: Node) -> NodeInfo:
        """Upstream: AddNode"""
        name = node.metadata.name
        ni = self.nodes.get(name)
        if ni is None:
            ni = self.nodes[name] = NodeInfo()
        if ni.node is None:
            self.live_nodes += 1
        ni.set_node(node)
        self._moved_to_head(name, ni.generation)
        return ni

    def update_node(self, old: Node, new: Node) -> NodeInfo:
        return self.add_node(new)

    def remove_node(self, node: Node) -> None:
        """Upstream: RemoveNode: the NodeInfo lingers while pods still point at it."""
        name = node.metadata.name
        ni = self.nodes.get(name)
        if ni is None:
            raise KeyError(f"node {name} is not found")
        if ni.node is not None:
            self.live_nodes -= 1
        ni.remove_node()
        self._moved_to_head(name, ni.generation)
        if not ni.pods:
            self._remove_node_info(name)

    def node_count(self) -> int:
        return self.live_nodes

    def pod_count(self) -> int:
        return sum(len(ni.pods) for ni in self.nodes.values())

    # --- snapshot ----------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Copy into snapshot only the NodeInfos that changed since its generation.

        A changed NodeInfo is copied *into* the existing snapshot object, so the snapshot's
        lists keep pointing at current data; the lists are rebuilt only when the node set
        changes (new nodes are appended in the cache's order), the affinity lists when a
        node gains or loses affinity pods.
        Upstream: cacheImpl.UpdateSnapshot
        """
        snapshot.tracked = True
        seq = snapshot.seq + 1
        added, affinity_changes, copied = self._copy_changed_node_infos(snapshot, seq)
        update_all = bool(added)
        if added:
            for name in [n for n in self.nodes if n in added]:      # in the cache's order
                snapshot.node_info_map[name] = self.nodes[name].snapshot()
        if len(snapshot.node_info_map) > self.live_nodes:
            self._remove_deleted_nodes_from_snapshot(snapshot)
            update_all = True
        if update_all:
            snapshot.rebuild_lists()
            snapshot.node_changes.clear()
            snapshot.seq = snapshot.layout_seq = seq
        else:
            if affinity_changes:
                snapshot.affinity_changed(affinity_changes)
            if copied:
                snapshot.seq = seq

    def _copy_changed_node_infos(self, snapshot: Snapshot,
                                 seq: int) -> tuple[set[str], list[tuple[NodeInfo, bool, bool]], bool]:
        """Copy the changed NodeInfos the snapshot has, logging them at seq in its change
        log; (names it lacks, (copy, had affinity pods, had anti-affinity pods) of the copies
        whose affinity lists membership may change, anything copied?).

        `changed` lists nodes by their last change, so walking it from the newest end stops
        at the first node the snapshot already reflects: a cycle after one assumed pod
        copies one NodeInfo and looks at no other.
        """
        snap_gen = max_gen = snapshot.generation
        node_info_map = snapshot.node_info_map
        added: set[str] = set()
        affinity_changes: list[tuple[NodeInfo, bool, bool]] = []
        copied = False
        node_changes = snapshot.node_changes
        changed = self.changed
        for name in reversed(changed):
            gen = changed[name]
            if gen <= snap_gen:
                break
            if gen > max_gen:
                max_gen = gen
            ni = self.nodes[name]
            if ni.node is None:
                continue                    # node removed: left to _remove_deleted_nodes_from_snapshot
            existing = node_info_map.get(name)
            if existing is None:
                added.add(name)
                continue
            if existing.layout_generation != ni.layout_generation:
                had_aff, had_anti = bool(existing.pods_with_affinity), bool(existing.pods_with_required_anti_affinity)
                if had_aff != bool(ni.pods_with_affinity) or had_anti != bool(ni.pods_with_required_anti_affinity):
                    affinity_changes.append((existing, had_aff, had_anti))
            ni.refresh_snapshot(existing)       # only the generations after a status write
            node_changes.pop(name, None)
            node_changes[name] = seq
            copied = True
        snapshot.generation = max_gen
        return added, affinity_changes, copied

    def _remove_deleted_nodes_from_snapshot(self, snapshot: Snapshot) -> None:
        """Drop the snapshot's nodes the cache has no node for. Upstream: removeDeletedNodesFromSnapshot"""
        node_info_map = snapshot.node_info_map
        for name in [n for n in node_info_map if n not in self.nodes or self.nodes[n].node is None]:
            del node_info_map[name]

    def check_invariants(self) -> None:
        assert self.assumed_pods <= self.pod_states.keys()
        assert self.live_nodes == sum(1 for ni in self.nodes.values() if ni.node is not None)
        assert self.changed.keys() == self.nodes.keys()     # every NodeInfo's last change, no other
        for name, ni in self.nodes.items():
            assert self.changed[name] == ni.generation, name
        seen: set[str] = set()
        for name, ni in self.nodes.items():
            assert ni.node is not None or ni.pods, f"empty node-less NodeInfo {name}"
            for pi in ni.pods:
                assert pi.uid in self.pod_states, pi.key
                assert pi.uid not in seen, pi.key
                assert (pi.pod.spec.node_name or "") == name
                seen.add(pi.uid)
        assert seen == self.pod_states.keys()
