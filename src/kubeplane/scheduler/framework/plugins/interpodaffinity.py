"""InterPodAffinity: required and preferred pod affinity / anti-affinity, both directions.

Upstream: plugins/interpodaffinity/{filtering,scoring,plugin}.go. Counts are kept per
topology pair (key, value): "how many pods matching my terms live in zone=a".
Namespace selectors other than {} (all namespaces) need namespace labels, which this
scheduler does not watch; such selectors match no namespace.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....api.types.core_v1 import Node, Pod
from ..interface import MAX_NODE_SCORE, Code, CycleState, NodeScore, PreFilterResult, Status
from ..types import AffinityTerm, NodeInfo, PodInfo, WeightedAffinityTerm, unresolvable, unschedulable

NAME = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1      # Upstream: InterPodAffinityArgs.HardPodAffinityWeight

TopologyPair = tuple[str, str]


def pod_matches_all_affinity_terms(terms: list[AffinityTerm], pod: Pod) -> bool:
    """Upstream: podMatchesAllAffinityTerms (namespace labels are not consulted)."""
    return bool(terms) and all(t.matches(pod, None) for t in terms)


@dataclass
class PreFilterState:
    """Upstream: interpodaffinity.preFilterState"""

    pod_info: PodInfo
    existing_anti_affinity_counts: dict[TopologyPair, int] = field(default_factory=dict)
    affinity_counts: dict[TopologyPair, int] = field(default_factory=dict)
    anti_affinity_counts: dict[TopologyPair, int] = field(default_factory=dict)


def _inc(m: dict[TopologyPair, int], pair: TopologyPair, n: int = 1) -> None:
    m[pair] = m.get(pair, 0) + n


class InterPodAffinity:
    NAME = NAME

    def __init__(self, handle: Any = None, *, hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT) -> None:
        self.handle = handle
        self.hard_pod_affinity_weight = hard_pod_affinity_weight

    def _lister(self) -> Any:
        return self.handle.snapshot_shared_lister()

    # --- filtering -------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Count, per topology pair, existing pods that repel the pod and pods the pod's
        terms select. Skip when neither side has required terms. Upstream: PreFilter"""
        lister = self._lister()
        pi = PodInfo(pod)
        with_anti = lister.have_pods_with_required_anti_affinity_node_info_list
        if not pi.required_affinity_terms and not pi.required_anti_affinity_terms and not with_anti:
            return None, Status(Code.SKIP)
        s = PreFilterState(pi)
        self._existing_anti_affinity_counts(s, pod, with_anti)
        if pi.required_affinity_terms or pi.required_anti_affinity_terms:
            self._incoming_counts(s, lister.node_info_list)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    @staticmethod
    def _existing_anti_affinity_counts(s: PreFilterState, pod: Pod, nodes: list[NodeInfo]) -> None:
        """Upstream: getExistingAntiAffinityCounts"""
        for ni in nodes:
            node_labels = ni.node.metadata.labels or {}
            for existing in ni.pods_with_required_anti_affinity:
                for t in existing.required_anti_affinity_terms:
                    if t.topology_key in node_labels and t.matches(pod, None):
                        _inc(s.existing_anti_affinity_counts, (t.topology_key, node_labels[t.topology_key]))

    @staticmethod
    def _incoming_counts(s: PreFilterState, nodes: list[NodeInfo]) -> None:
        """Upstream: getIncomingAffinityAntiAffinityCounts"""
        aff, anti = s.pod_info.required_affinity_terms, s.pod_info.required_anti_affinity_terms
        for ni in nodes:
            node_labels = ni.node.metadata.labels or {}
            for existing in ni.pods:
                ep = existing.pod
                if aff and pod_matches_all_affinity_terms(aff, ep):
                    for t in aff:
                        if t.topology_key in node_labels:
                            _inc(s.affinity_counts, (t.topology_key, node_labels[t.topology_key]))
                for t in anti:
                    if t.topology_key in node_labels and t.matches(ep, None):
                        _inc(s.anti_affinity_counts, (t.topology_key, node_labels[t.topology_key]))

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Upstream: InterPodAffinity.Filter"""
        s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        node_labels = node_info.node.metadata.labels or {}
        if not satisfy_pod_affinity(s, node_labels):
            return unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not satisfy_pod_anti_affinity(s, node_labels):
            return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not satisfy_existing_pods_anti_affinity(s, node_labels):
            return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    # --- scoring ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Sum term weights per topology pair over existing pods, both directions.

        Upstream: InterPodAffinity.PreScore / processExistingPod
        """
        if not nodes:
            return Status(Code.SKIP)
        lister = self._lister()
        pi = PodInfo(pod)
        has_constraints = bool(pi.preferred_affinity_terms or pi.preferred_anti_affinity_terms)
        if not has_constraints and not lister.have_pods_with_affinity_node_info_list:
            return Status(Code.SKIP)
        all_nodes = lister.node_info_list if has_constraints else lister.have_pods_with_affinity_node_info_list
        topology_score: dict[str, dict[str, int]] = {}
        for ni in all_nodes:
            node = ni.node
            if not node.metadata.labels:
                continue
            pods = ni.pods if has_constraints else ni.pods_with_affinity
            for existing in pods:
                self._process_existing_pod(topology_score, pi, existing, node)
        if not topology_score:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, topology_score)
        return None

    def _process_existing_pod(self, score: dict[str, dict[str, int]], pi: PodInfo, existing: PodInfo,
                              node: Node) -> None:
        incoming = pi.pod
        _process_terms(score, pi.preferred_affinity_terms, existing.pod, node, 1)
        _process_terms(score, pi.preferred_anti_affinity_terms, existing.pod, node, -1)
        if self.hard_pod_affinity_weight > 0:
            for t in existing.required_affinity_terms:
                _process_term(score, t, self.hard_pod_affinity_weight, incoming, node, 1)
        _process_terms(score, existing.preferred_affinity_terms, incoming, node, 1)
        _process_terms(score, existing.preferred_anti_affinity_terms, incoming, node, -1)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Upstream: InterPodAffinity.Score"""
        topology_score: dict[str, dict[str, int]] = state.read(PRE_SCORE_STATE_KEY)
        node_labels = node_info.node.metadata.labels or {}
        total = 0
        for key, values in topology_score.items():
            if key in node_labels:
                total += values.get(node_labels[key], 0)
        return total

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Min-max scale to [0, 100]. Example: raw [-5, 0, 5] -> [0, 50, 100].

        Upstream: InterPodAffinity.NormalizeScore
        """
        if not state.storage.get(PRE_SCORE_STATE_KEY) or not scores:
            return None
        lo = min(s.score for s in scores)
        hi = max(s.score for s in scores)
        diff = hi - lo
        for s in scores:
            s.score = int(MAX_NODE_SCORE * ((s.score - lo) / diff)) if diff > 0 else 0
        return None


def _process_term(score: dict[str, dict[str, int]], term: AffinityTerm, weight: int, pod: Pod, node: Node,
                  multiplier: int) -> None:
    """Upstream: scoreMap.processTerm"""
    node_labels = node.metadata.labels or {}
    if term.topology_key not in node_labels or not term.matches(pod, None):
        return
    values = score.setdefault(term.topology_key, {})
    value = node_labels[term.topology_key]
    values[value] = values.get(value, 0) + weight * multiplier


def _process_terms(score: dict[str, dict[str, int]], terms: list[WeightedAffinityTerm], pod: Pod, node: Node,
                   multiplier: int) -> None:
    for wt in terms:
        _process_term(score, wt.term, wt.weight, pod, node, multiplier)


def satisfy_pod_affinity(s: PreFilterState, node_labels: dict[str, str]) -> bool:
    """Every required affinity term has a matching pod in the node's domain, the node has
    every topology key, or this is the first pod of a self-affine group.

    Upstream: satisfyPodAffinity
    """
    pods_exist = True
    for t in s.pod_info.required_affinity_terms:
        value = node_labels.get(t.topology_key)
        if value is None:
            return False
        if s.affinity_counts.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        # The first pod of a series with affinity to itself must not wait forever (#21306).
        return not s.affinity_counts and pod_matches_all_affinity_terms(s.pod_info.required_affinity_terms,
                                                                        s.pod_info.pod)
    return True


def satisfy_pod_anti_affinity(s: PreFilterState, node_labels: dict[str, str]) -> bool:
    """Upstream: satisfyPodAntiAffinity"""
    if not s.anti_affinity_counts:
        return True
    for t in s.pod_info.required_anti_affinity_terms:
        value = node_labels.get(t.topology_key)
        if value is not None and s.anti_affinity_counts.get((t.topology_key, value), 0) > 0:
            return False
    return True


def satisfy_existing_pods_anti_affinity(s: PreFilterState, node_labels: dict[str, str]) -> bool:
    """Upstream: satisfyExistingPodsAntiAffinity"""
    if not s.existing_anti_affinity_counts:
        return True
    return not any(s.existing_anti_affinity_counts.get((k, v), 0) > 0 for k, v in node_labels.items())
