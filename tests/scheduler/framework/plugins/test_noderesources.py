"""NodeResourcesFit, LeastAllocated and BalancedAllocation, re-expressing upstream's tables
(noderesources/fit_test.go TestEnoughRequests, least_allocated_test.go,
balanced_allocation_test.go). Upstream's fixtures use cpu in millicores and memory in bytes."""
from __future__ import annotations

import pytest

from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.plugins.noderesources import BalancedAllocation, Fit
from kubeplane.scheduler.framework.plugins.noderesources.balanced_allocation import balanced_resource_scorer
from kubeplane.scheduler.framework.plugins.noderesources.least_allocated import least_requested_score
from kubeplane.scheduler.framework.types import pod_requests

from ...helpers import make_node, make_pod, node_info, run_filter


def r(cpu: int, mem: int) -> dict[str, str]:
    return {"cpu": f"{cpu}m", "memory": str(mem)}


def used_node(cpu: int, mem: int, pods: int = 32):  # type: ignore[no-untyped-def]
    """Upstream's node: allocatable 10m cpu, 20 bytes memory, 32 pods, with one pod using cpu/mem."""
    existing = make_pod("existing", node="machine1", requests=r(cpu, mem))
    return node_info(make_node("machine1", cpu="10m", memory="20", pods=pods), existing)


@pytest.mark.parametrize("requests,init,used,want", [
    pytest.param({}, None, (10, 20), [], id="no resources requested always fits"),
    pytest.param(r(1, 1), None, (10, 20), ["Insufficient cpu", "Insufficient memory"], id="too many resources fails"),
    pytest.param(r(1, 1), [r(3, 1)], (8, 19), ["Insufficient cpu"], id="fails due to init container cpu"),
    pytest.param(r(1, 1), [r(3, 1), r(2, 1)], (8, 19), ["Insufficient cpu"],
                 id="fails due to highest init container cpu"),
    pytest.param(r(1, 1), [r(1, 3)], (9, 19), ["Insufficient memory"], id="fails due to init container memory"),
    pytest.param(r(1, 1), [r(1, 1)], (9, 19), [], id="init container fits because it's the max, not sum"),
    pytest.param(r(1, 1), None, (5, 5), [], id="both resources fit"),
    pytest.param(r(2, 1), None, (9, 5), ["Insufficient cpu"], id="one resource memory fits"),
    pytest.param(r(1, 2), None, (5, 19), ["Insufficient memory"], id="one resource cpu fits"),
    pytest.param(r(5, 1), None, (5, 19), [], id="equal edge case"),
    pytest.param(r(4, 1), [r(5, 1)], (5, 19), [], id="equal edge case for init container"),
])
def test_enough_requests(requests, init, used, want) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod("p", requests=requests, init_requests=init)
    status = run_filter(Fit(), pod, used_node(*used))
    assert (status.reasons if status else []) == want
    if status:
        assert status.code == Code.UNSCHEDULABLE


def test_too_many_pods_even_when_nothing_requested() -> None:
    status = run_filter(Fit(), make_pod("p"), used_node(0, 0, pods=1))
    assert status.reasons == ["Too many pods"] and status.code == Code.UNSCHEDULABLE


def test_request_larger_than_allocatable_is_unresolvable() -> None:
    status = run_filter(Fit(), make_pod("p", requests=r(11, 1)), used_node(0, 0))
    assert status.reasons == ["Insufficient cpu"]
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE      # preemption cannot help


def test_extended_resource() -> None:
    ni = node_info(make_node("n", extra={"example.com/gpu": "2"}))
    assert run_filter(Fit(), make_pod("p", requests={"example.com/gpu": "2"}), ni) is None
    status = run_filter(Fit(), make_pod("p", requests={"example.com/gpu": "3"}), ni)
    assert status.reasons == ["Insufficient example.com/gpu"]


def test_pod_requests_sidecars_and_overhead() -> None:
    # containers 100m + 200m; init 500m; a sidecar (restartPolicy Always) 50m runs alongside:
    # max(300 + 50, 500 + 50) = 550, plus overhead 10m = 560.
    pod = make_pod("p", requests=[{"cpu": "100m"}, {"cpu": "200m"}],
                   spec={"initContainers": [
                       {"name": "side", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                       {"name": "init", "image": "x", "resources": {"requests": {"cpu": "500m"}}}],
                         "overhead": {"cpu": "10m"}})
    assert pod_requests(pod).milli_cpu == 560
    assert pod_requests(pod, exclude_overhead=True).milli_cpu == 550
    # Non-zero requests fill in 100m / 200Mi only for a *missing* request.
    empty = make_pod("e")
    assert (pod_requests(empty, non_zero=True).milli_cpu, pod_requests(empty, non_zero=True).memory) == \
        (100, 200 * 1024 * 1024)


def _scores(plugin, pod, nodes):  # type: ignore[no-untyped-def]
    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None and status.code == Code.SKIP:
        return None
    return [plugin.score(state, pod, ni) for ni in nodes]


CPU_AND_MEMORY = [r(1000, 2000), r(2000, 3000)]        # upstream's cpuAndMemory pod: 3000m / 5000


def test_least_allocated_differently_sized_nodes() -> None:
    """Upstream "nothing scheduled, resources requested, differently sized nodes":
    node1 cpu (4000-3000)*100/4000 = 25, mem 50 -> 37; node2 cpu 50, mem 50 -> 50."""
    nodes = [node_info(make_node("node1", cpu="4", memory="10000")),
             node_info(make_node("node2", cpu="6", memory="10000"))]
    assert _scores(Fit(), make_pod("p", requests=CPU_AND_MEMORY), nodes) == [37, 50]


def test_least_allocated_counts_existing_pods() -> None:
    """Upstream "resources requested, pods scheduled with resources": existing 3000m/5000 on
    a 10000m/20000 node, pod 3000m/5000: cpu (10000-6000)*100/10000 = 40, mem 50 -> 45."""
    existing = make_pod("e", node="node1", requests=CPU_AND_MEMORY)
    nodes = [node_info(make_node("node1", cpu="10", memory="20000"), existing)]
    assert _scores(Fit(), make_pod("p", requests=CPU_AND_MEMORY), nodes) == [45]


@pytest.mark.parametrize("requested,capacity,want", [(0, 4000, 100), (1000, 4000, 75), (4000, 4000, 0),
                                                      (5000, 4000, 0), (1, 0, 0)])
def test_least_requested_score(requested: int, capacity: int, want: int) -> None:
    assert least_requested_score(requested, capacity) == want


def test_balanced_allocation_differently_sized_nodes() -> None:
    """Upstream: node1 fractions 0.75/0.5 -> std 0.125 -> 87; node2 0.5/0.5 -> 100."""
    nodes = [node_info(make_node("node1", cpu="4", memory="10000")),
             node_info(make_node("node2", cpu="6", memory="10000"))]
    assert _scores(BalancedAllocation(), make_pod("p", requests=CPU_AND_MEMORY), nodes) == [87, 100]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    nodes = [node_info(make_node("node1"))]
    assert _scores(BalancedAllocation(), make_pod("p"), nodes) is None


def test_balanced_resource_scorer_three_resources() -> None:
    # fractions 0.2, 0.5, 0.8: mean 0.5, std sqrt((0.09+0+0.09)/3) = 0.2449 -> int(75.5) = 75
    assert balanced_resource_scorer([2, 5, 8], [10, 10, 10]) == 75
    assert balanced_resource_scorer([20, 5], [10, 10]) == 75      # fractions capped at 1
