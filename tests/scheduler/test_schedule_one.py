"""schedule_one's pure parts: FitError messages, numFeasibleNodesToFind, selectHost, and a
scheduling cycle over a hand-built cache (upstream: schedule_one_test.go, framework/types_test.go)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from kubeplane.scheduler.framework.interface import Code, CycleState, NodePluginScores, NodeToStatus, Status
from kubeplane.scheduler.framework.runtime import default_framework
from kubeplane.scheduler.framework.types import Diagnosis, FitError, PodInfo, QueuedPodInfo
from kubeplane.scheduler.internal.cache import Cache, Snapshot
from kubeplane.scheduler.schedule_one import (
    find_nodes_that_fit_pod, num_feasible_nodes_to_find, schedule_pod, scheduling_cycle, select_host,
)

from .helpers import make_node, make_pod


def test_fit_error_histogram_is_sorted_as_strings() -> None:
    statuses = {f"n{i}": Status(Code.UNSCHEDULABLE, "Insufficient cpu") for i in range(10)}
    statuses["t1"] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint {a: b}")
    statuses["t2"] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint {a: b}")
    statuses["u"] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable")
    err = FitError(None, 13, Diagnosis(NodeToStatus(statuses)))
    assert str(err) == ("0/13 nodes are available: 1 node(s) were unschedulable, 10 Insufficient cpu, "
                        "2 node(s) had untolerated taint {a: b}.")


def test_fit_error_multiple_reasons_per_node_and_prefilter_message() -> None:
    err = FitError(None, 2, Diagnosis(NodeToStatus({
        "a": Status(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory"),
        "b": Status(Code.UNSCHEDULABLE, "Insufficient memory")})))
    assert str(err) == "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."
    pre = FitError(None, 3, Diagnosis(pre_filter_msg="pod affinity terms conflict", post_filter_msg="x: y."))
    assert str(pre) == "0/3 nodes are available: pod affinity terms conflict. x: y.."


@pytest.mark.parametrize("percentage,nodes,want", [
    (0, 10, 10), (40, 10, 10), (0, 1000, 420), (40, 1000, 400), (0, 6000, 300), (40, 6000, 2400),
    (0, 100, 100), (0, 150, 100),
])
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, want: int) -> None:
    """Upstream TestNumFeasibleNodesToFind."""
    assert num_feasible_nodes_to_find(percentage, nodes) == want


def test_select_host_picks_max_and_breaks_ties_uniformly() -> None:
    scores = [NodePluginScores("a", total_score=10), NodePluginScores("b", total_score=30),
              NodePluginScores("c", total_score=30), NodePluginScores("d", total_score=20)]
    rng = random.Random(3)
    picks = Counter(select_host(scores, rng) for _ in range(2000))
    assert set(picks) == {"b", "c"} and abs(picks["b"] - picks["c"]) < 200
    with pytest.raises(ValueError):
        select_host([], rng)


class Sched:
    def __init__(self, *nodes) -> None:  # type: ignore[no-untyped-def]
        self.cache, self.snapshot = Cache(), Snapshot()
        self.framework = default_framework(snapshot=self.snapshot)
        self.next_start_node_index, self.percentage_of_nodes_to_score = 0, 0
        self.rng = random.Random(1)
        for n in nodes:
            self.cache.add_node(n)


def cycle(s: Sched, pod):  # type: ignore[no-untyped-def]
    return scheduling_cycle(s, s.framework, CycleState(), QueuedPodInfo(PodInfo(pod)))  # type: ignore[arg-type]


def test_unschedulable_message_mixes_preemption_reasons() -> None:
    s = Sched(make_node("n1", cpu="1"), make_node("n2", cpu="1"),
              make_node("n3", cpu="4", taints=[{"key": "a", "value": "b", "effect": "NoSchedule"}]))
    assumed, status = cycle(s, make_pod("p", requests={"cpu": "500m"}))
    assert assumed is not None and status is None
    assumed, status = cycle(s, make_pod("q", requests={"cpu": "600m"}))
    assert assumed is not None
    _, status = cycle(s, make_pod("r", requests={"cpu": "800m"}))
    assert status.code == Code.UNSCHEDULABLE
    assert str(status.err) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod..")


def test_preemption_policy_never_and_no_nodes() -> None:
    s = Sched(make_node("n1", cpu="1"))
    _, status = cycle(s, make_pod("p", requests={"cpu": "2"}, spec={"preemptionPolicy": "Never"}))
    assert str(status.err) == ("0/1 nodes are available: 1 Insufficient cpu. "
                               "preemption: not eligible due to preemptionPolicy=Never..")
    _, status = cycle(Sched(), make_pod("p"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and str(status.err) == \
        "no nodes available to schedule pods"


def test_only_one_feasible_node_skips_scoring_and_rotation_spreads_start() -> None:
    s = Sched(*[make_node(f"n{i}", cpu="1") for i in range(3)])
    r = schedule_pod(s, s.framework, CycleState(), make_pod("p", spec={"nodeSelector": {"kubernetes.io/hostname": "n2"}}))
    assert (r.suggested_host, r.feasible_nodes, r.evaluated_nodes) == ("n2", 1, 3)
    assert s.next_start_node_index == 0                  # all 3 nodes processed: back to the start


def test_percentage_of_nodes_to_score_stops_filtering_early() -> None:
    s = Sched(*[make_node(f"n{i:03}") for i in range(200)])
    s.percentage_of_nodes_to_score = 10                  # 10% of 200 = 20 < 100 -> 100 nodes
    r = schedule_pod(s, s.framework, CycleState(), make_pod("p"))
    assert r.feasible_nodes == 100 and s.next_start_node_index == 100
    schedule_pod(s, s.framework, CycleState(), make_pod("q"))
    assert s.next_start_node_index == 0


def test_fair_evaluation_for_nodes() -> None:
    """Upstream TestFairEvaluationForNodes: 500 nodes at 30 % (150 to find, 500 % 150 != 0),
    over every node more than twice: each cycle finds exactly 150 and starts where the last
    stopped."""
    s = Sched(*[make_node(str(i)) for i in range(500)])
    s.percentage_of_nodes_to_score = 30
    s.cache.update_snapshot(s.snapshot)
    nodes_to_find = num_feasible_nodes_to_find(30, 500)
    assert nodes_to_find == 150
    for i in range(2 * (500 // nodes_to_find + 1)):
        feasible, _ = find_nodes_that_fit_pod(s, s.framework, CycleState(), make_pod("p"))  # type: ignore[arg-type]
        assert len(feasible) == nodes_to_find
        assert s.next_start_node_index == (i + 1) * nodes_to_find % 500
