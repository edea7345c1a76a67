"""TaintToleration, NodeAffinity, NodePorts, NodeName and NodeUnschedulable, after upstream's
taint_toleration_test.go, node_affinity_test.go, node_ports_test.go, node_name_test.go and
node_unschedulable_test.go."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.framework.interface import Code, CycleState, NodeScore
from kubeplane.scheduler.framework.plugins.nodeaffinity import ERR_REASON_POD, NodeAffinity
from kubeplane.scheduler.framework.plugins.nodename import NodeName
from kubeplane.scheduler.framework.plugins.nodeports import ERR_REASON as PORTS_REASON, NodePorts
from kubeplane.scheduler.framework.plugins.nodeunschedulable import NodeUnschedulable
from kubeplane.scheduler.framework.plugins.tainttoleration import TaintToleration

from ...helpers import make_node, make_pod, node_info, run_filter


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, op: str, value: str, effect: str) -> dict[str, str]:
    d = {"key": key, "operator": op, "effect": effect}
    if value:
        d["value"] = value
    return {k: v for k, v in d.items() if v}


@pytest.mark.parametrize("tolerations,taints,want", [
    pytest.param([], [taint("dedicated", "user1", "NoSchedule")], "node(s) had untolerated taint {dedicated: user1}",
                 id="no tolerations, nonempty taints"),
    pytest.param([tol("dedicated", "Equal", "user1", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")],
                 None, id="dedicated node of user1"),
    pytest.param([tol("dedicated", "Equal", "user2", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")],
                 "node(s) had untolerated taint {dedicated: user1}", id="dedicated node of someone else"),
    pytest.param([tol("foo", "Exists", "", "NoSchedule")], [taint("foo", "bar", "NoSchedule")], None,
                 id="Exists tolerates"),
    pytest.param([tol("dedicated", "Equal", "user2", "NoSchedule"), tol("foo", "Exists", "", "NoSchedule")],
                 [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], None,
                 id="multiple tolerations, all taints tolerated"),
    pytest.param([tol("foo", "Equal", "bar", "PreferNoSchedule")], [taint("foo", "bar", "NoSchedule")],
                 "node(s) had untolerated taint {foo: bar}", id="non-empty effect doesn't match"),
    pytest.param([tol("foo", "Equal", "bar", "")], [taint("foo", "bar", "NoSchedule")], None,
                 id="empty toleration effect matches NoSchedule"),
    pytest.param([tol("dedicated", "Equal", "user2", "NoSchedule")], [taint("dedicated", "user1", "PreferNoSchedule")],
                 None, id="PreferNoSchedule taint never filters"),
    pytest.param([], [taint("dedicated", "user1", "PreferNoSchedule")], None, id="no tolerations, PreferNoSchedule"),
    pytest.param([], [taint("node-role.kubernetes.io/control-plane", "", "NoExecute")],
                 "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }", id="NoExecute, empty value"),
])
def test_taint_toleration_filter(tolerations: list[Any], taints: list[Any], want: str | None) -> None:
    pod = make_pod("p", spec={"tolerations": tolerations} if tolerations else None)
    status = run_filter(TaintToleration(), pod, node_info(make_node("n", taints=taints)))
    if want is None:
        assert status is None
    else:
        assert status.reasons == [want] and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def score_all(plugin: Any, pod: Any, nodes: list[Any]) -> list[int] | None:
    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None and status.code == Code.SKIP:
        return None
    scores = [NodeScore(ni.name, plugin.score(state, pod, ni)) for ni in nodes]
    plugin.normalize_score(state, pod, scores)
    return [s.score for s in scores]


def test_taint_toleration_score_more_intolerable_taints_lower_score() -> None:
    """Upstream "the more intolerable taints a node has, the lower score it gets"."""
    pod = make_pod("p", spec={"tolerations": [tol("foo", "Equal", "bar", "PreferNoSchedule")]})
    nodes = [node_info(make_node("a")),
             node_info(make_node("b", taints=[taint("cpu-type", "arm64", "PreferNoSchedule")])),
             node_info(make_node("c", taints=[taint("cpu-type", "arm64", "PreferNoSchedule"),
                                              taint("disk-type", "ssd", "PreferNoSchedule")]))]
    assert score_all(TaintToleration(), pod, nodes) == [100, 50, 0]


def test_taint_toleration_score_tolerated_taints_count_nothing() -> None:
    pod = make_pod("p", spec={"tolerations": [tol("foo", "Equal", "bar", "PreferNoSchedule")]})
    nodes = [node_info(make_node("a", taints=[taint("foo", "bar", "PreferNoSchedule")])),
             node_info(make_node("b", taints=[taint("foo", "blah", "PreferNoSchedule")]))]
    assert score_all(TaintToleration(), pod, nodes) == [100, 0]


def req(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


@pytest.mark.parametrize("spec,labels,fits", [
    pytest.param({}, {}, True, id="no selector"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {}, False, id="missing labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, True, id="same labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, True, id="node labels superset"),
    pytest.param({"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, False, id="node labels subset"),
    pytest.param(req([expr("foo", "In", "bar", "value2")]), {"foo": "bar"}, True, id="In matches"),
    pytest.param(req([expr("kernel-version", "Gt", "0204")]), {"kernel-version": "0206"}, True, id="Gt matches"),
    pytest.param(req([expr("mem-type", "NotIn", "DDR", "DDR2")]), {"mem-type": "DDR3"}, True, id="NotIn matches"),
    pytest.param(req([expr("GPU", "Exists")]), {"GPU": "NVIDIA-GRID-K1"}, True, id="Exists matches"),
    pytest.param(req([expr("foo", "In", "value1", "value2")]), {"foo": "bar"}, False, id="In doesn't match"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}},
                 {"foo": "bar"}, False, id="nil NodeSelectorTerms match nothing"),
    pytest.param(req([]), {"foo": "bar"}, False, id="empty MatchExpressions match nothing"),
    pytest.param(req([expr("foo", "In", "bar")], [expr("diffkey", "In", "wrong")]), {"foo": "bar"}, True,
                 id="terms are ORed"),
    pytest.param(req([expr("foo", "In", "bar"), expr("diffkey", "In", "wrong")]), {"foo": "bar"}, False,
                 id="expressions are ANDed"),
    pytest.param({**req([expr("foo", "Exists")]), "nodeSelector": {"foo": "other"}}, {"foo": "bar"}, False,
                 id="nodeSelector and affinity must both hold"),
])
def test_node_affinity_filter(spec: dict[str, Any], labels: dict[str, str], fits: bool) -> None:
    status = run_filter(NodeAffinity(), make_pod("p", spec=spec), node_info(make_node("n", labels=labels)))
    assert (status is None) == fits
    if not fits:
        assert status.reasons == [ERR_REASON_POD] and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_node_affinity_match_fields_narrows_prefilter() -> None:
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}}}}
    pod = make_pod("p", spec=spec)
    result, status = NodeAffinity().pre_filter(CycleState(), pod, [])
    assert status is None and result.node_names == {"node1"}
    assert run_filter(NodeAffinity(), pod, node_info(make_node("node1"))) is None
    assert run_filter(NodeAffinity(), pod, node_info(make_node("node2"))) is not None


def test_node_affinity_score() -> None:
    """Upstream "all nodes matches the preferred scheduling requirements of pod but with
    different priorities": raw 2, 11, 4 -> normalized 18, 100, 36."""
    pref = [{"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}},
            {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", "value")]}},
            {"weight": 5, "preference": {"matchExpressions": [expr("az", "In", "az1")]}}]
    pod = make_pod("p", spec={"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}}})
    nodes = [node_info(make_node("machine1", labels={"foo": "bar"})),
             node_info(make_node("machine5", labels={"foo": "bar", "key": "value", "az": "az1"})),
             node_info(make_node("machine2", labels={"key": "value"}))]
    assert score_all(NodeAffinity(), pod, nodes) == [18, 100, 36]
    assert score_all(NodeAffinity(), make_pod("q"), nodes) is None          # nothing preferred: Skip


def port_pod(name: str, port: int, *, ip: str = "", protocol: str = "TCP", node: str = "") -> Any:
    p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
    if ip:
        p["hostIP"] = ip
    return make_pod(name, node=node, spec={"containers": [{"name": "c", "image": "x", "ports": [p]}]})


@pytest.mark.parametrize("want,existing,fits", [
    pytest.param(port_pod("p", 8080), None, True, id="nothing running"),
    pytest.param(port_pod("p", 8080), port_pod("e", 9090), True, id="other port"),
    pytest.param(port_pod("p", 8080), port_pod("e", 8080), False, id="same port"),
    pytest.param(port_pod("p", 8080, ip="127.0.0.1"), port_pod("e", 8080, ip="127.0.0.2"), True, id="other IP"),
    pytest.param(port_pod("p", 8080, ip="127.0.0.1", protocol="UDP"),
                 port_pod("e", 8080, ip="127.0.0.1", protocol="TCP"), True, id="other protocol"),
    pytest.param(port_pod("p", 8080, ip="0.0.0.0"), port_pod("e", 8080, ip="127.0.0.1"), False,
                 id="0.0.0.0 conflicts with any IP"),
    pytest.param(port_pod("p", 8080, ip="127.0.0.1"), port_pod("e", 8080), False, id="any IP conflicts with 0.0.0.0"),
])
def test_node_ports(want: Any, existing: Any, fits: bool) -> None:
    ni = node_info(make_node("n"), *([existing] if existing else []))
    status = run_filter(NodePorts(), want, ni)
    assert (status is None) == fits
    if not fits:
        assert status.reasons == [PORTS_REASON] and status.code == Code.UNSCHEDULABLE


def test_node_name() -> None:
    assert run_filter(NodeName(), make_pod("p"), node_info(make_node("foo"))) is None
    assert run_filter(NodeName(), make_pod("p", node="foo"), node_info(make_node("foo"))) is None
    status = run_filter(NodeName(), make_pod("p", node="bar"), node_info(make_node("foo")))
    assert status.reasons == ["node(s) didn't match the requested node name"]


def test_node_unschedulable() -> None:
    cordoned = node_info(make_node("n", unschedulable=True))
    status = run_filter(NodeUnschedulable(), make_pod("p"), cordoned)
    assert status.reasons == ["node(s) were unschedulable"] and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    tolerant = make_pod("p", spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                                    "effect": "NoSchedule"}]})
    assert run_filter(NodeUnschedulable(), tolerant, cordoned) is None
    assert run_filter(NodeUnschedulable(), make_pod("p"), node_info(make_node("n"))) is None


class _SnapshotHandle:
    def __init__(self, snapshot: Any) -> None:
        self.snapshot = snapshot

    def snapshot_shared_lister(self) -> Any:
        return self.snapshot


def test_node_filters_skip_while_no_node_is_cordoned_or_tainted() -> None:
    """NodeUnschedulable and TaintToleration skip Filter while no node could fail it, kept
    up to date across cycles as the cache copies changed nodes into the snapshot."""
    from kubeplane.scheduler.internal.cache import Cache, Snapshot
    cache, snap = Cache(), Snapshot()
    nodes = [make_node("a"), make_node("b")]
    for n in nodes:
        cache.add_node(n)
    unsched, taints = NodeUnschedulable(_SnapshotHandle(snap)), TaintToleration(_SnapshotHandle(snap))

    def skipped() -> tuple[bool, bool]:
        cache.update_snapshot(snap)
        return tuple(p.pre_filter(CycleState(), make_pod("p"), snap.node_info_list)[1] is not None
                     for p in (unsched, taints))      # type: ignore[return-value]

    assert skipped() == (True, True)
    cache.update_node(nodes[0], cordoned := make_node("a", unschedulable=True))
    assert skipped() == (False, True)
    cache.update_node(nodes[1], tainted := make_node("b", taints=[{"key": "k", "effect": "NoExecute"}]))
    assert skipped() == (False, False)
    cache.update_node(cordoned, make_node("a"))
    cache.update_node(tainted, make_node("b", taints=[{"key": "k", "effect": "PreferNoSchedule"}]))
    assert skipped() == (True, True)
