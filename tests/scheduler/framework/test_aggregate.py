"""The sums kept across cycles (framework/aggregate.py) equal the loops over every node they
replace, through random node and pod changes made the way the scheduler makes them (cache,
then update_snapshot), and the snapshot's change log names exactly the nodes copied."""
from __future__ import annotations

import random
from typing import Any

from kubeplane.scheduler.framework.aggregate import AggregateCache, NodeAggregate
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.plugins import interpodaffinity as ipa
from kubeplane.scheduler.framework.plugins import podtopologyspread as pts
from kubeplane.scheduler.framework.types import NodeInfo
from kubeplane.scheduler.internal.cache import Cache, Snapshot
from kubeplane.scheduler.schedule_one import assume_copy

from ..helpers import make_node, make_pod


class Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def snapshot_shared_lister(self) -> Snapshot:
        return self.snapshot


ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


def random_node(rng: random.Random, i: int, gen: int = 0) -> Any:
    lbls = {} if rng.random() < 0.1 else {ZONE: f"z{rng.randrange(3)}"}
    if rng.random() < 0.3:
        lbls["rack"] = f"r{rng.randrange(4)}"
    node = make_node(f"n{i}", labels=lbls)
    node.metadata.resource_version = str(gen)
    return node


def random_pod(rng: random.Random, i: int) -> Any:
    spec: dict[str, Any] = {}
    color = rng.choice(["blue", "green", "red"])
    if rng.random() < 0.4:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"color": rng.choice(["blue", "green"])}},
             "topologyKey": rng.choice([HOST, ZONE])}]}}
    if rng.random() < 0.2:
        spec.setdefault("affinity", {})["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"color": "red"}}, "topologyKey": ZONE}]}
    return make_pod(f"p{i}", ns=rng.choice(["default", "other"]), labels={"color": color}, spec=spec)


class World:
    """A cache and its snapshot, changed at random."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cache, self.snapshot = Cache(), Snapshot()
        self.pods: list[Any] = []
        self.n = 0
        for _ in range(12):
            self.add_node()

    def add_node(self) -> None:
        self.cache.add_node(random_node(self.rng, self.n))
        self.n += 1

    def step(self) -> None:
        rng, cache = self.rng, self.cache
        live = [n for n, ni in cache.nodes.items() if ni.node is not None]
        r = rng.random()
        if r < 0.55 and live:
            pod = random_pod(rng, len(self.pods) + 1000 * rng.randrange(1000))
            if cache.get_pod(pod) is None:
                assumed = assume_copy(pod, rng.choice(live))
                cache.assume_pod(assumed)
                self.pods.append(assumed)
        elif r < 0.75 and self.pods:
            cache.remove_pod(self.pods.pop(rng.randrange(len(self.pods))))
        elif r < 0.85 and live:
            name = rng.choice(live)
            node = random_node(rng, int(name[1:]))
            cache.update_node(cache.nodes[name].node, node)          # relabelled
        elif r < 0.92:
            self.add_node()
        elif live:
            name = rng.choice(live)
            cache.remove_node(cache.nodes[name].node)
        cache.update_snapshot(self.snapshot)


def spread_pod(rng: random.Random, when: str) -> Any:
    keys = rng.choice([[ZONE], [HOST], [ZONE, HOST], ["rack"]])
    color = rng.choice(["blue", "green"])
    return make_pod("incoming", ns=rng.choice(["default", "other"]), labels={"color": color}, spec={
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": when,
                                       "labelSelector": {"matchLabels": {"color": color}}} for k in keys]})


def test_spread_counts_equal_the_full_loop() -> None:
    for seed in range(6):
        w = World(seed)
        plugin = pts.PodTopologySpread(Handle(w.snapshot))
        for _ in range(150):
            w.step()
            pod = spread_pod(w.rng, "DoNotSchedule")
            constraints = pts.filter_topology_spread_constraints(pod.spec.topology_spread_constraints, pod,
                                                                 "DoNotSchedule")
            required = pts.get_required_node_affinity(pod)
            assert plugin._aggregated_counts(pod.metadata.namespace, constraints) == \
                pts.count_domains(w.snapshot.node_info_list, pod, constraints, required)


def test_spread_scores_equal_the_full_loop() -> None:
    w = World(42)
    aggregated = pts.PodTopologySpread(Handle(w.snapshot))
    for _ in range(120):
        w.step()
        pod = spread_pod(w.rng, "ScheduleAnyway")
        nodes = w.snapshot.node_info_list
        if not nodes:
            continue
        got, want = CycleState(), CycleState()
        aggregated.pre_score(got, pod, nodes)
        plain = pts.PodTopologySpread(Handle(Snapshot(list(nodes))))   # untracked: the full loop
        plain.pre_score(want, pod, nodes)
        assert got.storage.get(pts.PRE_SCORE_STATE_KEY) == want.storage.get(pts.PRE_SCORE_STATE_KEY)
        assert [aggregated.score(got, pod, ni) for ni in nodes] == [plain.score(want, pod, ni) for ni in nodes]


def test_change_log_names_the_copied_nodes() -> None:
    cache, snap = Cache(), Snapshot()
    for i in range(3):
        cache.add_node(make_node(f"n{i}"))
    cache.update_snapshot(snap)
    assert snap.tracked and snap.seq == snap.layout_seq and snap.changed_since(snap.seq) == []
    seq = snap.seq
    cache.assume_pod(make_pod("a", node="n1"))
    cache.update_snapshot(snap)
    assert snap.changed_since(seq) == ["n1"] and snap.layout_seq == seq
    cache.update_snapshot(snap)                        # nothing changed: nothing logged
    assert snap.changed_since(seq) == ["n1"]
    cache.add_node(make_node("n3"))                    # the node set changed: sums start over
    cache.update_snapshot(snap)
    assert snap.layout_seq == snap.seq > seq


def test_node_aggregate_starts_over_on_another_or_untracked_snapshot() -> None:
    def pods(ni: NodeInfo) -> dict[str, int]:
        return {"pods": len(ni.pods)} if ni.pods else {}

    cache, snap = Cache(), Snapshot()
    cache.add_node(make_node("n0"))
    cache.update_snapshot(snap)
    agg: NodeAggregate[str] = NodeAggregate(pods)
    assert agg.totals(snap) == {}
    cache.assume_pod(make_pod("a", node="n0"))
    cache.update_snapshot(snap)
    assert agg.totals(snap) == {"pods": 1}
    ni = NodeInfo(make_pod("b"), make_pod("c"))
    ni.set_node(make_node("m"))
    assert agg.totals(Snapshot([ni])) == {"pods": 2}
    assert agg.totals(snap) == {"pods": 1}
    lru = AggregateCache(size=2)
    first = lru.get("a", pods)
    lru.get("b", pods)
    assert lru.get("a", pods) is first
    lru.get("c", pods)                                 # drops b, the least recently used
    assert lru.get("a", pods) is first and lru.get("b", pods) is not first


def affinity_pod(rng: random.Random) -> Any:
    pod = random_pod(rng, 0)
    if rng.random() < 0.5:
        pod.spec.affinity = make_pod("x", spec={"affinity": {"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": ZONE}}]}}}).spec.affinity
    return pod


def test_inter_pod_affinity_counts_equal_the_full_loop() -> None:
    """Kept sums (a tracked snapshot) against sums made afresh (an untracked copy), for the
    PreFilter counts, the Filter verdicts and the PreScore weights."""
    for seed in range(5):
        w = World(100 + seed)
        kept = ipa.InterPodAffinity(Handle(w.snapshot))
        for _ in range(150):
            w.step()
            nodes = w.snapshot.node_info_list
            fresh = ipa.InterPodAffinity(Handle(Snapshot(list(nodes))))
            pod = affinity_pod(w.rng)
            got, want = CycleState(), CycleState()
            assert kept.pre_filter(got, pod, nodes) == fresh.pre_filter(want, pod, nodes)
            g, f = got.storage.get(ipa.PRE_FILTER_STATE_KEY), want.storage.get(ipa.PRE_FILTER_STATE_KEY)
            if f is not None:
                assert (g.existing_anti_affinity_counts, g.affinity_counts, g.anti_affinity_counts) == \
                    (f.existing_anti_affinity_counts, f.affinity_counts, f.anti_affinity_counts)
                assert [kept.filter(got, pod, ni) for ni in nodes] == [fresh.filter(want, pod, ni) for ni in nodes]
            if nodes:
                got, want = CycleState(), CycleState()
                assert kept.pre_score(got, pod, nodes) == fresh.pre_score(want, pod, nodes)
                assert got.storage.get(ipa.PRE_SCORE_STATE_KEY) == want.storage.get(ipa.PRE_SCORE_STATE_KEY)


def test_inter_pod_affinity_keeps_pairs_whose_weights_cancel() -> None:
    """A preferred affinity and anti-affinity of equal weight on one pair: upstream's score map
    holds the pair at 0, so the plugin scores (all 0) rather than Skips."""
    node = make_node("n0", labels={ZONE: "z"})
    ni = NodeInfo(make_pod("e", labels={"color": "blue"}))
    ni.set_node(node)
    term = {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE}
    pod = make_pod("p", spec={"affinity": {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": term}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 3, "podAffinityTerm": term}]}}})
    state = CycleState()
    assert ipa.InterPodAffinity(Handle(Snapshot([ni]))).pre_score(state, pod, [ni]) is None
    assert state.read(ipa.PRE_SCORE_STATE_KEY) == {ZONE: {"z": 0}}


def test_affinity_lists_follow_changes_without_rebuilds() -> None:
    """The snapshot's affinity lists, changed node by node, hold exactly the nodes a rebuild
    over all nodes would list (order aside)."""
    for seed in range(4):
        w = World(200 + seed)
        for _ in range(200):
            w.step()
            snap = w.snapshot
            with_aff = [ni.name for ni in snap.have_pods_with_affinity_node_info_list]
            with_anti = [ni.name for ni in snap.have_pods_with_required_anti_affinity_node_info_list]
            assert len(set(with_aff)) == len(with_aff) and len(set(with_anti)) == len(with_anti)
            assert set(with_aff) == {ni.name for ni in snap.node_info_list if ni.pods_with_affinity}
            assert set(with_anti) == {ni.name for ni in snap.node_info_list if ni.pods_with_required_anti_affinity}
            assert all(snap.node_info_map[n] is ni for n, ni in zip(with_aff, snap.have_pods_with_affinity_node_info_list))


def test_node_only_aggregate_skips_nodes_changed_by_their_pods() -> None:
    """A node_only NodeAggregate takes a node's contribution again only when its Node object
    changes (relabelled), not when its pods do; the sums stay the full loop's."""
    cache, snap = Cache(), Snapshot()
    for i in range(4):
        cache.add_node(make_node(f"n{i}", labels={ZONE: f"z{i % 2}"}))
    cache.update_snapshot(snap)
    calls: list[str] = []

    def zone_of(ni: NodeInfo) -> dict[str, int]:
        calls.append(ni.name)
        return {(ni.node.metadata.labels or {}).get(ZONE, ""): 1}

    agg: NodeAggregate[str] = NodeAggregate(zone_of, node_only=True)
    assert agg.totals(snap) == {"z0": 2, "z1": 2} and len(calls) == 4
    cache.assume_pod(assume_copy(make_pod("p"), "n1"))
    cache.update_snapshot(snap)
    assert agg.totals(snap) == {"z0": 2, "z1": 2} and len(calls) == 4
    cache.update_node(cache.nodes["n1"].node, make_node("n1", labels={ZONE: "z0"}))
    cache.update_snapshot(snap)
    assert agg.totals(snap) == {"z0": 3, "z1": 1} and calls[4:] == ["n1"]


def test_selecting_pods_aggregate_skips_status_writes_only() -> None:
    """A selecting_pods NodeAggregate takes a node's contribution again when its pods, their
    labels or deletion timestamps, or its Node change; not after a status write."""
    from kubeplane.api.types.core_v1 import PodStatus
    cache, snap = Cache(), Snapshot()
    cache.add_node(make_node("n0", labels={ZONE: "z0"}))
    pod = make_pod("p", node="n0", labels={"color": "blue"})
    cache.add_pod(pod)
    cache.update_snapshot(snap)
    calls: list[str] = []

    def blue(ni: NodeInfo) -> dict[str, int] | None:
        calls.append(ni.name)
        n = sum(1 for pi in ni.pods if (pi.pod.metadata.labels or {}).get("color") == "blue")
        return {"blue": n} if n else None

    agg: NodeAggregate[str] = NodeAggregate(blue, selecting_pods=True)
    assert agg.totals(snap) == {"blue": 1} and len(calls) == 1
    written = pod.deep_copy()
    written.status = PodStatus(phase="Running")
    cache.update_pod(pod, written)
    cache.update_snapshot(snap)
    assert agg.totals(snap) == {"blue": 1} and len(calls) == 1
    red = written.deep_copy()
    red.metadata.labels = {"color": "red"}
    cache.update_pod(written, red)
    cache.update_snapshot(snap)
    assert agg.totals(snap) == {} and len(calls) == 2
    cache.add_pod(make_pod("q", node="n0", labels={"color": "blue"}))
    cache.update_snapshot(snap)
    assert agg.totals(snap) == {"blue": 1} and len(calls) == 3
