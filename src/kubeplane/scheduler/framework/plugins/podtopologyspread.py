"""PodTopologySpread: keep matching pods spread across topology domains within maxSkew.

A pod without constraints of its own gets the default constraints (upstream's
`defaultingType: System`: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway, so
they only score), selecting the pods of the Services, ReplicationController, ReplicaSet or
StatefulSet the pod belongs to (helper.default_selector); a pod of none gets none.

Upstream: plugins/podtopologyspread/{common,filtering,scoring,plugin}.go.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from operator import sub
from typing import Any

from ....api import labels
from ....api.types.core_v1 import Node, Pod, TopologySpreadConstraint
from ....client.tools.cache.listers import label_matcher
from ..aggregate import AggregateCache, Contribution
from ..interface import MAX_NODE_SCORE, Code, CycleState, NodeScore, PreFilterResult, Status, node_column
from ..types import LABEL_HOSTNAME, NodeInfo, PodInfo, selector_from, unresolvable, unschedulable
from .helper import default_selector, find_matching_untolerated_taint
from .nodeaffinity import RequiredNodeAffinity, get_required_node_affinity

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULTING, LIST_DEFAULTING = "System", "List"

# Upstream: systemDefaultConstraints (plugin.go)
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(topology_key=LABEL_HOSTNAME, when_unsatisfiable="ScheduleAnyway", max_skew=3),
    TopologySpreadConstraint(topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable="ScheduleAnyway", max_skew=5),
)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """The plugin's configuration. Upstream: config.PodTopologySpreadArgs (v1 defaults:
    defaultingType System, whose constraints replace default_constraints)."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


@dataclass
class Constraint:
    """A parsed TopologySpreadConstraint. Upstream: topologySpreadConstraint"""

    max_skew: int
    topology_key: str
    selector: labels.Selector | None
    min_domains: int = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"

    def match_node_inclusion_policies(self, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
        """Whether the node counts toward the spread. Upstream: matchNodeInclusionPolicies"""
        if self.node_affinity_policy == "Honor" and not required.match(node):
            return False
        if self.node_taints_policy == "Honor":
            taints = node.spec.taints if node.spec else None
            if taints and find_matching_untolerated_taint(taints, pod.spec.tolerations or [],
                                                          ("NoSchedule", "NoExecute")) is not None:
                return False
        return True


def filter_topology_spread_constraints(constraints: list[TopologySpreadConstraint] | None, pod: Pod,
                                       action: str) -> list[Constraint]:
    """Parse the constraints with whenUnsatisfiable == action, merging matchLabelKeys.

    Upstream: filterTopologySpreadConstraints
    """
    out = []
    pod_labels = pod.metadata.labels or {}
    for c in constraints or ():
        if c.when_unsatisfiable != action:
            continue
        sel = selector_from(c.label_selector)
        if sel is not None and c.match_label_keys:
            extra = tuple(labels.Requirement(k, "in", (pod_labels[k],)) for k in c.match_label_keys if k in pod_labels)
            sel = sel + extra
        out.append(Constraint(c.max_skew or 1, c.topology_key or "", sel, c.min_domains or 1,
                              c.node_affinity_policy or "Honor", c.node_taints_policy or "Ignore"))
    return out


def node_labels_match_spread_constraints(node_labels: dict[str, str] | None, constraints: list[Constraint]) -> bool:
    node_labels = node_labels or {}
    return all(c.topology_key in node_labels for c in constraints)


def count_pods_match_selector(pods: list[PodInfo], selector: labels.Selector | None, ns: str) -> int:
    """Pods in ns, not terminating, matching selector. Upstream: countPodsMatchSelector"""
    if selector is None:
        return 0
    n = 0
    wanted = _wanted_pairs(selector)
    if wanted is not None:
        # label_matcher's subset test written out: no call per pod
        for pi in pods:
            meta = pi.pod.metadata
            if meta.deletion_timestamp is None and meta.namespace == ns:
                lbls = meta.labels
                if lbls is not None and wanted <= lbls.items():
                    n += 1
        return n
    match = _matcher(selector)
    for pi in pods:
        meta = pi.pod.metadata
        if meta.deletion_timestamp is None and meta.namespace == ns and match(meta.labels):
            n += 1
    return n


@functools.lru_cache(maxsize=64)
def _wanted_pairs(selector: labels.Selector) -> Any:
    """The (key, value) pairs an equality selector requires, as a dict items view (a label
    set matches when they are a subset of its items: label_matcher's test), or None for any
    other selector (or one that selects everything)."""
    if not selector or not all(r.op in ("=", "in") and len(r.values) == 1 for r in selector):
        return None
    pairs = {r.key: r.values[0] for r in selector}
    return pairs.items() if len(pairs) == len(selector) else None


@functools.lru_cache(maxsize=64)
def _matcher(selector: labels.Selector) -> Callable[[dict[str, str] | None], bool]:
    """labels.matches(selector, ·) as the listers' fast predicate (a workload's equality
    selector: one subset test of dict items), made once per selector."""
    return label_matcher(selector)


@dataclass
class PreFilterState:
    """Per constraint: how many eligible nodes each topology domain has, how many matching
    pods (domains without any left out), and the global minimum, computed once per pod.

    Upstream: preFilterState (TpValueToMatchNum, TpKeyToDomainsNum; CriticalPaths gives the
    minimum).
    """

    constraints: list[Constraint] = field(default_factory=list)
    domains: list[dict[str, int]] = field(default_factory=list)
    match_num: list[dict[str, int]] = field(default_factory=list)
    min_match: list[int] = field(default_factory=list)
    self_match: list[int] = field(default_factory=list)     # 1 if the pod matches the selector


def min_match_num(domains: dict[str, int], match_num: dict[str, int], min_domains: int) -> int:
    """The global minimum, or 0 while fewer than minDomains domains exist; a domain without
    matching pods (not in match_num) makes it 0. Upstream: preFilterState.minMatchNum"""
    if len(domains) < min_domains or len(match_num) < len(domains):
        return 0
    return min(match_num.values(), default=0)


def count_domains(nodes: list[NodeInfo], pod: Pod, constraints: list[Constraint],
                  required: RequiredNodeAffinity) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """Per constraint: eligible nodes per domain, and matching pods per domain (non-zero only),
    over every node. Upstream: calPreFilterState's loop over allNodes"""
    domains: list[dict[str, int]] = [{} for _ in constraints]
    matches: list[dict[str, int]] = [{} for _ in constraints]
    ns = pod.metadata.namespace or ""
    for ni in nodes:
        node = ni.node
        if not node_labels_match_spread_constraints(node.metadata.labels, constraints):
            continue
        node_labels = node.metadata.labels
        for i, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(pod, node, required):
                continue
            value = node_labels[c.topology_key]
            domains[i][value] = domains[i].get(value, 0) + 1
            n = count_pods_match_selector(ni.pods, c.selector, ns)
            if n:
                matches[i][value] = matches[i].get(value, 0) + n
    return domains, matches


def _aggregatable(constraints: list[Constraint], required: RequiredNodeAffinity) -> bool:
    """Whether every node counts for every constraint whatever the pod: the counts then depend
    only on the constraint, so one workload's pods share them (framework/aggregate.py)."""
    no_affinity = not required.label_selector and required.terms is None
    return all(c.node_taints_policy != "Honor" and (no_affinity or c.node_affinity_policy != "Honor")
               for c in constraints)


def _domains_contribution(topology_key: str, all_keys: tuple[str, ...]) -> Contribution:
    """A node's domain (a node without the key: "", when all_keys does not require it)."""
    def contribution(ni: NodeInfo) -> dict[str, int] | None:
        lbls = ni.node.metadata.labels or {}
        if any(k not in lbls for k in all_keys):
            return None
        return {lbls.get(topology_key, ""): 1}
    return contribution


class NodeMatchCounter:
    """count_pods_match_selector(ni.pods, selector, ns), remembered per node by its
    pods_generation (which moves whenever the pods or their namespaces, labels or deletion
    timestamps change, and which the snapshot's copy shares with the cache's): the hostname
    sums and the zone sums of one selector, each re-reading the nodes that changed, count a
    changed node's pods once, not twice, and not at all after a status write (most of the
    changes a rolling update brings)."""

    __slots__ = ("selector", "ns", "memo")

    def __init__(self, selector: labels.Selector | None, ns: str) -> None:
        self.selector, self.ns = selector, ns
        self.memo: dict[str, tuple[int, int]] = {}

    def __call__(self, ni: NodeInfo) -> int:
        hit = self.memo.get(ni.name)
        generation = ni.pods_generation
        if hit is not None and hit[0] == generation:
            return hit[1]
        n = count_pods_match_selector(ni.pods, self.selector, self.ns)
        self.memo[ni.name] = (generation, n)
        return n


def _matches_contribution(topology_key: str, all_keys: tuple[str, ...], count: Callable[[NodeInfo], int],
                          ) -> Contribution:
    def contribution(ni: NodeInfo) -> dict[str, int] | None:
        if not ni.pods:
            return None
        lbls = ni.node.metadata.labels or {}
        if any(k not in lbls for k in all_keys):
            return None
        n = count(ni)
        return {lbls.get(topology_key, ""): n} if n else None
    return contribution


def _candidate_domains(nodes: list[NodeInfo], constraints: list[Constraint], require_all: bool,
                       all_domains: list[int] | None = None) -> tuple[set[str], list[dict[str, int]]]:
    """The candidate nodes lacking a topology key (when require_all), and per non-hostname
    constraint the domains of the others, each counted 0. Upstream: initPreScoreState

    all_domains (ours): per non-hostname constraint the number of domains over all nodes,
    given when no node lacks a key: the scan stops once every domain is seen (3 zones:
    after a few nodes, not 500).
    """
    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    keyed = [(counts[i], c.topology_key) for i, c in enumerate(constraints) if c.topology_key != LABEL_HOSTNAME]
    if all_domains is not None and len(all_domains) == len(keyed):
        want = list(zip(all_domains, (d for d, _ in keyed)))
        for ni in nodes:
            if all(len(d) >= n for n, d in want):
                break
            lbls = ni.node.metadata.labels or {}
            for domain_counts, key in keyed:
                domain_counts.setdefault(lbls.get(key, ""), 0)
        return ignored, counts
    for ni in nodes:
        lbls = ni.node.metadata.labels or {}
        if require_all and not node_labels_match_spread_constraints(lbls, constraints):
            ignored.add(ni.name)          # lacks a topology key: scored 0
            continue
        for domain_counts, key in keyed:
            domain_counts.setdefault(lbls.get(key, ""), 0)
    return ignored, counts


def _node_matches_contribution(count: Callable[[NodeInfo], int]) -> Contribution:
    """Matching pods per node, by node name (hostname constraints count a node's own pods)."""
    def contribution(ni: NodeInfo) -> dict[str, int] | None:
        if not ni.pods:
            return None
        n = count(ni)
        return {ni.name: n} if n else None
    return contribution


@dataclass
class PreScoreState:
    """Upstream: preScoreState. node_counts: per hostname constraint, the matching pods per
    node name, from sums kept across cycles (upstream counts a node's pods in Score)."""

    constraints: list[Constraint]
    ignored_nodes: set[str]
    topology_value_to_pod_counts: list[dict[str, int]]
    topology_normalizing_weight: list[float]
    node_counts: list[dict[str, int] | None] = field(default_factory=list)


class PodTopologySpread:
    NAME = NAME

    def __init__(self, handle: Any = None, args: PodTopologySpreadArgs | None = None) -> None:
        self.handle = handle
        self.aggregates = AggregateCache()
        args = args or PodTopologySpreadArgs()
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else args.default_constraints
        self.services: Any = None
        self.replication_ctrls: Any = None
        self.replica_sets: Any = None
        self.stateful_sets: Any = None
        self._owner_selectors: dict[str, tuple[Any, labels.Selector | None]] = {}
        self._match_counters: dict[tuple[str, labels.Selector | None], NodeMatchCounter] = {}
        self._host_domain_codes: dict[tuple[Any, ...], HostDomainCodes] = {}

    def set_listers(self, factory: Any) -> list[Any]:
        """The listers default_selector reads; the informers to start and wait for.

        Upstream: PodTopologySpread.setListers (only with default constraints)
        """
        if not self.default_constraints:
            return []
        core, apps = factory.core_v1(), factory.apps_v1()
        infs = [core.services(), core.replicationcontrollers(), apps.replicasets(), apps.statefulsets()]
        self.services, self.replication_ctrls, self.replica_sets, self.stateful_sets = (i.lister() for i in infs)
        return [i.informer() for i in infs]

    def _all_nodes(self) -> list[NodeInfo]:
        return self.handle.snapshot_shared_lister().node_info_list

    def build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The default constraints with whenUnsatisfiable == action, all selecting what
        default_selector gives; none when it gives nothing. Upstream: buildDefaultConstraints"""
        constraints = filter_topology_spread_constraints(list(self.default_constraints), pod, action)
        if not constraints:
            return []
        selector = default_selector(pod, self.services, self.replication_ctrls, self.replica_sets,
                                    self.stateful_sets, self._owner_selector)
        if not selector:
            return []
        for c in constraints:
            c.selector = selector
        return constraints

    def _owner_selector(self, obj: Any) -> labels.Selector | None:
        """selector_from(obj.spec.selector), remembered per workload while its object stays
        the same (every replica asks for its ReplicaSet's)."""
        uid = obj.metadata.uid or ""
        hit = self._owner_selectors.get(uid)
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self._owner_selectors) >= 64:
            self._owner_selectors.clear()
        sel = selector_from(obj.spec.selector)
        self._owner_selectors[uid] = (obj, sel)
        return sel

    def _constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's own constraints with action, or the defaults if it declares none."""
        own = pod.spec.topology_spread_constraints
        if own:
            return filter_topology_spread_constraints(own, pod, action)
        if not self.default_constraints:
            return []
        return self.build_default_constraints(pod, action)

    # --- filtering -------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Count matching pods per domain over the eligible nodes; Skip without constraints.

        Upstream: PodTopologySpread.PreFilter / calPreFilterState
        """
        constraints = self._constraints(pod, "DoNotSchedule")
        if not constraints:
            return None, Status(Code.SKIP)
        required = get_required_node_affinity(pod)
        if _aggregatable(constraints, required):
            domains, matches = self._aggregated_counts(pod.metadata.namespace or "", constraints)
        else:
            domains, matches = count_domains(self._all_nodes(), pod, constraints, required)
        pod_labels = pod.metadata.labels
        s = PreFilterState(constraints, domains, matches,
                           [min_match_num(d, m, c.min_domains) for c, d, m in zip(constraints, domains, matches)],
                           [1 if c.selector is not None and labels.matches(c.selector, pod_labels) else 0
                            for c in constraints])
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def _aggregated_counts(self, ns: str, constraints: list[Constraint], all_keys: tuple[str, ...] | None = None,
                           ) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
        """count_domains' answer from sums kept across cycles (every node eligible).

        all_keys: the topology keys a node must have all of to count (default: every
        constraint's); () counts a node without a key in the domain "" (default spreading).
        """
        snapshot = self.handle.snapshot_shared_lister()
        if all_keys is None:
            all_keys = tuple(c.topology_key for c in constraints)
        domains, matches = [], []
        for c in constraints:
            tk = c.topology_key
            domains.append(self.aggregates.get(("domains", tk, all_keys), _domains_contribution(tk, all_keys),
                                               node_only=True).totals(snapshot))
            key = ("matches", ns, c.selector, tk, all_keys)
            agg = self.aggregates.peek(key) or self.aggregates.get(
                key, _matches_contribution(tk, all_keys, self._match_counter(ns, c.selector)), selecting_pods=True)
            matches.append(agg.totals(snapshot))
        return domains, matches

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """existing matches + self match - global minimum must not exceed maxSkew.

        Example: zones a/b/c hold 2/1/0 matching pods, maxSkew 1: placing in c gives
        0 + 1 - 0 = 1 (ok); in a gives 2 + 1 - 0 = 3 > 1 (rejected).
        Upstream: PodTopologySpread.Filter
        """
        s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        node_labels = node_info.node.metadata.labels or {}
        for i, c in enumerate(s.constraints):
            tp_val = node_labels.get(c.topology_key)
            if tp_val is None:
                return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            skew = s.match_num[i].get(tp_val, 0) + s.self_match[i] - s.min_match[i]
            if skew > c.max_skew:
                return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[bool] | None:
        """Per node, whether Filter passes it (False: Filter gives the reason). Ours, for the
        feasibility loop's slices: per constraint, whether each counted domain is within
        maxSkew (and whether an uncounted one is), worked out once per cycle."""
        s: PreFilterState | None = state.storage.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return None
        checks = state.storage.get(_FILTER_NODES_STATE_KEY)
        if checks is None:
            checks = []
            for i, c in enumerate(s.constraints):
                base = s.self_match[i] - s.min_match[i]
                within = {v: n + base <= c.max_skew for v, n in s.match_num[i].items()}
                checks.append((c.topology_key, within, base <= c.max_skew))
            state.storage[_FILTER_NODES_STATE_KEY] = checks
        out = []
        for ni in nodes:
            lbls = ni.node.metadata.labels or _NO_LABELS
            ok = True
            for key, within, uncounted_ok in checks:
                value = lbls.get(key)
                if value is None or not within.get(value, uncounted_ok):
                    ok = False
                    break
            out.append(ok)
        return out

    # --- scoring ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Count matching pods per domain for ScheduleAnyway constraints. Upstream: PreScore

        Only non-default constraints need every topology key on a node: with the system
        defaults a node without a zone still spreads by hostname, and the nodes without a
        zone form one domain "" (upstream: requireAllTopologies).
        """
        all_nodes = self._all_nodes()
        if not all_nodes:
            return Status(Code.SKIP)
        constraints = self._constraints(pod, "ScheduleAnyway")
        if not constraints:
            return Status(Code.SKIP)
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        all_keys = tuple(c.topology_key for c in constraints) if require_all else ()
        ignored, counts = _candidate_domains(nodes, constraints, require_all, self._all_domains(constraints, all_keys))
        weights = []
        for i, c in enumerate(constraints):
            size = len(nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else len(counts[i])
            weights.append(topology_normalizing_weight(size))
        required = get_required_node_affinity(pod)
        ns = pod.metadata.namespace or ""
        node_counts = self._node_counts(ns, constraints)
        if _aggregatable(constraints, required):
            # Hostname constraints count per node (node_counts): only the others' domains.
            by_domain = [c for c in constraints if c.topology_key != LABEL_HOSTNAME]
            _, matches = self._aggregated_counts(ns, by_domain, all_keys)
            for domain_counts, domain_matches in zip([d for d, c in zip(counts, constraints) if c in by_domain],
                                                     matches):
                for value in domain_counts:
                    domain_counts[value] = domain_matches.get(value, 0)
            state.write(PRE_SCORE_STATE_KEY, PreScoreState(constraints, ignored, counts, weights, node_counts))
            return None
        for ni in all_nodes:
            node = ni.node
            lbls = node.metadata.labels or {}
            if require_all and not node_labels_match_spread_constraints(lbls, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.match_node_inclusion_policies(pod, node, required):
                    continue
                value = lbls.get(c.topology_key, "")
                if value in counts[i]:          # only domains of candidate nodes; hostname counted in Score
                    counts[i][value] += count_pods_match_selector(ni.pods, c.selector, ns)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(constraints, ignored, counts, weights, node_counts))
        return None

    def _all_domains(self, constraints: list[Constraint], all_keys: tuple[str, ...]) -> list[int] | None:
        """Per non-hostname constraint, how many domains all the snapshot's nodes form, when no
        node lacks a key of all_keys (so none is ignored); None otherwise."""
        snapshot = self.handle.snapshot_shared_lister()
        keyed = [c.topology_key for c in constraints if c.topology_key != LABEL_HOSTNAME]
        totals = [self.aggregates.get(("domains", tk, all_keys), _domains_contribution(tk, all_keys),
                                      node_only=True).totals(snapshot)
                  for tk in keyed or ([LABEL_HOSTNAME] if all_keys else [])]
        if all_keys and sum(totals[0].values()) != snapshot.num_nodes():
            return None                 # some node lacks a key: the scan must find the ignored ones
        return [len(t) for t in totals] if keyed else []

    def _node_counts(self, ns: str, constraints: list[Constraint]) -> list[dict[str, int] | None]:
        """Per hostname constraint, matching pods per node name over the snapshot (sums kept
        across cycles), so Score looks a node up instead of testing its pods."""
        snapshot = self.handle.snapshot_shared_lister()
        out: list[dict[str, int] | None] = []
        for c in constraints:
            if c.topology_key != LABEL_HOSTNAME:
                out.append(None)
                continue
            key = ("node-matches", ns, c.selector)
            agg = self.aggregates.peek(key) or self.aggregates.get(
                key, _node_matches_contribution(self._match_counter(ns, c.selector)), selecting_pods=True)
            out.append(agg.totals(snapshot))
        return out

    def _match_counter(self, ns: str, selector: labels.Selector | None) -> NodeMatchCounter:
        """The NodeMatchCounter of (ns, selector), shared by the aggregates of that selector;
        at most 16 kept, least recently asked for dropped first."""
        counters = self._match_counters
        key = (ns, selector)
        counter = counters.pop(key, None)
        if counter is None:
            counter = NodeMatchCounter(selector, ns)
            if len(counters) >= 16:
                del counters[next(iter(counters))]
        counters[key] = counter
        return counter

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Sum over constraints of count * log(domains + 2) + (maxSkew - 1); lower is better.

        Upstream: PodTopologySpread.Score
        """
        s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        name = node_info.name
        if name in s.ignored_nodes:
            return 0
        lbls = node_info.node.metadata.labels or {}
        score = 0.0
        for i, c in enumerate(s.constraints):
            tp_val = lbls.get(c.topology_key)
            if tp_val is None:
                continue
            node_counts = s.node_counts[i] if s.node_counts else None
            if node_counts is not None:
                cnt = node_counts.get(name, 0)
            elif c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_match_selector(node_info.pods, c.selector, pod.metadata.namespace or "")
            else:
                cnt = s.topology_value_to_pod_counts[i].get(tp_val, 0)
            score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i])
        return _go_round(score)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """[score(state, pod, ni) for ni in nodes] with each constraint's terms worked out once:
        per domain value count * weight + maxSkew - 1 (a hostname constraint's per node)."""
        s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        ns = pod.metadata.namespace or ""
        terms = []
        for i, c in enumerate(s.constraints):
            w, base = s.topology_normalizing_weight[i], c.max_skew - 1
            node_counts = s.node_counts[i] if s.node_counts else None
            if node_counts is None and c.topology_key == LABEL_HOSTNAME:
                node_counts = {ni.name: count_pods_match_selector(ni.pods, c.selector, ns) for ni in nodes}
            by_value = {v: n * w + base for v, n in s.topology_value_to_pod_counts[i].items()}
            terms.append((c.topology_key, node_counts, by_value, w, base))
        ignored = s.ignored_nodes
        if not ignored and len(terms) == 2 and terms[0][1] is not None and terms[1][1] is None:
            codes = self._codes(ns, s.constraints[0].selector, terms[0][0], terms[1][0])
            keep = 4 * max(len(nodes), self.handle.snapshot_shared_lister().num_nodes()) + 64
            return _score_host_and_domain(nodes, node_column(state, nodes, "generation"), codes, terms[0], terms[1],
                                          keep)
        out = []
        for ni in nodes:
            name = ni.name
            if name in ignored:
                out.append(0)
                continue
            lbls = ni.node.metadata.labels or {}
            score = 0.0
            for key, node_counts, by_value, w, base in terms:
                tp_val = lbls.get(key)
                if tp_val is None:
                    continue
                if node_counts is not None:
                    score += node_counts.get(name, 0) * w + base
                else:
                    score += by_value.get(tp_val, base)
            out.append(int(score + 0.5))      # _go_round: the score is never negative
        return out

    def _codes(self, ns: str, selector: labels.Selector | None, host_key: str, domain_key: str) -> HostDomainCodes:
        """The HostDomainCodes of a selector and key pair; at most 16 kept."""
        memo = self._host_domain_codes
        key = (ns, selector, host_key, domain_key)
        codes = memo.pop(key, None)
        if codes is None:
            codes = HostDomainCodes()
            if len(memo) >= 16:
                del memo[next(iter(memo))]
        memo[key] = codes
        return codes

    def normalize_scores(self, state: CycleState, pod: Pod, names: list[str], raw: list[int]) -> list[int]:
        """normalize_score over plain lists (names[i] scored raw[i])."""
        s: PreScoreState | None = state.storage.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return raw
        ignored = s.ignored_nodes
        valid = [x for n, x in zip(names, raw) if n not in ignored] if ignored else raw
        min_score, max_score = min(valid, default=0), max(valid, default=0)
        if max_score == 0:
            return [0 if n in ignored else MAX_NODE_SCORE for n in names] if ignored else [MAX_NODE_SCORE] * len(raw)
        top = max_score + min_score
        if not ignored and 0 <= min_score and max_score - min_score <= len(raw) // 2:
            # raw scores are ints in a narrow range: normalize by lookup, at C level.
            table = [MAX_NODE_SCORE * (top - x) // max_score for x in range(min_score, max_score + 1)]
            return list(map(table.__getitem__, map(sub, raw, repeat(min_score)) if min_score else raw))
        if not ignored:
            return [MAX_NODE_SCORE * (top - x) // max_score for x in raw]
        return [0 if n in ignored else MAX_NODE_SCORE * (top - x) // max_score for n, x in zip(names, raw)]

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Invert into [0, 100]: 100 * (max + min - s) / max; ignored nodes get 0.

        Example: raw [3, 6] -> max 6, min 3 -> [100*(9-3)/6, 100*(9-6)/6] = [100, 50].
        Upstream: PodTopologySpread.NormalizeScore
        """
        s: PreScoreState | None = state.storage.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return None
        valid = [x.score for x in scores if x.name not in s.ignored_nodes]
        min_score = min(valid, default=0)
        max_score = max(valid, default=0)
        for x in scores:
            if x.name in s.ignored_nodes:
                x.score = 0
            elif max_score == 0:
                x.score = MAX_NODE_SCORE
            else:
                x.score = MAX_NODE_SCORE * (max_score + min_score - x.score) // max_score
        return None


_NO_LABELS: dict[str, str] = {}
_FILTER_NODES_STATE_KEY = "FilterNodes" + NAME   # filter_nodes' per-constraint checks, once per cycle
_ROW_COUNTS = 16        # matching pods on a node up to which its score is looked up


class HostDomainCodes:
    """Per node generation, where the node's score sits in _score_host_and_domain's table:
    domain index * _ROW_COUNTS + its count of matching pods (nodes without the domain key, as
    the density run's, have a row of their own), or _SLOW (no hostname label or too many pods:
    scored term by term). A node's labels and pods are fixed for a
    generation (it moves on every change of the NodeInfo), so only the nodes changed since
    the last cycle are looked at; the others' codes are found by their generation at C level.
    Domain indexes never change (a new domain gets the next one)."""

    __slots__ = ("domains", "by_generation", "rows")

    def __init__(self) -> None:
        self.domains: dict[str | None, int] = {}        # None: the nodes without the domain key
        self.by_generation: dict[int, int] = {}
        # domain index -> ((weight, base, domain term), its row of the table): a row is
        # worked out again only when its inputs change (one domain per bound pod, mostly).
        self.rows: dict[int, tuple[tuple[float, int, float], list[int]]] = {}


_SLOW = -1


def _score_host_and_domain(nodes: list[NodeInfo], gens: list[int], codes: HostDomainCodes, host: tuple[Any, ...],
                           domain: tuple[Any, ...], keep: int) -> list[int]:
    """score_nodes' loop written out for the default constraints' shape: a per-node (hostname)
    term, then a per-domain term; no node ignored. Same sums in the same order.

    A node's rounded score depends only on its domain and its count of matching pods: the
    cycle's table holds it per (domain, count), and a node's place in the table (its code,
    kept per generation in codes) is looked up at C level; the table's last entry, _SLOW,
    sends a node to the sum term by term. keep: how many codes to keep before starting over.
    """
    host_key, node_counts, _, w, base = host
    domain_key, _, by_value, _, domain_base = domain
    by_generation, domains = codes.by_generation, codes.domains
    code_list = list(map(by_generation.get, gens))
    if None in code_list:
        if len(by_generation) > keep:    # (4 x the snapshot's nodes) the generations of nodes
            by_generation.clear()        # changed since: never asked for again
        get_count = node_counts.get
        for i, code in enumerate(code_list):
            if code is None:
                ni = nodes[i]
                lbls = ni.node.metadata.labels or _NO_LABELS
                tp_val = lbls.get(domain_key)
                count = get_count(ni.name, 0)
                if count >= _ROW_COUNTS or host_key not in lbls:
                    code = _SLOW
                else:
                    index = domains.get(tp_val)
                    if index is None:
                        index = domains[tp_val] = len(domains)
                    code = index * _ROW_COUNTS + count
                code_list[i] = by_generation[gens[i]] = code
    table = [_SLOW] * (len(domains) * _ROW_COUNTS + 1)      # the last entry: code _SLOW
    rows = codes.rows
    for value, index in domains.items():
        # None: the nodes without the domain key, which get no domain term (adding 0.0 to
        # the non-negative hostname term changes no bit of it).
        term = 0.0 if value is None else by_value.get(value)
        if term is not None:
            inputs = (w, base, term)
            known = rows.get(index)
            if known is not None and known[0] == inputs:
                row = known[1]
            else:
                row = [int(c * w + base + term + 0.5) for c in range(_ROW_COUNTS)]
                rows[index] = (inputs, row)
            table[index * _ROW_COUNTS:(index + 1) * _ROW_COUNTS] = row
    out = list(map(table.__getitem__, code_list))
    if _SLOW in out:
        get_count, get_term = node_counts.get, by_value.get
        for i, score in enumerate(out):
            if score == _SLOW:
                ni = nodes[i]
                lbls = ni.node.metadata.labels or _NO_LABELS
                tp_val = lbls.get(domain_key)
                total = get_count(ni.name, 0) * w + base if host_key in lbls else 0.0
                if tp_val is not None:
                    total += get_term(tp_val, domain_base)
                out[i] = int(total + 0.5)
    return out


def topology_normalizing_weight(size: int) -> float:
    """log(size + 2): more domains weigh more. Upstream: topologyNormalizingWeight"""
    return math.log(size + 2)


def score_for_count(cnt: int, max_skew: int, tp_weight: float) -> float:
    """Upstream: scoreForCount"""
    return cnt * tp_weight + (max_skew - 1)


def _go_round(x: float) -> int:
    """math.Round: half away from zero (Python's round() is banker's)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))
