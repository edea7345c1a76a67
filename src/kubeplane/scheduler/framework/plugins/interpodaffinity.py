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
from ..aggregate import AggregateCache, Contribution
from ..interface import MAX_NODE_SCORE, Code, CycleState, NodeScore, PreFilterResult, Status
from ..types import AffinityTerm, NodeInfo, PodInfo, WeightedAffinityTerm, cycle_pod_info, unresolvable, unschedulable

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


_NO_LABELS: dict[str, str] = {}
_COUNTED_STATE_KEY = "FilterNodes" + NAME       # filter_nodes' topology values counted, per key


def _inc(m: dict[TopologyPair, int], pair: TopologyPair, n: int = 1) -> None:
    m[pair] = m.get(pair, 0) + n


class InterPodAffinity:
    NAME = NAME

    def __init__(self, handle: Any = None, *, hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT) -> None:
        self.handle = handle
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.aggregates = AggregateCache()

    def _lister(self) -> Any:
        return self.handle.snapshot_shared_lister()

    # --- filtering -------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Count, per topology pair, existing pods that repel the pod and pods the pod's
        terms select. Skip when neither side has required terms. Upstream: PreFilter

        The counts are sums over all nodes kept across cycles (framework/aggregate.py),
        keyed by what they depend on: the pod's namespace and labels, or its terms.
        """
        lister = self._lister()
        pi = cycle_pod_info(state, pod)
        with_anti = lister.have_pods_with_required_anti_affinity_node_info_list
        if not pi.required_affinity_terms and not pi.required_anti_affinity_terms and not with_anti:
            return None, Status(Code.SKIP)
        s = PreFilterState(pi)
        meta = pod.metadata
        if with_anti:
            key = ("existing-anti", meta.namespace, frozenset((meta.labels or {}).items()))
            s.existing_anti_affinity_counts = self.aggregates.get(
                key, _existing_anti_affinity_contribution(pod)).totals(lister)
        aff, anti = pi.required_affinity_terms, pi.required_anti_affinity_terms
        if aff:
            s.affinity_counts = self.aggregates.get(
                ("affinity", tuple(aff)), _affinity_contribution(aff)).totals(lister)
        if anti:
            s.anti_affinity_counts = self.aggregates.get(
                ("anti-affinity", tuple(anti)), _anti_affinity_contribution(anti)).totals(lister)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

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

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[bool] | None:
        """Per node, whether Filter passes it for sure; None when the pod has required
        affinity terms (Filter decides). Ours, for the feasibility loop's slices.

        Without required affinity, Filter rejects a node exactly when one of its (topology
        key, value) pairs counts a pod the incoming pod repels or an existing pod that repels
        it (PreFilter's sums): per key, the values counted are looked up in a set.
        """
        s: PreFilterState | None = state.storage.get(PRE_FILTER_STATE_KEY)
        if s is None or s.pod_info.required_affinity_terms:
            return None
        counted: dict[str, set[str]] | None = state.storage.get(_COUNTED_STATE_KEY)
        if counted is None:         # once per cycle: the loop asks slice after slice
            counted = {}
            for counts in (s.anti_affinity_counts, s.existing_anti_affinity_counts):
                for (key, value), n in counts.items():
                    if n > 0:
                        counted.setdefault(key, set()).add(value)
            state.storage[_COUNTED_STATE_KEY] = counted
        if not counted:
            return [True] * len(nodes)
        if len(counted) == 1:
            ((key, values),) = counted.items()
            return [(ni.node.metadata.labels or _NO_LABELS).get(key) not in values for ni in nodes]
        pairs = list(counted.items())
        return [all(lbls.get(k) not in vals for k, vals in pairs)
                for lbls in ((ni.node.metadata.labels or _NO_LABELS) for ni in nodes)]

    # --- scoring ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Sum term weights per topology pair over existing pods, both directions.

        The sums are kept across cycles (framework/aggregate.py), keyed by what they depend
        on: the pod's namespace, labels and preferred terms.
        Upstream: InterPodAffinity.PreScore / processExistingPod
        """
        if not nodes:
            return Status(Code.SKIP)
        lister = self._lister()
        pi = cycle_pod_info(state, pod)
        has_constraints = bool(pi.preferred_affinity_terms or pi.preferred_anti_affinity_terms)
        if not has_constraints and not lister.have_pods_with_affinity_node_info_list:
            return Status(Code.SKIP)
        meta = pod.metadata
        key = ("score", meta.namespace, frozenset((meta.labels or {}).items()), tuple(pi.preferred_affinity_terms),
               tuple(pi.preferred_anti_affinity_terms))
        sums = self.aggregates.get(key, self._score_contribution(pi, has_constraints)).totals(lister)
        topology_score = scores_by_topology_key(sums)
        if not topology_score:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, topology_score)
        return None

    def _score_contribution(self, pi: PodInfo, has_constraints: bool) -> Contribution:
        """One node's weights by (topology key, value), and (SEEN, key, value) counting the
        terms that touched a pair: upstream keeps a pair whose weights cancel out, at 0."""
        def contribution(ni: NodeInfo) -> dict[Any, int] | None:
            node = ni.node
            if not node.metadata.labels:
                return None
            pods = ni.pods if has_constraints else ni.pods_with_affinity
            if not pods:
                return None
            score: dict[str, dict[str, int]] = {}
            touched: dict[tuple[str, str], int] = {}
            for existing in pods:
                self._process_existing_pod(score, pi, existing, node, touched)
            out: dict[Any, int] = {(SEEN, k, v): n for (k, v), n in touched.items()}
            for k, values in score.items():
                for v, w in values.items():
                    if w:
                        out[(k, v)] = w
            return out or None
        return contribution

    def _process_existing_pod(self, score: dict[str, dict[str, int]], pi: PodInfo, existing: PodInfo,
                              node: Node, touched: dict[tuple[str, str], int]) -> None:
        incoming = pi.pod
        _process_terms(score, pi.preferred_affinity_terms, existing.pod, node, 1, touched)
        _process_terms(score, pi.preferred_anti_affinity_terms, existing.pod, node, -1, touched)
        if self.hard_pod_affinity_weight > 0:
            for t in existing.required_affinity_terms:
                _process_term(score, t, self.hard_pod_affinity_weight, incoming, node, 1, touched)
        _process_terms(score, existing.preferred_affinity_terms, incoming, node, 1, touched)
        _process_terms(score, existing.preferred_anti_affinity_terms, incoming, node, -1, touched)

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
                  multiplier: int, touched: dict[tuple[str, str], int]) -> None:
    """Upstream: scoreMap.processTerm"""
    node_labels = node.metadata.labels or {}
    if term.topology_key not in node_labels or not term.matches(pod, None):
        return
    values = score.setdefault(term.topology_key, {})
    value = node_labels[term.topology_key]
    values[value] = values.get(value, 0) + weight * multiplier
    pair = (term.topology_key, value)
    touched[pair] = touched.get(pair, 0) + 1


def _process_terms(score: dict[str, dict[str, int]], terms: list[WeightedAffinityTerm], pod: Pod, node: Node,
                   multiplier: int, touched: dict[tuple[str, str], int]) -> None:
    for wt in terms:
        _process_term(score, wt.term, wt.weight, pod, node, multiplier, touched)


SEEN = "#seen"      # the key of the touched-pair counts in a score contribution


def scores_by_topology_key(sums: dict[Any, int]) -> dict[str, dict[str, int]]:
    """{topology key: {value: weight}} for every pair some term touched (weight 0 included)."""
    out: dict[str, dict[str, int]] = {}
    for pair in sums:
        if pair[0] == SEEN:
            _, k, v = pair
            out.setdefault(k, {})[v] = sums.get((k, v), 0)
    return out


def _existing_anti_affinity_contribution(pod: Pod) -> Contribution:
    """Per pair, the required anti-affinity terms of a node's pods that select pod."""
    def contribution(ni: NodeInfo) -> dict[TopologyPair, int] | None:
        if not ni.pods_with_required_anti_affinity:
            return None
        node_labels = ni.node.metadata.labels or {}
        out: dict[TopologyPair, int] = {}
        for existing in ni.pods_with_required_anti_affinity:
            for t in existing.required_anti_affinity_terms:
                if t.topology_key in node_labels and t.matches(pod, None):
                    _inc(out, (t.topology_key, node_labels[t.topology_key]))
        return out or None
    return contribution


def _affinity_contribution(aff: list[AffinityTerm]) -> Contribution:
    """Per pair of aff's keys, a node's pods matching all of aff."""
    def contribution(ni: NodeInfo) -> dict[TopologyPair, int] | None:
        if not aff or not ni.pods:
            return None
        node_labels = ni.node.metadata.labels or {}
        out: dict[TopologyPair, int] = {}
        for existing in ni.pods:
            if pod_matches_all_affinity_terms(aff, existing.pod):
                for t in aff:
                    if t.topology_key in node_labels:
                        _inc(out, (t.topology_key, node_labels[t.topology_key]))
        return out or None
    return contribution


def _anti_affinity_contribution(anti: list[AffinityTerm]) -> Contribution:
    """Per pair, a node's pods selected by each of anti's terms."""
    def contribution(ni: NodeInfo) -> dict[TopologyPair, int] | None:
        if not anti or not ni.pods:
            return None
        node_labels = ni.node.metadata.labels or {}
        out: dict[TopologyPair, int] = {}
        for existing in ni.pods:
            for t in anti:
                if t.topology_key in node_labels and t.matches(existing.pod, None):
                    _inc(out, (t.topology_key, node_labels[t.topology_key]))
        return out or None
    return contribution


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
