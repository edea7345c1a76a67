"""The scheduler's fast paths give what the plain code gives: the Skips that are ours (NodeName
PreFilter, TaintToleration PreScore), the inlined resource scorers and Fit filter, the score
cache, the O(1) NodeInfo removal, the incremental snapshot (and its change records going with
the NodeInfos) and select_host's written-out draws."""
from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from kubeplane.api.types import core_v1
from kubeplane.scheduler.framework.interface import Code, CycleState, NodePluginScores, NodeScore
from kubeplane.scheduler.framework.plugins.nodename import NodeName
from kubeplane.scheduler.framework.plugins.noderesources import BalancedAllocation, Fit
from kubeplane.scheduler.framework.plugins.noderesources.fit import fits_request
from kubeplane.scheduler.framework.plugins.noderesources.resource_allocation import ResourceSpec
from kubeplane.scheduler.framework.plugins.tainttoleration import TaintToleration
from kubeplane.scheduler.framework.runtime import default_framework
from kubeplane.scheduler.framework.types import NodeInfo, Resource, pod_requests
from kubeplane.scheduler.internal.cache import Cache, Snapshot
from kubeplane.scheduler.schedule_one import assume_copy, schedule_pod, select_host, select_index

from .helpers import make_node, make_pod, node_info, run_filter


class Sched:
    def __init__(self, *nodes: Any, seed: int = 1) -> None:
        self.cache, self.snapshot = Cache(), Snapshot()
        self.framework = default_framework(snapshot=self.snapshot)
        self.next_start_node_index, self.percentage_of_nodes_to_score = 0, 0
        self.rng = random.Random(seed)
        for n in nodes:
            self.cache.add_node(n)

    def place(self, pod: Any) -> str:
        host = schedule_pod(self, self.framework, CycleState(), pod).suggested_host  # type: ignore[arg-type]
        self.cache.assume_pod(assume_copy(pod, host))
        return host


# --- NodeName PreFilter (ours) --------------------------------------------------------------

def test_node_name_pre_filter_skips_only_pods_without_node_name() -> None:
    _, status = NodeName().pre_filter(CycleState(), make_pod("p"), [])
    assert status is not None and status.code == Code.SKIP
    assert NodeName().pre_filter(CycleState(), make_pod("p", spec={"nodeName": "b"}), []) == (None, None)
    ni = node_info(make_node("a"))
    assert run_filter(NodeName(), make_pod("p", spec={"nodeName": "b"}), ni).reasons == \
        ["node(s) didn't match the requested node name"]


def test_pod_naming_a_node_lands_there_and_others_spread() -> None:
    s = Sched(*[make_node(f"n{i}") for i in range(4)])
    assert s.place(make_pod("named", spec={"nodeName": "n2"})) == "n2"
    assert s.place(make_pod("free")) in {"n0", "n1", "n3"}     # n2 now holds a pod: scored lower


# --- TaintToleration PreScore Skip (ours) -----------------------------------------------------

def taint(key: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": "v", "effect": effect}


@pytest.mark.parametrize("taints,tolerations,skip", [
    pytest.param([None, None], [], True, id="no taints"),
    pytest.param([[taint("a", "NoSchedule")], None], [], True, id="only NoSchedule taints"),
    pytest.param([[taint("a", "PreferNoSchedule")], None], [{"key": "a", "operator": "Exists"}], True,
                 id="PreferNoSchedule tolerated"),
    pytest.param([[taint("a", "PreferNoSchedule")], None], [], False, id="PreferNoSchedule not tolerated"),
])
def test_taint_toleration_pre_score_skips_when_every_node_counts_zero(taints: list[Any], tolerations: list[Any],
                                                                      skip: bool) -> None:
    nodes = [node_info(make_node(f"n{i}", taints=t)) for i, t in enumerate(taints)]
    pod = make_pod("p", spec={"tolerations": tolerations})
    pl, state = TaintToleration(), CycleState()
    status = pl.pre_score(state, pod, nodes)
    assert (status is not None and status.code == Code.SKIP) == skip
    if skip:     # what scoring would have given: 0 everywhere, normalized to 100 everywhere
        from kubeplane.scheduler.framework.plugins.tainttoleration import (
            count_intolerable_taints_prefer_no_schedule, get_all_toleration_prefer_no_schedule)
        tols = get_all_toleration_prefer_no_schedule(pod.spec.tolerations or [])
        scores = [NodeScore(ni.name, count_intolerable_taints_prefer_no_schedule(ni.node, tols)) for ni in nodes]
        pl.normalize_score(state, pod, scores)
        assert [x.score for x in scores] == [100] * len(nodes)


def test_taint_skip_changes_no_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same seed, same nodes: with the Skip every total is 300 lower, and the hosts chosen for
    a run of pods are those chosen with TaintToleration scoring (forced on)."""
    def hosts() -> list[str]:
        s = Sched(*[make_node(f"n{i}", cpu=str(2 + i % 3)) for i in range(6)], seed=5)
        return [s.place(make_pod(f"p{k}", requests={"cpu": "300m", "memory": "64Mi"})) for k in range(20)]

    skipped = hosts()

    def always_score(self: Any, state: CycleState, pod: Any, nodes: Any) -> None:
        state.write("PreScoreTaintToleration", [])

    monkeypatch.setattr(TaintToleration, "pre_score", always_score)
    assert hosts() == skipped and len(set(skipped)) > 1


# --- the inlined resource scorers and Fit filter ------------------------------------------------

def _node(cpu: int, mem: int, used_cpu: int, used_mem: int, pods: int = 110) -> NodeInfo:
    ni = node_info(make_node("n", cpu=f"{cpu}m", memory=str(mem), pods=pods))
    if used_cpu or used_mem:
        ni.add_pod(make_pod("u", node="n", requests={"cpu": f"{used_cpu}m", "memory": str(used_mem)}))
    return ni


CASES = [(4000, 8000, 1000, 2000, 500, 100), (4000, 8000, 3900, 100, 500, 100), (0, 8000, 0, 100, 200, 10),
         (4000, 0, 100, 0, 200, 10), (0, 0, 0, 0, 1, 1), (1000, 1000, 0, 0, 1000, 1000),
         (1000, 1000, 999, 1, 1, 1000), (7, 13, 3, 5, 2, 3)]


@pytest.mark.parametrize("cpu,mem,used_cpu,used_mem,pod_cpu,pod_mem", CASES)
@pytest.mark.parametrize("weights", [(1, 1), (2, 1), (1, 3)])
def test_inlined_scores_equal_the_generic_scorers(cpu: int, mem: int, used_cpu: int, used_mem: int, pod_cpu: int,
                                                  pod_mem: int, weights: tuple[int, int]) -> None:
    ni = _node(cpu, mem, used_cpu, used_mem)
    resources = (ResourceSpec("cpu", weights[0]), ResourceSpec("memory", weights[1]))
    fit, bal = Fit(resources=resources), BalancedAllocation(resources=resources)
    for pl in (fit, bal):
        reqs = [pod_cpu, pod_mem]
        assert pl.score_node(ni, reqs) == pl.scorer.score(ni, reqs)


@pytest.mark.parametrize("cpu,mem,used_cpu,used_mem,pod_cpu,pod_mem", CASES)
@pytest.mark.parametrize("pods", [1, 2, 110])
def test_fit_filter_fast_path_equals_fits_request(cpu: int, mem: int, used_cpu: int, used_mem: int, pod_cpu: int,
                                                  pod_mem: int, pods: int) -> None:
    ni = _node(cpu, mem, used_cpu, used_mem, pods=pods)
    pod = make_pod("p", requests={"cpu": f"{pod_cpu}m", "memory": str(pod_mem)})
    status = run_filter(Fit(), pod, ni)
    want = [i.reason for i in fits_request(pod_requests(pod), ni)]
    assert (status.reasons if status is not None else []) == want


def test_score_cache_follows_node_changes_and_request_lists() -> None:
    ni = _node(4000, 8000, 0, 0)
    fit = Fit()

    def score(pod: Any) -> int:
        state = CycleState()
        fit.pre_score(state, pod, [ni])
        return fit.score(state, pod, ni)

    small, big = (make_pod(n, requests={"cpu": c, "memory": "0"}) for n, c in (("s", "1"), ("b", "2")))
    assert (score(small), score(big)) == ((75 + 100) // 2, (50 + 100) // 2)
    ni.add_pod(make_pod("u", node="n", requests={"cpu": "1", "memory": "0"}))     # a new generation
    assert (score(small), score(big)) == ((50 + 100) // 2, (25 + 100) // 2)


def test_score_cache_outlives_a_round_of_the_rotating_start() -> None:
    """Successive cycles score successive slices of the cluster (next_start_node_index): the
    cache holds every node's score until the rotation comes back to it."""
    s = Sched(*[make_node(f"n{i}", cpu="32", memory="128Gi") for i in range(5000)])
    pods = [make_pod(f"p{i}", requests={"cpu": "100m", "memory": "128Mi"}) for i in range(14)]
    computed = []
    fit = next(p for p in s.framework.score_plugins if isinstance(p, Fit))
    real = fit.score_node

    def counting(ni: NodeInfo, reqs: list[int]) -> int:
        computed.append(ni.name)
        return real(ni, reqs)

    fit.score_node = counting                                  # type: ignore[method-assign]
    for pod in pods:
        s.place(pod)
    # 5,000 nodes: 500 scored per cycle (10 %), 7,000 in all; after the first round only the
    # nodes pods went to are scored afresh (a cache sized by 500 was cleared at 3,024).
    assert len(computed) < 5000 + 14


# --- pod requests, NodeInfo removal -------------------------------------------------------------

def test_pod_requests_defaults_only_missing_requests_and_drops_pods() -> None:
    pod = make_pod("p", requests=[{"cpu": "0", "pods": "3", "example.com/gpu": "0"}, {}],
                   spec={"overhead": {"cpu": "10m", "pods": "1"}})
    assert pod_requests(pod) == Resource(10, 0, 0, 0, {"example.com/gpu": 0})
    nz = pod_requests(pod, non_zero=True)
    assert (nz.milli_cpu, nz.memory) == (0 + 100 + 10, 2 * 200 * 1024 * 1024)


def test_node_info_remove_pod_by_index_and_duplicates() -> None:
    a, b = make_pod("a", node="n", requests={"cpu": "1"}), make_pod("b", node="n", requests={"cpu": "2"})
    ni = node_info(make_node("n"), a, b, a)                       # a twice: the cache never does this
    ni.remove_pod(a)
    assert [p.key for p in ni.pods] == ["default/b", "default/a"] and ni.requested.milli_cpu == 3000
    ni.remove_pod(a)                                              # the later copy, found by the scan
    assert [p.key for p in ni.pods] == ["default/b"] and ni.requested.milli_cpu == 2000
    with pytest.raises(KeyError):
        ni.remove_pod(a)


# --- incremental snapshot -----------------------------------------------------------------------

def test_snapshot_keeps_node_order_through_removal_and_readd() -> None:
    c = Cache()
    for n in ("a", "b", "c"):
        c.add_node(make_node(n))
    snap = Snapshot()
    c.update_snapshot(snap)
    c.remove_node(make_node("b"))
    c.add_node(make_node("b"))                 # gone and back between two cycles: keeps its place
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["a", "b", "c"]
    c.remove_node(make_node("a"))
    c.assume_pod(make_pod("p", node="z"))       # a node-less NodeInfo: not in the snapshot
    c.add_node(make_node("d"))
    c.add_node(make_node("z"))                  # new nodes are appended in the cache's order
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["b", "c", "z", "d"]
    assert snap.get("z").pods[0].key == "default/p"
    c.check_invariants()
    fresh = Snapshot()                          # a new snapshot sees everything
    c.update_snapshot(fresh)
    assert [n.name for n in fresh.node_info_list] == ["c", "b", "z", "d"]     # the cache's order


def test_removed_node_infos_leave_no_change_record() -> None:
    """`changed` goes with the NodeInfo (no growth with node churn); snapshots still drop the node."""
    c = Cache()
    for n in ("a", "b", "c"):
        c.add_node(make_node(n))
    c.assume_pod(make_pod("p", node="b"))
    snap = Snapshot()
    c.update_snapshot(snap)
    for i in range(100):                        # churn: nodes that come and go for good
        c.add_node(make_node(f"tmp{i}"))
        c.remove_node(make_node(f"tmp{i}"))
    c.remove_node(make_node("a"))               # gone: NodeInfo and record dropped
    c.remove_node(make_node("b"))               # node gone, pod left: NodeInfo and record kept
    assert set(c.changed) == {"b", "c"}
    c.check_invariants()
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["c"]
    c.remove_pod(make_pod("p", node="b"))
    assert set(c.changed) == {"c"} and set(c.nodes) == {"c"}
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["c"]
    c.add_node(make_node("a"))                  # back again: a new NodeInfo, appended
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["c", "a"]
    c.check_invariants()


def test_snapshot_update_copies_only_changed_nodes() -> None:
    c = Cache()
    for i in range(50):
        c.add_node(make_node(f"n{i}"))
    snap = Snapshot()
    c.update_snapshot(snap)
    before = {n.name: (n, n.generation) for n in snap.node_info_list}
    c.assume_pod(make_pod("p", node="n7", requests={"cpu": "1"}))
    c.update_snapshot(snap)
    changed = [n.name for n in snap.node_info_list if n.generation != before[n.name][1]]
    assert changed == ["n7"] and snap.get("n7") is before["n7"][0]
    assert snap.get("n7").requested.milli_cpu == 1000


# --- scores and host selection ------------------------------------------------------------------

def _select_host_reference(scores: list[NodePluginScores], rng: random.Random) -> str:
    max_score, selected, count = scores[0].total_score, scores[0].name, 1
    for ns in scores[1:]:
        if ns.total_score > max_score:
            max_score, selected, count = ns.total_score, ns.name, 1
        elif ns.total_score == max_score:
            count += 1
            if rng.randrange(count) == 0:
                selected = ns.name
    return selected


def test_select_host_draws_as_randrange_did() -> None:
    gen = random.Random(0)
    for seed in range(200):
        scores = [NodePluginScores(f"n{i}", total_score=gen.choice([1, 2, 2, 3, 3, 3]))
                  for i in range(gen.randint(1, 300))]
        a, b = random.Random(seed), random.Random(seed)
        assert select_host(scores, a) == _select_host_reference(scores, b)
        assert a.random() == b.random()             # and left the generator in the same state


def test_node_plugin_scores_pair_lazily() -> None:
    ns = NodePluginScores.from_columns("n1", 7, ("A", "B"), [[1, 2], [5, 6]], 1)
    assert ns == NodePluginScores("n1", [("A", 2), ("B", 6)], 7)
    assert ns.scores == [("A", 2), ("B", 6)] and "total_score=7" in repr(ns)


def test_run_score_plugins_totals_and_breakdown() -> None:
    s = Sched(make_node("a", cpu="4"), make_node("b", cpu="4", taints=[taint("t", "PreferNoSchedule")]))
    s.cache.update_snapshot(s.snapshot)
    pod = make_pod("p", requests={"cpu": "1", "memory": "1Gi"})
    state, nodes = CycleState(), s.snapshot.node_info_list
    s.framework.run_pre_filter_plugins(state, pod, nodes)
    assert s.framework.run_pre_score_plugins(state, pod, nodes) is None
    got = s.framework.run_score_plugins(state, pod, nodes)
    by_plugin = [dict(ns.scores) for ns in got]
    assert [d["TaintToleration"] for d in by_plugin] == [300, 0]
    assert all(ns.total_score == sum(d.values()) for ns, d in zip(got, by_plugin))
    assert s.framework.run_score_plugins_totals(state, pod, nodes) == [ns.total_score for ns in got]


def test_select_index_is_select_host_over_totals() -> None:
    gen = random.Random(1)
    for seed in range(50):
        totals = [gen.choice([1, 2, 2, 3, 3, 3]) for _ in range(gen.randint(1, 300))]
        a, b = random.Random(seed), random.Random(seed)
        scores = [NodePluginScores(f"n{i}", total_score=t) for i, t in enumerate(totals)]
        assert f"n{select_index(totals, a)}" == select_host(scores, b)
        assert a.random() == b.random()


def test_invalid_score_still_reported() -> None:
    s = Sched(make_node("a"), make_node("b"))
    s.cache.update_snapshot(s.snapshot)

    class Bad:
        NAME = "Bad"

        def score(self, state: Any, pod: Any, node_info: Any) -> int:
            return 101 if node_info.name == "b" else 0

    fwk = s.framework
    fwk.score_plugins = [Bad()]
    fwk.score_weights["Bad"] = 1
    with pytest.raises(RuntimeError, match=r"plugin 'Bad' returns an invalid score 101"):
        fwk.run_score_plugins(CycleState(), make_pod("p"), s.snapshot.node_info_list)


def test_a_status_only_update_swaps_the_pod_in_place_with_the_same_aggregates() -> None:
    from kubeplane.api.types.core_v1 import PodStatus
    from kubeplane.scheduler.internal.cache import Cache
    cache = Cache()
    cache.add_node(make_node("n1", cpu="4", memory="8Gi"))
    old = make_pod("a", requests={"cpu": "500m", "memory": "1Gi"}, node="n1", host_ports=[8080])
    cache.add_pod(old)
    ni = cache.nodes["n1"]
    gen, ports = ni.generation, ni.used_ports
    new = old.deep_copy()
    new.status = PodStatus(phase="Running")
    new.metadata.labels = {"app": "web"}
    cache.update_pod(old, new)
    assert [p.pod for p in ni.pods] == [new] and ni.pods[0].pod is new
    assert (ni.requested.milli_cpu, ni.requested.memory) == (500, 2**30) and ni.used_ports is ports
    assert ni.generation > gen and next(reversed(cache.changed)) == "n1"
    changed = new.deep_copy()
    changed.spec.containers[0].resources.requests["cpu"] = "1"     # a spec change: remove, then add
    cache.update_pod(new, changed)
    assert ni.requested.milli_cpu == 1000 and ni.pods[0].pod is changed


def test_pods_generation_moves_with_what_selects_pods_only() -> None:
    """NodeInfo.pods_generation: moved by a pod added or removed, or by a change of its
    labels, namespace or deletion timestamp; not by a status write (the generation moves);
    the snapshot's copy carries it."""
    from kubeplane.api.types.core_v1 import PodStatus
    from kubeplane.scheduler.internal.cache import Cache
    cache = Cache()
    cache.add_node(make_node("n1"))
    ni = cache.nodes["n1"]
    before = ni.pods_generation
    old = make_pod("a", node="n1", labels={"app": "web"})
    cache.add_pod(old)
    assert ni.pods_generation == ni.generation > before
    steps: list[tuple[str, Any]] = [
        ("status", lambda p: setattr(p, "status", PodStatus(phase="Running"))),
        ("labels", lambda p: setattr(p.metadata, "labels", {"app": "db"})),
        ("deleting", lambda p: setattr(p.metadata, "deletion_timestamp", "2026-01-01T00:00:00Z")),
    ]
    for what, change in steps:
        gen, pods_gen = ni.generation, ni.pods_generation
        new = old.deep_copy()
        change(new)
        cache.update_pod(old, new)
        assert ni.pods[0].pod is new and ni.generation > gen
        assert (ni.pods_generation == pods_gen) if what == "status" else (ni.pods_generation == ni.generation), what
        old = new
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.get("n1").pods_generation == ni.pods_generation
    cache.remove_pod(old)
    assert ni.pods_generation == ni.generation


def test_snapshot_into_sets_every_slot() -> None:
    """snapshot_into (the snapshot's NodeInfo updated in place) leaves no slot out: a slot
    added to NodeInfo must be copied there too."""
    ni = node_info(make_node("n1"), make_pod("a", node="n1", requests={"cpu": "1"}, host_ports=[80]))
    target = NodeInfo.__new__(NodeInfo)
    ni.snapshot_into(target)
    for slot in NodeInfo.__slots__:
        mine, copied = getattr(ni, slot), getattr(target, slot)
        assert copied is mine or (type(copied) is type(mine) and copied is not mine), slot
    assert target.pods == ni.pods and target.requested.milli_cpu == 1000 and target.pods_generation == ni.pods_generation


# --- filtering a slice of nodes at once (Fit.filter_nodes) ----------------------------------------

def _filter_outcome(s: Sched, pod: Any, batch: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    from kubeplane.scheduler.framework.types import Diagnosis
    from kubeplane.scheduler.schedule_one import find_nodes_that_pass_filters
    fwk = s.framework
    with monkeypatch.context() as m:
        if not batch:
            m.setattr(fwk, "filter_nodes_to_run", lambda state, filters: None)
        s.cache.update_snapshot(s.snapshot)
        state, diagnosis = CycleState(), Diagnosis()
        _, status = fwk.run_pre_filter_plugins(state, pod, s.snapshot.node_info_list)
        assert status is None
        if batch:         # every filter to run answers for slices
            assert fwk.filter_nodes_to_run(state, fwk.filter_plugins_to_run(state)) is not None
        feasible = find_nodes_that_pass_filters(s, fwk, state, pod, diagnosis,  # type: ignore[arg-type]
                                                s.snapshot.node_info_list)
    statuses = {n: (st.code, st.plugin, st.reasons) for n, st in diagnosis.node_to_status.statuses.items()}
    return [ni.name for ni in feasible], statuses, diagnosis.unschedulable_plugins, s.next_start_node_index


def _outcome_by_slices_and_node_by_node(s: Sched, pod: Any, start: int,
                                        monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """_filter_outcome by slices and node by node from the same start, which must agree."""
    outcomes = []
    for batch in (True, False):
        s.next_start_node_index = start
        outcomes.append(_filter_outcome(s, pod, batch, monkeypatch))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def _rejecting_plugins(s: Sched, n_nodes: int, pods: list[Any], rng: random.Random,
                       monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The plugins that rejected one of s's n_nodes nodes for any of pods, filtered at a few
    percentages of nodes to score from random starts (by slices and node by node alike)."""
    rejected: set[str] = set()
    for pod in pods:
        for percentage in (0, 30, 100):
            s.percentage_of_nodes_to_score = percentage
            rejected |= _outcome_by_slices_and_node_by_node(s, pod, rng.randrange(n_nodes), monkeypatch)[2]
    return rejected


@pytest.mark.parametrize("seed", range(6))
def test_filtering_by_slices_equals_filtering_node_by_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same feasible nodes in the same order, the same statuses and the same next start,
    whatever nodes are full, tainted or cordoned, and wherever the rotation starts (and wraps)."""
    rng = random.Random(seed)
    marked = seed % 3      # 1: some nodes tainted NoSchedule, 2: also some cordoned
    nodes = [make_node(f"n{i}", cpu=rng.choice(["1", "2", "4"]), pods=rng.choice([1, 2, 110]),
                       taints=[taint("t", "NoSchedule")] if marked and rng.random() < 0.2 else None,
                       unschedulable=marked == 2 and rng.random() < 0.2)
             for i in range(rng.choice([30, 150, 260]))]
    s = Sched(*nodes)
    for i in range(rng.randrange(200)):     # fill some nodes
        s.cache.add_pod(make_pod(f"u{i}", node=f"n{rng.randrange(len(nodes))}", requests={"cpu": "700m"}))
    failures, rejecting = 0, set()
    for percentage in (0, 5, 50, 100):
        s.percentage_of_nodes_to_score = percentage
        for start in (0, rng.randrange(len(nodes)), len(nodes) - 1):
            for req, tolerate in (("100m", False), ("900m", False), ("3", False), ("100m", True)):
                tolerations = [{"operator": "Exists"}] if tolerate else []
                pod = make_pod("p", requests={"cpu": req}, spec={"tolerations": tolerations})
                outcome = _outcome_by_slices_and_node_by_node(s, pod, start, monkeypatch)
                failures += len(outcome[1])
                rejecting |= outcome[2]
    assert failures          # nodes rejected on the way
    assert rejecting >= {"NodeResourcesFit", *(["TaintToleration"] if marked else []),
                         *(["NodeUnschedulable"] if marked == 2 else [])}

def test_fit_verdicts_follow_node_changes_and_requests() -> None:
    ni = _node(1000, 8000, 0, 0, pods=2)
    fit = Fit()

    def verdict(cpu: str) -> bool | None:
        pod = make_pod("p", requests={"cpu": cpu})
        state = CycleState()
        fit.pre_filter(state, pod, [ni])
        got = fit.filter_nodes(state, pod, [ni])
        assert got is not None
        assert got[0] == (fit.filter(state, pod, ni) is None)
        return got[0]

    assert (verdict("500m"), verdict("2")) == (True, False)
    ni.add_pod(make_pod("u", node="n", requests={"cpu": "600m"}))       # a new generation
    assert (verdict("500m"), verdict("400m")) == (False, True)
    ni.add_pod(make_pod("v", node="n", requests={"cpu": "0"}))          # no room for a third pod
    assert verdict("1m") is False
    gpu = make_pod("g", requests={"cpu": "1m", "example.com/gpu": "1"})
    state = CycleState()
    fit.pre_filter(state, gpu, [ni])
    assert fit.filter_nodes(state, gpu, [ni]) is None                   # extended resources: Filter decides


def test_taint_toleration_pre_score_skip_follows_node_taints() -> None:
    """The count of nodes with a PreferNoSchedule taint (kept across cycles) follows updates."""
    s = Sched(make_node("a"), make_node("b"))
    pl = next(p for p in s.framework.plugins if isinstance(p, TaintToleration))
    pod = make_pod("p")

    def skipped() -> bool:
        s.cache.update_snapshot(s.snapshot)
        status = pl.pre_score(CycleState(), pod, s.snapshot.node_info_list)
        return status is not None and status.code == Code.SKIP

    assert skipped()
    plain, tainted = make_node("b"), make_node("b", taints=[taint("k", "PreferNoSchedule")])
    s.cache.update_node(plain, tainted)
    assert not skipped()
    s.cache.update_node(tainted, plain)
    assert skipped()


def _anti(key: str, ns: list[str] | None = None, **sel: str) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": {"matchLabels": sel}, "topologyKey": key}
    if ns:
        term["namespaces"] = ns
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


@pytest.mark.parametrize("seed", range(4))
def test_inter_pod_anti_affinity_slices_equal_node_by_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """InterPodAffinity's filter_nodes: pods repelling pods (per hostname and per zone), and
    existing pods repelling the incoming one: the same outcome as node by node."""
    from kubeplane.scheduler.framework.plugins.podtopologyspread import LABEL_TOPOLOGY_ZONE as ZONE
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}", labels={ZONE: f"z{i % 7}"} if rng.random() < 0.8 else None) for i in range(160)]
    s = Sched(*nodes)
    for i in range(40):
        host = f"n{rng.randrange(len(nodes))}"
        spec = {"affinity": _anti(HOSTNAME_KEY, color="red")} if rng.random() < 0.5 else None
        s.cache.add_pod(make_pod(f"e{i}", node=host, labels={"color": rng.choice(["red", "green"])}, spec=spec))
    pods = [make_pod("h", labels={"color": "green"}, spec={"affinity": _anti(HOSTNAME_KEY, color="green")}),
            make_pod("z", labels={"color": "blue"}, spec={"affinity": _anti(ZONE, color="green")}),
            make_pod("r", labels={"color": "red"}),         # repelled by the existing red-repelling pods
            make_pod("b", labels={"color": "blue"})]
    rejected = _rejecting_plugins(s, len(nodes), pods, rng, monkeypatch)
    assert "InterPodAffinity" in rejected


HOSTNAME_KEY = "kubernetes.io/hostname"


@pytest.mark.parametrize("seed", range(4))
def test_topology_spread_slices_equal_node_by_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """PodTopologySpread's filter_nodes (DoNotSchedule constraints on zones and hostnames,
    some nodes without a zone): the same outcome as node by node."""
    from kubeplane.scheduler.framework.plugins.podtopologyspread import LABEL_TOPOLOGY_ZONE as ZONE
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}", labels={ZONE: f"z{i % 4}"} if rng.random() < 0.85 else None) for i in range(150)]
    s = Sched(*nodes)
    for i in range(rng.randrange(30, 120)):
        s.cache.add_pod(make_pod(f"e{i}", node=f"n{rng.randrange(40)}", labels={"color": "blue"}))
    sel = {"matchLabels": {"color": "blue"}}
    pods = [make_pod("z", labels={"color": "blue"}, spec={"topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}]}),
            make_pod("h", labels={"color": "red"}, spec={"topologySpreadConstraints": [
                {"maxSkew": 2, "topologyKey": HOSTNAME_KEY, "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": sel},
                {"maxSkew": 3, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}]})]
    rejected = _rejecting_plugins(s, len(nodes), pods, rng, monkeypatch)
    assert "PodTopologySpread" in rejected


# --- session 16: shared snapshot parts, one PodInfo per pod, the queue's sort key ----------------

def test_snapshot_shares_only_what_is_replaced_never_changed() -> None:
    """A snapshot copy shares the affinity lists, used ports and allocatable of the cache's
    NodeInfo; changing that NodeInfo afterwards (pods with host ports and anti-affinity come
    and go) leaves the copy as it was."""
    ni = node_info(make_node("n1"), make_pod("a", node="n1", requests={"cpu": "1"}, host_ports=[80]))
    copy = ni.snapshot()
    before = (dict(copy.used_ports), list(copy.pods_with_affinity), list(copy.pods_with_required_anti_affinity),
              copy.allocatable.milli_cpu, copy.requested.milli_cpu)
    b = make_pod("b", node="n1", requests={"cpu": "1"}, host_ports=[81],
                 spec={"affinity": _anti(HOSTNAME_KEY, color="green")})
    ni.add_pod(b)
    assert dict(ni.used_ports) != before[0] and ni.pods_with_required_anti_affinity and ni.pods_with_affinity
    assert (dict(copy.used_ports), list(copy.pods_with_affinity), list(copy.pods_with_required_anti_affinity),
            copy.allocatable.milli_cpu, copy.requested.milli_cpu) == before
    copy2 = ni.snapshot()
    ni.remove_pod(b)
    assert ("TCP", 81) in copy2.used_ports["0.0.0.0"] and len(copy2.pods_with_required_anti_affinity) == 1
    assert ("TCP", 81) not in ni.used_ports["0.0.0.0"] and not ni.pods_with_required_anti_affinity


def test_assumed_pod_info_equals_a_fresh_one() -> None:
    """The cache's PodInfo of an assumed pod, made from the queue's (PodInfo.for_assumed), holds
    what a PodInfo parsed from the assumed pod holds."""
    from kubeplane.scheduler.framework.types import PodInfo
    pod = make_pod("a", labels={"color": "green"}, requests={"cpu": "300m", "memory": "1Gi"}, host_ports=[80],
                   spec={"affinity": _anti(HOSTNAME_KEY, color="green")})
    queued = PodInfo(pod)
    _ = queued.requests, queued.non_zero_requests           # worked out during the cycle
    assumed = assume_copy(pod, "n1")
    got, fresh = queued.for_assumed(assumed), PodInfo(assumed)
    assert got.pod is assumed and (got.key, got.uid) == (fresh.key, fresh.uid)
    for attr in ("requests", "non_zero_requests", "host_ports", "required_affinity_terms",
                 "required_anti_affinity_terms", "preferred_affinity_terms", "preferred_anti_affinity_terms"):
        assert getattr(got, attr) == getattr(fresh, attr), attr
    assert got.has_affinity() == fresh.has_affinity()


@pytest.mark.parametrize("seed", range(4))
def test_priority_sort_key_orders_the_queue_as_less_does(seed: int) -> None:
    """activeQ with PrioritySort's sort key pops in the order the heap calling less gives,
    through adds, updates and deletes (priorities and timestamps with ties)."""
    from kubeplane.scheduler.framework.plugins.queuesort import PrioritySort
    from kubeplane.scheduler.framework.types import PodInfo, QueuedPodInfo
    from kubeplane.scheduler.internal.heap import Heap
    rng = random.Random(seed)
    less = PrioritySort().less
    heaps = [Heap(lambda p: p.key, less), Heap(lambda p: p.key, less, PrioritySort.sort_key)]
    infos = {}
    for step in range(400):
        name = f"p{rng.randrange(60)}"
        op = rng.random()
        if op < 0.6:
            prio = rng.choice([None, 0, 5, 100])
            pinfo = QueuedPodInfo(PodInfo(make_pod(name, spec={"priority": prio} if prio is not None else {})),
                                  timestamp=float(rng.randrange(10)))
            infos[name] = pinfo
            for h in heaps:
                h.add_or_update(pinfo)
        elif op < 0.75:
            for h in heaps:
                h.delete(f"default/{name}")
        else:
            got = [h.pop().key if len(h) else None for h in heaps]
            assert got[0] == got[1], step
        heaps[1].check_invariants()
    assert [heaps[0].pop().key for _ in range(len(heaps[0]))] == [heaps[1].pop().key for _ in range(len(heaps[1]))]


@pytest.mark.parametrize("seed", range(3))
def test_count_pods_match_selector_equals_labels_matches(seed: int) -> None:
    """count_pods_match_selector (an equality selector's subset test written out) counts what
    labels.matches selects, for equality, set-based and empty selectors, skipping pods being
    deleted and pods of other namespaces."""
    from kubeplane.api import labels
    from kubeplane.scheduler.framework.plugins.podtopologyspread import count_pods_match_selector
    from kubeplane.scheduler.framework.types import PodInfo
    rng = random.Random(seed)
    pods = []
    for i in range(60):
        lbls = {k: rng.choice(["a", "b"]) for k in ("app", "tier", "hash") if rng.random() < 0.7}
        pod = make_pod(f"p{i}", ns=rng.choice(["default", "other"]), labels=lbls or None)
        if rng.random() < 0.2:
            pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
        pods.append(PodInfo(pod))
    selectors = [labels.parse("app=a"), labels.parse("app=a,tier=b"), labels.parse("app in (a)"),
                 labels.parse("app in (a,b)"), labels.parse("app!=a"), labels.parse("tier"), labels.EVERYTHING,
                 labels.parse("app=a,app=b")]
    for sel in selectors:
        want = sum(1 for pi in pods if pi.pod.metadata.deletion_timestamp is None
                   and pi.pod.metadata.namespace == "default" and labels.matches(sel, pi.pod.metadata.labels))
        assert count_pods_match_selector(pods, sel, "default") == want, sel


def test_resource_caches_outlive_status_writes_and_follow_layout_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fit's verdicts and Fit/BalancedAllocation's scores are kept by layout_generation: a
    status write (replace_pod: only the generation moves) computes nothing again, a pod
    added or removed (or a new Node object) does, and the answers stay those of the plain
    computation."""
    from kubeplane.scheduler.framework.types import NodeInfo as NI
    ni = node_info(make_node("n", cpu="4"), make_pod("a", node="n", requests={"cpu": "1", "memory": "1Gi"}))
    fit, bal = Fit(), BalancedAllocation()
    calls: list[str] = []
    for plugin in (fit, bal):
        orig = plugin.score_node
        monkeypatch.setattr(plugin, "score_node", lambda n, r, orig=orig, name=plugin.NAME: (calls.append(name),
                                                                                            orig(n, r))[1])
    pod = make_pod("p", requests={"cpu": "2", "memory": "1Gi"})

    def cycle() -> tuple[Any, ...]:
        state = CycleState()
        fit.pre_filter(state, pod, [ni])
        fit.pre_score(state, pod, [ni])
        bal.pre_score(state, pod, [ni])
        verdict = fit.filter_nodes(state, pod, [ni])
        return verdict, fit.score_nodes(state, pod, [ni]), bal.score_nodes(state, pod, [ni])

    first = cycle()
    assert len(calls) == 2
    old = ni.pods[0].pod
    new = msgspec.structs.replace(old, status=core_v1.PodStatus(phase="Running"))
    gen = ni.generation
    assert ni.replace_pod(old, new) and ni.generation != gen
    assert cycle() == first and len(calls) == 2                 # nothing computed again
    ni.add_pod(make_pod("b", node="n", requests={"cpu": "1500m", "memory": "1Gi"}))
    second = cycle()
    assert len(calls) == 4 and second != first
    fresh = NI()
    fresh.set_node(ni.node)
    for pi in ni.pods:
        fresh.add_pod(pi.pod)
    ni_saved, ni = ni, fresh
    calls.clear()
    assert cycle() == second and len(calls) == 2               # a fresh NodeInfo: same answers
    ni = ni_saved
    ni.set_node(make_node("n", cpu="8"))                        # a new Node: allocatable may change
    assert cycle() != second
