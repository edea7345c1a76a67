"""One ReplicaSet's claimed pods and status counts, kept from sync to sync.

Upstream's syncReplicaSet lists every pod the ReplicaSet controls plus the namespace's orphans,
claims them all and counts them all for the status, on every sync; syncs follow the pods'
events, so a 10,000-pod ReplicaSet coming up costs ~1,000 syncs of 10,000 pods each
(benchmarks/controllers_bench.py: 12 million pods walked, ~4 ms of CPU per pod). Here a sync
looks again only at the pods that changed since the previous one: the controller's pod event
handlers note each changed pod's key (`dirty`) in the state of every ReplicaSet the pod belongs
or belonged to, or, for an orphan, of every ReplicaSet whose selector matches it; the sync
re-reads those keys from the cache, claims them (adopting and releasing as upstream), and
updates the counts. The result is what upstream's full pass computes, because:

* a pod that changed not at all since the previous sync gets the same answer from the claim
  rules and the same counts (informer objects are replaced on change, never modified);
* what else the answer depends on is in `fingerprint` (the ReplicaSet's UID, selector, template
  labels, minReadySeconds, whether it is being deleted): a change there starts a full pass;
* availability with minReadySeconds also depends on the time: pods Ready but not yet available
  wait in a heap by the time they become available;
* a sync that failed half-way (a claim error), a clock going back, or no state yet -> a full
  pass, as upstream.

Only events delivered by the informer are seen, so the state is used only while the pod
informer has synced (it then hands every change of its cache to the handlers); a cache filled
by hand, as unit tests fill it, gets upstream's full pass on every sync.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable, Iterator

from ...api.types import core_v1
from ...utils.clock import parse_rfc3339
from ..controller_utils import (
    POD_DELETION_COST, RankTailKey, _RankFacts, get_deletion_cost_from_pod_annotations, get_pod_ready_condition,
    pod_phase_ordinal, pod_rank_facts, rank_tail_key_func,
)

CONDITION_TRUE = "True"

# (pod, fully labeled, Ready, its node ("": unscheduled), the first four ranking rules of a
# scale-down as a tuple: scheduled, phase, Ready, deletion cost; see ActivePodsWithRanks)
_Entry = tuple[core_v1.Pod, bool, bool, str, tuple[bool, int, bool, int]]


def _first(item: tuple[Any, Any]) -> Any:
    return item[0]


class ClaimedPods:
    """The active pods a ReplicaSet claimed and the terminating ones it controls, with counts.

    It is also the `filtered_pods` collection manage_replicas takes (len and iteration).
    """

    __slots__ = ("fingerprint", "dirty", "valid", "fully_labeled_match", "min_ready", "active", "terminating",
                 "fully_labeled", "ready", "on_node", "groups", "pending", "_heap", "_seq", "last_now", "_facts")

    def __init__(self, fingerprint: tuple[Any, ...], fully_labeled_match: Callable[[Any], bool],
                 min_ready: int) -> None:
        self.fingerprint = fingerprint
        self.dirty: set[str] = set()           # pod keys changed since the last sync
        self.valid = False                      # False until a full pass filled it
        self.fully_labeled_match = fully_labeled_match
        self.min_ready = min_ready
        self.active: dict[str, _Entry] = {}     # pod key -> entry
        self.terminating: set[str] = set()      # keys of controlled, matching, terminating pods
        self.fully_labeled = 0
        self.ready = 0
        self.on_node: dict[str, int] = {}       # node -> active pods on it (a scale-down's ranks)
        # (the first four ranking rules, node) -> the keys of the active pods with them: a
        # scale-down ranks groups, and then only the pods of the groups up to its cut.
        self.groups: dict[tuple[tuple[bool, int, bool, int], str], set[str]] = {}
        # key -> its pod's ranking facts (first_to_delete), read when first needed
        self._facts: dict[str, _RankFacts] = {}
        # Ready but not yet available: key -> its heap sequence number (None: never available,
        # a Ready condition without lastTransitionTime).
        self.pending: dict[str, int | None] = {}
        self._heap: list[tuple[float, int, str]] = []     # (available after, seq, key)
        self._seq = 0
        self.last_now = 0.0

    def __len__(self) -> int:
        return len(self.active)

    def __iter__(self) -> Iterator[core_v1.Pod]:
        return (e[0] for e in self.active.values())

    def __contains__(self, pod: object) -> bool:
        if not isinstance(pod, core_v1.Pod):
            return False
        e = self.active.get(f"{pod.metadata.namespace}/{pod.metadata.name}")
        return e is not None and e[0] is pod

    def take_dirty(self) -> set[str]:
        dirty, self.dirty = self.dirty, set()
        return dirty

    def remove(self, key: str) -> None:
        """Forget key's pod (before looking at its new state)."""
        self.terminating.discard(key)
        e = self.active.pop(key, None)
        if e is None:
            return
        self._facts.pop(key, None)
        group = self.groups[e[4], e[3]]
        group.discard(key)
        if not group:
            del self.groups[e[4], e[3]]
        if e[1]:
            self.fully_labeled -= 1
        if (n := self.on_node[e[3]] - 1) > 0:
            self.on_node[e[3]] = n
        else:
            del self.on_node[e[3]]
        if e[2]:
            self.ready -= 1
            self.pending.pop(key, None)

    def put_active(self, key: str, pod: core_v1.Pod) -> None:
        """Count a claimed active pod (key must not be present)."""
        fully = self.fully_labeled_match(pod.metadata.labels)
        c = get_pod_ready_condition(pod)
        ready = c is not None and c.status == CONDITION_TRUE
        node = (pod.spec.node_name if pod.spec is not None else None) or ""
        annotations = pod.metadata.annotations
        cost = get_deletion_cost_from_pod_annotations(annotations) if annotations and POD_DELETION_COST in annotations else 0
        rules = (bool(node), pod_phase_ordinal(pod), ready, cost)
        self.active[key] = (pod, fully, ready, node, rules)
        self.on_node[node] = self.on_node.get(node, 0) + 1
        if (group := self.groups.get((rules, node))) is None:
            self.groups[rules, node] = {key}
        else:
            group.add(key)
        if fully:
            self.fully_labeled += 1
        if not ready:
            return
        self.ready += 1
        if self.min_ready:
            if c is None or not c.last_transition_time:
                self.pending[key] = None
                return
            after = parse_rfc3339(c.last_transition_time) + self.min_ready
            if after < self.last_now:
                return                           # available already
            self._seq += 1
            self.pending[key] = self._seq
            heapq.heappush(self._heap, (after, self._seq, key))

    def first_to_delete(self, n: int, related_on_node: list[dict[str, int]], now: float) -> list[core_v1.Pod]:
        """get_pods_to_delete's answer for n < len(self), from the state kept.

        A pod's rank is the related ReplicaSets' active pods on its node (related_on_node:
        their on_node), so the pods of one group (same first four rules, same node) tie on
        the first five rules. The groups are ordered on those; the n-th pod's group is the
        cut, and only the pods of the groups up to it are ranked by the other rules
        (rank_tail_key_func), from facts read once per pod version: a rolling update ranks
        the same old pods at every scale-down step.
        """
        ranks: dict[str, int] = {}
        ordered = []
        for (rules, node), keys in self.groups.items():
            if (r := ranks.get(node)) is None:
                r = ranks[node] = sum(d.get(node, 0) for d in related_on_node)
            ordered.append(((*rules, -r), keys))
        ordered.sort(key=_first)
        tail = rank_tail_key_func(now, True)
        active, facts = self.active, self._facts
        keyed: list[tuple[tuple[bool, int, bool, int, int], RankTailKey, str]] = []
        cut = None
        for coarse, keys in ordered:
            if cut is not None and coarse != cut:
                break
            for key in keys:
                pod = active[key][0]
                if (f := facts.get(key)) is None or f.pod is not pod:
                    f = facts[key] = pod_rank_facts(pod)
                keyed.append((coarse, tail(f), key))
            if cut is None and len(keyed) >= n:
                cut = coarse
        return [active[k[2]][0] for k in heapq.nsmallest(n, keyed)]

    def put_terminating(self, key: str) -> None:
        self.terminating.add(key)

    def available(self, now: float) -> int:
        """Ready pods Ready for more than minReadySeconds by now (upstream's is_pod_available)."""
        if now < self.last_now:                  # the clock went back: count again
            self._recount(now)
        self.last_now = now
        heap, pending = self._heap, self.pending
        while heap and heap[0][0] < now:
            _, seq, key = heapq.heappop(heap)
            if key in pending and pending[key] == seq:
                del pending[key]
        if len(heap) > 2 * len(pending) + 64:    # drop the entries of pods gone or changed
            self._heap = [h for h in heap if pending.get(h[2]) == h[1]]
            heapq.heapify(self._heap)
        return self.ready - len(pending)

    def _recount(self, now: float) -> None:
        self.last_now = now
        self.pending, self._heap = {}, []
        entries = [(k, e[0]) for k, e in self.active.items()]
        self.active, self.fully_labeled, self.ready, self.on_node, self.groups = {}, 0, 0, {}, {}
        for key, pod in entries:
            self.put_active(key, pod)
