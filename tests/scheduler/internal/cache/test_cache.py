"""The scheduler cache's assumed-pod state machine and the incremental snapshot, after
upstream's internal/cache/cache_test.go."""
from __future__ import annotations

import pytest

from kubeplane.scheduler.internal.cache import Cache, Snapshot

from ...helpers import make_node, make_pod


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
