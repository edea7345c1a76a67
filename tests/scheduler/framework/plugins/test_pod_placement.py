"""PodTopologySpread and InterPodAffinity, after upstream's podtopologyspread/{filtering,
scoring}_test.go and interpodaffinity/{filtering,scoring}_test.go."""
from __future__ import annotations

from typing import Any

from kubeplane.scheduler.framework.interface import Code, CycleState, NodeScore
from kubeplane.scheduler.framework.plugins import interpodaffinity as ipa
from kubeplane.scheduler.framework.plugins import podtopologyspread as pts
from kubeplane.scheduler.internal.cache import Snapshot

from ...helpers import make_node, make_pod


class Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def snapshot_shared_lister(self) -> Snapshot:
        return self.snapshot


def spread(max_skew: int, key: str, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {"spec": {"topologySpreadConstraints": [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
                                                    "labelSelector": {"matchLabels": {"foo": ""}}, **extra}]}}


ZONES = [make_node("node-a", labels={"zone": "zone1"}), make_node("node-b", labels={"zone": "zone1"}),
         make_node("node-x", labels={"zone": "zone2"}), make_node("node-y", labels={"zone": "zone2"})]


def filter_all(plugin: Any, pod: Any, snap: Snapshot) -> dict[str, str | None]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snap.node_info_list)
    if status is not None and status.code == Code.SKIP:
        return {ni.name: None for ni in snap.node_info_list}
    assert status is None, status
    out = {}
    for ni in snap.node_info_list:
        s = plugin.filter(state, pod, ni)
        out[ni.name] = None if s is None else s.reasons[0]
    return out


def test_spread_zones_2_1() -> None:
    """Upstream "pods spread across zones as 2/1": zone1 holds 2 matching pods, zone2 one;
    maxSkew 1 lets the pod only into zone2 (1 + 1 - 1 = 1), not zone1 (2 + 1 - 1 = 2)."""
    pods = [make_pod("p-a1", node="node-a", labels={"foo": ""}), make_pod("p-b1", node="node-b", labels={"foo": ""}),
            make_pod("p-x1", node="node-x", labels={"foo": ""})]
    snap = Snapshot.from_nodes(ZONES, pods)
    got = filter_all(pts.PodTopologySpread(Handle(snap)), make_pod("p", labels={"foo": ""}, spec=spread(1, "zone")["spec"]),
                     snap)
    c = pts.ERR_REASON_CONSTRAINTS_NOT_MATCH
    assert got == {"node-a": c, "node-b": c, "node-x": None, "node-y": None}


def test_spread_pods_in_other_namespaces_and_non_matching_pods_do_not_count() -> None:
    pods = [make_pod("p-a1", node="node-a", labels={"foo": ""}, ns="other"),
            make_pod("p-a2", node="node-a", labels={"bar": ""})]
    snap = Snapshot.from_nodes(ZONES, pods)
    got = filter_all(pts.PodTopologySpread(Handle(snap)), make_pod("p", labels={"foo": ""}, spec=spread(1, "zone")["spec"]),
                     snap)
    assert set(got.values()) == {None}


def test_spread_node_without_topology_label_is_unresolvable() -> None:
    snap = Snapshot.from_nodes([*ZONES, make_node("node-nolabel")])
    plugin = pts.PodTopologySpread(Handle(snap))
    got = filter_all(plugin, make_pod("p", labels={"foo": ""}, spec=spread(1, "zone")["spec"]), snap)
    assert got["node-nolabel"] == pts.ERR_REASON_NODE_LABEL_NOT_MATCH
    assert got["node-a"] is None


def test_spread_min_domains() -> None:
    """Two zones with one matching pod each, minDomains 3: the global minimum counts as 0,
    so every zone gives skew 1 + 1 - 0 = 2 > 1."""
    pods = [make_pod("p-a1", node="node-a", labels={"foo": ""}), make_pod("p-x1", node="node-x", labels={"foo": ""})]
    snap = Snapshot.from_nodes(ZONES, pods)
    spec = spread(1, "zone", minDomains=3)["spec"]
    got = filter_all(pts.PodTopologySpread(Handle(snap)), make_pod("p", labels={"foo": ""}, spec=spec), snap)
    assert set(got.values()) == {pts.ERR_REASON_CONSTRAINTS_NOT_MATCH}


def test_spread_node_affinity_policy_honor_ignores_excluded_domains() -> None:
    """zone2 is excluded by the pod's nodeSelector, so its 0 count does not make the minimum."""
    pods = [make_pod("p-a1", node="node-a", labels={"foo": ""})]
    nodes = [make_node("node-a", labels={"zone": "zone1", "ok": "1"}), make_node("node-x", labels={"zone": "zone2"})]
    snap = Snapshot.from_nodes(nodes, pods)
    spec = {**spread(1, "zone")["spec"], "nodeSelector": {"ok": "1"}}
    got = filter_all(pts.PodTopologySpread(Handle(snap)), make_pod("p", labels={"foo": ""}, spec=spec), snap)
    assert got["node-a"] is None


def score_all(plugin: Any, pod: Any, snap: Snapshot) -> list[int] | None:
    state = CycleState()
    nodes = snap.node_info_list
    status = plugin.pre_score(state, pod, nodes)
    if status is not None and status.code == Code.SKIP:
        return None
    scores = [NodeScore(ni.name, plugin.score(state, pod, ni)) for ni in nodes]
    plugin.normalize_score(state, pod, scores)
    return [s.score for s in scores]


def test_spread_score_hostname() -> None:
    """Hostname spreading over 3 nodes holding 2/1/0 matching pods: weight log(3 + 2) = 1.609;
    raw round(2*1.609) = 3, round(1.609) = 2, 0; normalized 100*(3+0-s)/3 -> 0, 33, 100."""
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = [make_pod("a1", node="a", labels={"foo": ""}), make_pod("a2", node="a", labels={"foo": ""}),
            make_pod("b1", node="b", labels={"foo": ""})]
    snap = Snapshot.from_nodes(nodes, pods)
    pod = make_pod("p", labels={"foo": ""}, spec=spread(1, "kubernetes.io/hostname", "ScheduleAnyway")["spec"])
    assert score_all(pts.PodTopologySpread(Handle(snap)), pod, snap) == [0, 33, 100]
    assert score_all(pts.PodTopologySpread(Handle(snap)), make_pod("q"), snap) is None


def test_spread_score_zone_and_ignored_nodes() -> None:
    """Zones: zone1 has 2 matching pods, zone2 none; weight log(2+2) = 1.386 -> raw 3 and 0;
    a node without the zone label is ignored (score 0)."""
    nodes = [*ZONES[:1], ZONES[2], make_node("node-nolabel")]
    pods = [make_pod("a1", node="node-a", labels={"foo": ""}), make_pod("a2", node="node-a", labels={"foo": ""})]
    snap = Snapshot.from_nodes(nodes, pods)
    pod = make_pod("p", labels={"foo": ""}, spec=spread(1, "zone", "ScheduleAnyway")["spec"])
    assert score_all(pts.PodTopologySpread(Handle(snap)), pod, snap) == [0, 100, 0]


def affinity(kind: str, mode: str, labels: dict[str, str], key: str, weight: int = 0) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    field = f"{mode}DuringSchedulingIgnoredDuringExecution"
    value = [{"weight": weight, "podAffinityTerm": term}] if mode == "preferred" else [term]
    return {"affinity": {kind: {field: value}}}


REGION_NODES = [make_node("node1", labels={"region": "r1", "zone": "z1"}),
                make_node("node2", labels={"region": "r1", "zone": "z2"}),
                make_node("node3", labels={"region": "r2", "zone": "z3"})]


def test_required_affinity() -> None:
    pods = [make_pod("db", node="node1", labels={"app": "db"})]
    snap = Snapshot.from_nodes(REGION_NODES, pods)
    pod = make_pod("p", spec=affinity("podAffinity", "required", {"app": "db"}, "region"))
    got = filter_all(ipa.InterPodAffinity(Handle(snap)), pod, snap)
    assert got == {"node1": None, "node2": None, "node3": ipa.ERR_REASON_AFFINITY_RULES_NOT_MATCH}


def test_required_affinity_first_pod_of_a_self_affine_group_schedules() -> None:
    """Upstream: "pod matches its own affinity and no other pods exist" (issue #21306)."""
    snap = Snapshot.from_nodes(REGION_NODES)
    pod = make_pod("p", labels={"app": "web"}, spec=affinity("podAffinity", "required", {"app": "web"}, "region"))
    assert set(filter_all(ipa.InterPodAffinity(Handle(snap)), pod, snap).values()) == {None}
    other = make_pod("p", labels={"app": "x"}, spec=affinity("podAffinity", "required", {"app": "web"}, "region"))
    assert set(filter_all(ipa.InterPodAffinity(Handle(snap)), other, snap).values()) == \
        {ipa.ERR_REASON_AFFINITY_RULES_NOT_MATCH}


def test_required_anti_affinity() -> None:
    pods = [make_pod("web", node="node1", labels={"app": "web"})]
    snap = Snapshot.from_nodes(REGION_NODES, pods)
    pod = make_pod("p", spec=affinity("podAntiAffinity", "required", {"app": "web"}, "region"))
    got = filter_all(ipa.InterPodAffinity(Handle(snap)), pod, snap)
    r = ipa.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
    assert got == {"node1": r, "node2": r, "node3": None}


def test_existing_pods_anti_affinity() -> None:
    existing = make_pod("guard", node="node1", spec=affinity("podAntiAffinity", "required", {"app": "web"}, "zone"))
    snap = Snapshot.from_nodes(REGION_NODES, [existing])
    got = filter_all(ipa.InterPodAffinity(Handle(snap)), make_pod("p", labels={"app": "web"}), snap)
    assert got == {"node1": ipa.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, "node2": None, "node3": None}
    # A pod the guard's term does not select is unaffected; one without any terms skips the plugin.
    assert set(filter_all(ipa.InterPodAffinity(Handle(snap)), make_pod("q", labels={"app": "db"}), snap).values()) \
        == {None}


def test_preferred_affinity_and_anti_affinity_scores() -> None:
    pods = [make_pod("db", node="node1", labels={"app": "db"})]
    snap = Snapshot.from_nodes(REGION_NODES, pods)
    near = make_pod("p", spec=affinity("podAffinity", "preferred", {"app": "db"}, "region", weight=5))
    assert score_all(ipa.InterPodAffinity(Handle(snap)), near, snap) == [100, 100, 0]
    far = make_pod("p", spec=affinity("podAntiAffinity", "preferred", {"app": "db"}, "zone", weight=5))
    assert score_all(ipa.InterPodAffinity(Handle(snap)), far, snap) == [0, 100, 100]
    assert score_all(ipa.InterPodAffinity(Handle(snap)), make_pod("q"), snap) is None


def test_existing_pods_hard_affinity_attracts_incoming_pod() -> None:
    """An existing pod's *required* affinity to the incoming pod's labels counts with
    hardPodAffinityWeight (1) in the incoming pod's score."""
    existing = make_pod("e", node="node2", spec=affinity("podAffinity", "required", {"app": "web"}, "zone"))
    snap = Snapshot.from_nodes(REGION_NODES, [existing])
    assert score_all(ipa.InterPodAffinity(Handle(snap)), make_pod("p", labels={"app": "web"}), snap) == [0, 100, 0]
