"""PodTopologySpread's default constraints, after upstream's podtopologyspread/scoring_test.go
(TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore's system-defaulting
case) and helper/spread_test.go (DefaultSelector)."""
from __future__ import annotations

import math
from typing import Any

import pytest

from kubeplane.api import labels, types
from kubeplane.api.types import apps_v1, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.scheduler.framework.interface import Code, CycleState, NodeScore
from kubeplane.scheduler.framework.plugins import podtopologyspread as pts
from kubeplane.scheduler.framework.plugins.helper import default_selector
from kubeplane.scheduler.framework.runtime import Framework, PluginSpec
from kubeplane.scheduler.internal.cache import Snapshot

from ...helpers import make_node, make_pod

HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}     # upstream: fooSelector
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}     # upstream: barSelector


class Unstarted:
    """The clientset of an informer factory that is never started (its listers are filled by hand)."""

    transport = None


class Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def snapshot_shared_lister(self) -> Snapshot:
        return self.snapshot


def rs(name: str, selector: dict[str, Any], ns: str = "default") -> apps_v1.ReplicaSet:
    return types.from_dict({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
                            "spec": {"selector": selector, "template": {}}}, apps_v1.ReplicaSet)


def service(name: str, selector: dict[str, str] | None, ns: str = "default") -> core_v1.Service:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return types.from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                            "spec": spec}, core_v1.Service)


def owned(kind: str, name: str, api_version: str = "apps/v1", controller: bool = True) -> dict[str, Any]:
    return {"ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}",
                                 "controller": controller}]}


def pod(name: str = "p", *, lbls: dict[str, str] | None = None, owner: dict[str, Any] | None = None,
        spec: dict[str, Any] | None = None, ns: str = "default") -> core_v1.Pod:
    p = make_pod(name, ns=ns, labels=lbls, spec=spec)
    if owner:
        d = types.to_dict(p)
        d["metadata"].update(owner)
        p = types.from_dict(d, core_v1.Pod)
    return p


def plugin(snap: Snapshot, objs: list[Any] = (), args: pts.PodTopologySpreadArgs | None = None
           ) -> pts.PodTopologySpread:
    """The plugin on a snapshot, its listers on an informer factory holding objs."""
    factory = SharedInformerFactory(Unstarted())  # type: ignore[arg-type]
    p = pts.PodTopologySpread(Handle(snap), args)
    p.set_listers(factory)
    for o in objs:
        inf = {core_v1.Service: factory.core_v1().services(), apps_v1.ReplicaSet: factory.apps_v1().replicasets(),
               core_v1.ReplicationController: factory.core_v1().replicationcontrollers(),
               apps_v1.StatefulSet: factory.apps_v1().statefulsets()}[type(o)]
        inf.informer().get_indexer().add(o)
    return p


def constraint(skew: int, key: str, when: str, selector: dict[str, Any] | None = None) -> core_v1.TopologySpreadConstraint:
    d: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        d["labelSelector"] = selector
    return types.from_dict(d, core_v1.TopologySpreadConstraint)


LIST = pts.PodTopologySpreadArgs(defaulting_type=pts.LIST_DEFAULTING)


def pre_score(p: pts.PodTopologySpread, pd: core_v1.Pod, snap: Snapshot) -> tuple[Any, pts.PreScoreState | None]:
    state = CycleState()
    status = p.pre_score(state, pd, snap.node_info_list)
    return status, state.storage.get(pts.PRE_SCORE_STATE_KEY)


# --- TestPreScoreSkip ---------------------------------------------------------------------------

def test_pre_score_skips_a_pod_without_constraints_and_no_defaults() -> None:
    snap = Snapshot.from_nodes([make_node("node-a"), make_node("node-b")])
    status, _ = pre_score(plugin(snap, args=LIST), pod(), snap)
    assert status is not None and status.code == Code.SKIP


def test_pre_score_skips_default_constraints_when_the_owner_replicaset_is_not_found() -> None:
    """Upstream: "default constraints and a replicaset that doesn't match" (owner rs2, only rs1)."""
    snap = Snapshot.from_nodes([make_node("node-a", labels={"planet": "mars"})])
    args = pts.PodTopologySpreadArgs((constraint(2, "planet", "ScheduleAnyway"),), pts.LIST_DEFAULTING)
    p = plugin(snap, [rs("rs1", {"matchExpressions": [{"key": "tar", "operator": "Exists"}]})], args)
    status, _ = pre_score(p, pod(lbls={"foo": "bar", "baz": "sup"}, owner=owned("ReplicaSet", "rs2")), snap)
    assert status is not None and status.code == Code.SKIP


def test_system_defaults_only_score_so_pre_filter_skips() -> None:
    snap = Snapshot.from_nodes([make_node("node-a", labels={ZONE: "mars"})])
    p = plugin(snap, [rs("rs1", FOO)])
    _, status = p.pre_filter(CycleState(), pod(lbls={"foo": "tar"}, owner=owned("ReplicaSet", "rs1")),
                             snap.node_info_list)
    assert status is not None and status.code == Code.SKIP


# --- TestPreScoreStateEmptyNodes ----------------------------------------------------------------

def test_pre_score_state_system_default_constraints_and_a_replicaset() -> None:
    """Nodes with no zone are not excluded: they are one more zone, ""."""
    snap = Snapshot.from_nodes([make_node("node-a", labels={ZONE: "mars"}), make_node("node-b", labels={ZONE: "mars"}),
                                make_node("node-c"), make_node("node-d")])
    p = plugin(snap, [rs("rs1", FOO)])
    status, s = pre_score(p, pod(lbls={"foo": "tar", "baz": "sup"}, owner=owned("ReplicaSet", "rs1")), snap)
    assert status is None and s is not None
    sel = labels.from_label_selector(FOO)
    assert [(c.max_skew, c.topology_key, c.selector, c.min_domains, c.node_affinity_policy, c.node_taints_policy)
            for c in s.constraints] == [(3, HOSTNAME, sel, 1, "Honor", "Ignore"), (5, ZONE, sel, 1, "Honor", "Ignore")]
    assert s.ignored_nodes == set()
    assert s.topology_value_to_pod_counts[1] == {"mars": 0, "": 0}
    assert s.topology_normalizing_weight == [math.log(4 + 2), math.log(2 + 2)]


def test_pre_score_state_list_default_constraints_and_a_replicaset() -> None:
    """The DoNotSchedule default (rack) is not a scoring constraint."""
    args = pts.PodTopologySpreadArgs((constraint(1, HOSTNAME, "ScheduleAnyway"), constraint(2, "rack", "DoNotSchedule"),
                                      constraint(2, "planet", "ScheduleAnyway")), pts.LIST_DEFAULTING)
    snap = Snapshot.from_nodes([make_node("node-a", labels={"rack": "rack1", "planet": "mars"})])
    p = plugin(snap, [rs("rs1", FOO)], args)
    status, s = pre_score(p, pod(lbls={"foo": "tar", "baz": "sup"}, owner=owned("ReplicaSet", "rs1")), snap)
    assert status is None and s is not None
    sel = labels.from_label_selector(FOO)
    assert [(c.max_skew, c.topology_key, c.selector) for c in s.constraints] == [(1, HOSTNAME, sel), (2, "planet", sel)]
    assert s.topology_value_to_pod_counts[1] == {"mars": 0}
    assert s.topology_normalizing_weight == [math.log(1 + 2), math.log(1 + 2)]


def test_pre_score_state_pod_constraints_win_over_defaults() -> None:
    args = pts.PodTopologySpreadArgs((constraint(2, "galaxy", "ScheduleAnyway"),), pts.LIST_DEFAULTING)
    snap = Snapshot.from_nodes([make_node("node-a", labels={"planet": "mars", "galaxy": "andromeda"})])
    p = plugin(snap, [rs("rs1", FOO)], args)
    spec = {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": BAR},
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"baz": "sup"}}}]}
    status, s = pre_score(p, pod(lbls={"foo": "bar", "baz": "sup"}, owner=owned("ReplicaSet", "rs1"), spec=spec), snap)
    assert status is None and s is not None
    assert [(c.max_skew, c.topology_key, c.selector) for c in s.constraints] == [
        (2, "planet", labels.from_label_selector({"matchLabels": {"baz": "sup"}}))]
    assert s.topology_value_to_pod_counts == [{"mars": 0}]


# --- TestPodTopologySpreadScore: "system defaulting, nodes don't have zone, pods match service" ----

def score_all(p: pts.PodTopologySpread, pd: core_v1.Pod, snap: Snapshot) -> list[int] | None:
    state = CycleState()
    status = p.pre_score(state, pd, snap.node_info_list)
    if status is not None and status.code == Code.SKIP:
        return None
    scores = [NodeScore(ni.name, p.score(state, pd, ni)) for ni in snap.node_info_list]
    p.normalize_score(state, pd, scores)
    return [s.score for s in scores]


def spread_4_3_2_1(zones: dict[str, str] | None = None) -> Snapshot:
    nodes = [make_node(n, labels={ZONE: zones[n]} if zones and n in zones else None) for n in ("node-a", "node-b", "node-c", "node-d")]
    pods = [make_pod(f"p-{n[-1]}{i}", node=n, labels={"foo": ""})
            for n, k in (("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)) for i in range(k)]
    return Snapshot.from_nodes(nodes, pods)


def test_score_system_defaulting_nodes_without_zone_pods_match_service() -> None:
    """Matching pods 4/3/2/1: the same scores as one hostname constraint of maxSkew 3 (the
    zone constraint is skipped on nodes without a zone)."""
    snap = spread_4_3_2_1()
    p = plugin(snap, [service("svc", {"foo": ""})])
    assert score_all(p, pod(lbls={"foo": ""}), snap) == [44, 66, 77, 100]
    # No Service, no owner: no default constraints.
    assert score_all(plugin(snap), pod(lbls={"foo": ""}), snap) is None


def test_score_system_defaulting_with_zones() -> None:
    """zone1 = a, b (7 matching pods), zone2 = c, d (3): hostname weight log 6, zone weight log 4.
    raw a: 4*1.792+2 + 7*1.386+4 = 22.87 -> 23; b: 21; c: 3.58+2 + 3*1.386+4 = 13.74 -> 14; d: 12.
    Normalized 100*(23+12-s)/23: 52, 60, 91, 100."""
    snap = spread_4_3_2_1({"node-a": "zone1", "node-b": "zone1", "node-c": "zone2", "node-d": "zone2"})
    p = plugin(snap, [service("svc", {"foo": ""})])
    assert score_all(p, pod(lbls={"foo": ""}), snap) == [52, 60, 91, 100]


def test_default_spreading_aggregated_and_full_loop_agree() -> None:
    """The aggregated counts (every node eligible) and upstream's loop over all nodes (forced by
    a required node affinity every node matches) give the same scores, nodes without zone too.
    Zones zone1 (a, b: 7 pods), zone2 (c: 2), "" (d): zone weight log 5; d skips the zone term.
    raw a: 9.17 + 7*1.609+4 = 24.4 -> 24; b: 22.6 -> 23; c: 5.58 + 7.22 = 12.8 -> 13; d: 3.79 -> 4.
    Normalized 100*(24+4-s)/24: 16, 20, 62, 100."""
    snap = spread_4_3_2_1({"node-a": "zone1", "node-b": "zone1", "node-c": "zone2"})
    p = plugin(snap, [service("svc", {"foo": ""})])
    plain = score_all(p, pod(lbls={"foo": ""}), snap)
    affine = pod(lbls={"foo": ""}, spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": HOSTNAME, "operator": "Exists"}]}]}}}})
    assert score_all(p, affine, snap) == plain
    assert plain == [16, 20, 62, 100]


# --- DefaultSelector (helper/spread.go) ----------------------------------------------------------

def selector_of(pd: core_v1.Pod, *objs: Any) -> labels.Selector:
    p = plugin(Snapshot.from_nodes([]), list(objs))
    return default_selector(pd, p.services, p.replication_ctrls, p.replica_sets, p.stateful_sets)


def eq(**kv: str) -> labels.Selector:
    return tuple(labels.Requirement(k, "=", (v,)) for k, v in sorted(kv.items()))


@pytest.mark.parametrize("objs,owner,want", [
    ([service("s1", {"app": "web"}), service("s2", {"tier": "fe"}), service("other", {"app": "db"})], None,
     eq(app="web", tier="fe")),
    ([service("nil", None), service("other-ns", {"app": "web"}, ns="kube-system")], None, ()),
    ([rs("rs1", {"matchLabels": {"app": "web", "hash": "5d"}})], owned("ReplicaSet", "rs1"), eq(app="web", hash="5d")),
    ([service("s1", {"app": "web"}), rs("rs1", {"matchLabels": {"hash": "5d"}})], owned("ReplicaSet", "rs1"),
     eq(app="web", hash="5d")),
    ([rs("rs1", {"matchLabels": {"app": "web"}})], owned("ReplicaSet", "rs1", controller=False), ()),
    ([rs("rs1", {"matchLabels": {"app": "web"}})], owned("ReplicaSet", "rs1", api_version="extensions/v1beta1"), ()),
    ([types.from_dict({"apiVersion": "v1", "kind": "ReplicationController",
                       "metadata": {"name": "rc1", "namespace": "default"},
                       "spec": {"selector": {"app": "web"}}}, core_v1.ReplicationController)],
     owned("ReplicationController", "rc1", api_version="v1"), eq(app="web")),
    ([types.from_dict({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ss1", "namespace": "default"},
                       "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": {}, "serviceName": "db"}},
                      apps_v1.StatefulSet)],
     owned("StatefulSet", "ss1"), eq(app="db")),
])
def test_default_selector(objs: list[Any], owner: dict[str, Any] | None, want: labels.Selector) -> None:
    assert selector_of(pod(lbls={"app": "web", "tier": "fe", "hash": "5d"}, owner=owner), *objs) == want


def test_framework_gives_plugins_listers_and_their_informers() -> None:
    factory = SharedInformerFactory(Unstarted())  # type: ignore[arg-type]
    fwk = Framework([PluginSpec(pts.PodTopologySpread, 2)])
    fwk.set_informer_factory(factory)
    assert fwk.informer_factory is factory
    assert len(fwk.plugin_informers) == 4
    assert fwk.plugin_informers[2] is factory.apps_v1().replicasets().informer()


@pytest.mark.parametrize("zoned", [0.0, 0.8, 1.0])
@pytest.mark.parametrize("seed", range(8))
def test_batch_scoring_equals_score_per_node(seed: int, zoned: float) -> None:
    """score_nodes + normalize_scores (what the runtime calls) give Score + NormalizeScore's
    numbers, whatever the pods, zones (some nodes without, or all with: the lookups at C
    level), ignored nodes and constraints."""
    import random
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}", labels={ZONE: f"z{rng.randrange(3)}"} if rng.random() < zoned else None)
             for i in range(12)]
    pods = [make_pod(f"e{i}", node=f"n{rng.randrange(12)}", labels={"foo": ""} if rng.random() < 0.7 else {"x": "1"})
            for i in range(rng.randrange(40 if seed % 2 else 200))]
    snap = Snapshot.from_nodes(nodes, pods)
    p = plugin(snap, [service("svc", {"foo": ""})])
    own = {"topologySpreadConstraints": [
        {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": FOO},
        {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": FOO}]}
    for pd in (pod(lbls={"foo": ""}), pod(lbls={"foo": ""}, spec=own)):
        state = CycleState()
        nis = snap.node_info_list[rng.randrange(3):]
        assert p.pre_score(state, pd, nis) is None
        one = [NodeScore(ni.name, p.score(state, pd, ni)) for ni in nis]
        batch = p.score_nodes(state, pd, nis)
        assert batch == [x.score for x in one]
        p.normalize_score(state, pd, one)
        assert p.normalize_scores(state, pd, [ni.name for ni in nis], batch) == [x.score for x in one]


def test_batch_scoring_of_a_node_beyond_the_looked_up_counts() -> None:
    nodes = [make_node("a", labels={ZONE: "z1"}), make_node("b", labels={ZONE: "z1"}), make_node("c")]
    pods = [make_pod(f"e{i}", node="a", labels={"foo": ""}) for i in range(pts._ROW_COUNTS + 3)]
    snap = Snapshot.from_nodes(nodes, pods + [make_pod("b1", node="b", labels={"foo": ""})])
    p = plugin(snap, [service("svc", {"foo": ""})])
    state, pd = CycleState(), pod(lbls={"foo": ""})
    assert p.pre_score(state, pd, snap.node_info_list) is None
    assert p.score_nodes(state, pd, snap.node_info_list) == [p.score(state, pd, ni) for ni in snap.node_info_list]


@pytest.mark.parametrize("seed", range(6))
def test_scores_across_cycles_follow_the_changed_nodes(seed: int) -> None:
    """Cycles on one snapshot the cache updates in between (pods added, relabelled, marked
    terminating, status-written, removed; nodes relabelled, their zone dropped, added): score_nodes, whose
    sums, per-node counts and table codes carry over from cycle to cycle, gives what a plugin
    scoring a fresh copy of the same cache state node by node gives."""
    import random

    from kubeplane.scheduler.internal.cache import Cache
    rng = random.Random(seed)
    cache, snap = Cache(), Snapshot()
    zone = lambda: {ZONE: f"z{rng.randrange(3)}"} if rng.random() < 0.9 else None  # noqa: E731
    nodes = {f"n{i}": make_node(f"n{i}", labels=zone()) for i in range(15)}
    for n in nodes.values():
        cache.add_node(n)
    pods: dict[str, core_v1.Pod] = {}

    def new_pod(i: int) -> core_v1.Pod:
        lbls = {"foo": ""} if rng.random() < 0.7 else {"x": "1"}
        return make_pod(f"e{i}", node=rng.choice(list(nodes)), labels=lbls)

    for i in range(40):
        pods[f"e{i}"] = new_pod(i)
        cache.add_pod(pods[f"e{i}"])
    p = plugin(snap, [service("svc", {"foo": ""})])
    pd = pod(lbls={"foo": ""})
    for step in range(30):
        for _ in range(rng.randrange(4)):
            what = rng.random()
            name = rng.choice(sorted(pods))
            old = pods[name]
            if what < 0.3:
                i = len(pods) + step * 100
                pods[f"e{i}"] = new_pod(i)
                cache.add_pod(pods[f"e{i}"])
            elif what < 0.5:
                d = types.to_dict(old)
                d["metadata"]["labels"] = {"foo": ""} if "x" in (old.metadata.labels or {}) else {"x": "1"}
                d["metadata"]["resourceVersion"] = str(step)
                pods[name] = types.from_dict(d, core_v1.Pod)
                cache.update_pod(old, pods[name])
            elif what < 0.65:
                d = types.to_dict(old)
                d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                pods[name] = types.from_dict(d, core_v1.Pod)
                cache.update_pod(old, pods[name])
            elif what < 0.7:
                d = types.to_dict(old)           # a status write: the counts stay
                d["status"] = {"phase": "Running", "message": str(step)}
                pods[name] = types.from_dict(d, core_v1.Pod)
                cache.update_pod(old, pods[name])
            elif what < 0.8:
                cache.remove_pod(pods.pop(name))
            elif what < 0.95:
                n = rng.choice(sorted(nodes))
                new = make_node(n, labels=zone())
                cache.update_node(nodes[n], new)
                nodes[n] = new
            else:
                n = f"n{len(nodes)}"
                nodes[n] = make_node(n, labels=zone())
                cache.add_node(nodes[n])
        cache.update_snapshot(snap)
        state = CycleState()
        nis = snap.node_info_list[rng.randrange(2):]
        assert p.pre_score(state, pd, nis) is None
        batch = p.normalize_scores(state, pd, [ni.name for ni in nis], p.score_nodes(state, pd, nis))
        fresh = Snapshot()
        cache.update_snapshot(fresh)
        ref_nis = [fresh.get(ni.name) for ni in nis]
        ref_plugin, ref_state = plugin(fresh, [service("svc", {"foo": ""})]), CycleState()
        assert ref_plugin.pre_score(ref_state, pd, ref_nis) is None
        one = [NodeScore(ni.name, ref_plugin.score(ref_state, pd, ni)) for ni in ref_nis]
        ref_plugin.normalize_score(ref_state, pd, one)
        assert batch == [x.score for x in one], step
