"""The scheduler cache's assumed-pod state machine and the incremental snapshot, after
upstream's internal/cache/cache_test.go."""
from __future__ import annotations

import copy
import random
from typing import Any, Callable

import pytest

from kubeplane.api import types
from kubeplane.api.types.core_v1 import Pod
from kubeplane.scheduler.framework.types import NodeInfo
from kubeplane.scheduler.internal.cache import Cache, Snapshot

from ...helpers import make_node, make_pod, pod_dict


def cache_with_nodes(*names: str) -> Cache:
    c = Cache()
    for n in names:
        c.add_node(make_node(n, cpu="2"))
    return c


def test_assume_counts_immediately_and_add_confirms() -> None:
    c = cache_with_nodes("n1")
    pod = make_pod("p", node="n1", requests={"cpu": "500m"})
    c.assume_pod(pod)
    assert c.is_assumed_pod(pod) and c.nodes["n1"].requested.milli_cpu == 500
    c.finish_binding(pod, now=0)
    c.add_pod(pod)                                        # the informer confirms
    assert not c.is_assumed_pod(pod) and c.nodes["n1"].requested.milli_cpu == 500
    c.check_invariants()


def test_add_on_another_node_than_assumed_moves_the_pod() -> None:
    c = cache_with_nodes("n1", "n2")
    c.assume_pod(make_pod("p", node="n1", requests={"cpu": "1"}))
    c.add_pod(make_pod("p", node="n2", requests={"cpu": "1"}))
    assert (c.nodes["n1"].requested.milli_cpu, c.nodes["n2"].requested.milli_cpu) == (0, 1000)
    c.check_invariants()


def test_forget_releases_and_errors() -> None:
    c = cache_with_nodes("n1")
    pod = make_pod("p", node="n1", requests={"cpu": "1"})
    c.assume_pod(pod)
    with pytest.raises(ValueError):
        c.assume_pod(pod)                                  # twice
    c.forget_pod(pod)
    assert c.nodes["n1"].requested.milli_cpu == 0 and not c.pod_states
    with pytest.raises(ValueError):
        c.forget_pod(pod)
    c.add_pod(pod)
    with pytest.raises(ValueError):
        c.forget_pod(pod)                                  # added pods are not forgettable
    c.check_invariants()


def test_expiry_only_with_ttl() -> None:
    c = Cache(ttl=30)
    c.add_node(make_node("n1"))
    pod = make_pod("p", node="n1")
    c.assume_pod(pod)
    assert c.cleanup_assumed_pods(now=100) == []           # binding not finished: never expires
    c.finish_binding(pod, now=100)
    assert c.cleanup_assumed_pods(now=130) == []
    assert c.cleanup_assumed_pods(now=131) == [pod]
    never = Cache()                                        # upstream default ttl 0: no expiry
    never.add_node(make_node("n1"))
    never.assume_pod(pod)
    never.finish_binding(pod, now=0)
    assert never.cleanup_assumed_pods(now=10**9) == []


def test_update_and_remove_pod_and_node() -> None:
    c = cache_with_nodes("n1")
    old = make_pod("p", node="n1", requests={"cpu": "1"}, host_ports=[80])
    c.add_pod(old)
    assert c.nodes["n1"].used_ports.check_conflict("0.0.0.0", "TCP", 80)
    c.update_pod(old, make_pod("p", node="n1", requests={"cpu": "1"}))
    assert not c.nodes["n1"].used_ports
    c.remove_node(make_node("n1"))
    assert "n1" in c.nodes and c.node_count() == 0          # lingers while it holds pods
    c.remove_pod(old)
    assert "n1" not in c.nodes
    c.check_invariants()


def test_snapshot_is_incremental_and_isolated() -> None:
    c = cache_with_nodes("n1", "n2")
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["n1", "n2"]
    n2_before = snap.get("n2")
    c.assume_pod(make_pod("p", node="n1", requests={"cpu": "1"}))
    assert snap.get("n1").requested.milli_cpu == 0        # not visible until the next update
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 1000
    assert snap.get("n2") is n2_before                      # unchanged node kept as is
    assert snap.node_info_list[0] is snap.get("n1")         # list and map share the objects
    c.add_node(make_node("n3"))
    c.remove_node(make_node("n2"))
    c.update_snapshot(snap)
    assert sorted(snap.node_info_map) == ["n1", "n3"] and len(snap.node_info_list) == 2


def test_snapshot_affinity_lists() -> None:
    c = cache_with_nodes("n1", "n2")
    snap = Snapshot()
    c.update_snapshot(snap)
    term = {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
    anti = make_pod("anti", node="n2",
                    spec={"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}})
    c.add_pod(anti)
    c.update_snapshot(snap)
    assert [n.name for n in snap.have_pods_with_affinity_node_info_list] == ["n2"]
    assert [n.name for n in snap.have_pods_with_required_anti_affinity_node_info_list] == ["n2"]
    c.remove_pod(anti)
    c.update_snapshot(snap)
    assert snap.have_pods_with_required_anti_affinity_node_info_list == []



def _node_info_state(ni: Any, ident: Callable[[Any], Any]) -> tuple[Any, ...]:
    """What a plugin can read off a snapshot NodeInfo; PodInfos and pods through ident."""
    def res(r: Any) -> tuple[Any, ...]:
        return tuple(dict(r.scalar_resources) if s == "scalar_resources" else getattr(r, s) for s in r.__slots__)
    return (ni.node.metadata.name if ni.node else None, ni.name, [ident(p) for p in ni.pods],
            [ident(p.pod) for p in ni.pods], {k: ident(v) for k, v in ni.pod_index.items()},
            [ident(p) for p in ni.pods_with_affinity], [ident(p) for p in ni.pods_with_required_anti_affinity],
            dict(ni.used_ports), res(ni.requested), res(ni.non_zero_requested), res(ni.allocatable))


def _snapshot_state(snap: Snapshot) -> tuple[Any, ...]:
    """Across runs: no ids, no global generation numbers."""
    def ident(x: Any) -> Any:
        return (x.key, x.pod.metadata.resource_version) if hasattr(x, "key") else x.metadata.resource_version
    return ({n: _node_info_state(ni, ident) for n, ni in snap.node_info_map.items()},
            [n.name for n in snap.node_info_list],
            sorted(n.name for n in snap.have_pods_with_affinity_node_info_list),
            sorted(n.name for n in snap.have_pods_with_required_anti_affinity_node_info_list),
            snap.seq, snap.layout_seq, dict(snap.node_changes))


@pytest.mark.parametrize("seed", range(30))
def test_snapshot_refresh_equals_full_copies(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed node whose only changes were status writes (replace_pod) is refreshed by taking
    its generations (refresh_snapshot). After random assumes, adds, status/label/deletion
    updates, spec updates, removals and node updates, every snapshot NodeInfo equals a full
    copy of the cache's (snapshot(), the same PodInfo and pod objects, generations), and the
    snapshots equal those of copying every changed node in full (snapshot_into: upstream's
    UpdateSnapshot), step by step."""
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}]}}}

    def check(c: Cache, snap: Snapshot) -> None:
        for name, ni in c.nodes.items():
            if ni.node is None:
                continue
            got, want = snap.node_info_map[name], ni.snapshot()
            assert _node_info_state(got, id) == _node_info_state(want, id), name
            assert (got.generation, got.pods_generation, got.node) == (want.generation, want.pods_generation, want.node)

    def run(full: bool) -> list[tuple[Any, ...]]:
        r = random.Random(seed)
        c = Cache()
        nodes = [f"n{i}" for i in range(6)]
        for n in nodes:
            c.add_node(make_node(n, cpu="8"))
        snap = Snapshot()
        c.update_snapshot(snap)
        pods: dict[str, tuple[dict[str, Any], Pod]] = {}
        states = []
        rv = 0
        with monkeypatch.context() as m:
            if full:
                m.setattr(NodeInfo, "refresh_snapshot", NodeInfo.snapshot_into)
            for _ in range(300):
                op = r.random()
                name = f"p{r.randrange(40)}"
                rv += 1
                if name not in pods and op < 0.5:
                    d = pod_dict(name, node=r.choice(nodes), requests={"cpu": f"{r.randint(1, 9)}00m"},
                                 labels={"v": "1"}, spec=anti if r.random() < 0.2 else None,
                                 host_ports=[80] if r.random() < 0.1 else None)
                    d["metadata"]["resourceVersion"] = str(rv)
                    pod = types.from_dict(d, Pod)
                    if r.random() < 0.5:
                        c.assume_pod(pod)
                    c.add_pod(pod)
                    pods[name] = (d, pod)
                elif name in pods and op < 0.85:
                    d, old = pods[name]
                    d = copy.deepcopy(d)
                    d["metadata"]["resourceVersion"] = str(rv)
                    kind = r.random()
                    if kind < 0.6:                          # a status write
                        d["status"] = {"phase": r.choice(["Pending", "Running"]), "message": str(rv)}
                    elif kind < 0.75:
                        d["metadata"]["labels"] = {"v": str(r.randrange(3))}
                    elif kind < 0.85:
                        d["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
                    else:
                        d["spec"]["containers"][0]["resources"] = {"requests": {"cpu": f"{r.randint(1, 9)}00m"}}
                    new = types.from_dict(d, Pod)
                    c.update_pod(old, new)
                    pods[name] = (d, new)
                elif name in pods:
                    c.remove_pod(pods.pop(name)[1])
                elif op < 0.9:
                    n = r.choice(nodes)
                    c.update_node(c.nodes[n].node, make_node(n, cpu=r.choice(["8", "16"])))
                if r.random() < 0.3:
                    c.update_snapshot(snap)
                    check(c, snap)
                    states.append(_snapshot_state(snap))
        c.check_invariants()
        c.update_snapshot(snap)
        check(c, snap)
        states.append(_snapshot_state(snap))
        return states

    fast, slow = run(False), run(True)
    assert len(fast) > 50 and fast == slow
