"""The HPA replica calculator: upstream's tables as facts.

Reproduces pkg/controller/podautoscaler/replica_calculator_test.go (the TestReplicaCalc* cases,
TestGroupPods, TestCalculatePodRequests) with its harness: pods test-pod-<i> with two containers
each requesting the case's request, Ready unless told, Running unless told, started at Go's zero
time unless "hot" (now) or "cool" (3 minutes ago); metrics as the metrics.k8s.io / custom /
external APIs would return them, taken at Go's zero time; tolerance 10%, CPU initialization
period 2 minutes, initial readiness delay 10 seconds (upstream's testing defaults).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.controller.podautoscaler.metrics import PodMetric, PodMetricsInfo
from kubeplane.controller.podautoscaler.metrics.interfaces import get_container_metrics, get_pod_metrics
from kubeplane.controller.podautoscaler.replica_calculator import (ReplicaCalculator, Tolerances, calculate_requests,
                                                                   group_pods)
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
ZERO = -62135596800.0
HOT, COOL = NOW, NOW - 180                       # hotCPUCreationTime, coolCPUCreationTime
NS, PREFIX, CONTAINERS = "test-namespace", "test-pod", 2
TOLERANCES = Tolerances(0.1, 0.1)
INIT_PERIOD, READINESS_DELAY = 120.0, 10.0


@dataclass
class Res:
    requests: list[str]
    levels: list[list[int]]
    target: int
    utilization: int = 0
    value: int = 0
    pod_names: list[str] = field(default_factory=list)
    name: str = "cpu"


@dataclass
class Met:
    levels: list[int]
    kind: str                        # object | objectPerPod | external | externalPerPod | pod
    target: int = 0
    per_pod_target: int = 0
    usage: int = 0
    name: str = "qps"


@dataclass
class Case:
    current: int
    expected: int = 0
    error: str = ""
    resource: Res | None = None
    metric: Met | None = None
    container: str = ""
    readiness: list[str] | None = None
    start: list[float] | None = None
    phase: list[str] | None = None
    deleting: list[bool] | None = None


def levels(*per_pod: int) -> list[list[int]]:
    """makePodMetricLevels: every container of pod i at per_pod[i]."""
    return [[v] * CONTAINERS for v in per_pod]


def pods_of(tc: Case) -> list[core_v1.Pod]:
    count = max(tc.current, len(tc.phase or ()))       # failed pods are not in currentReplicas
    pods = []
    for i in range(count):
        ready = tc.readiness[i] if tc.readiness and i < len(tc.readiness) else "True"
        containers: list[dict[str, Any]] = [{"name": "container1"}, {"name": "container2"}]
        if tc.resource and i < len(tc.resource.requests):
            for c in containers:
                c["resources"] = {"requests": {tc.resource.name: tc.resource.requests[i]}}
        meta: dict[str, Any] = {"name": f"{PREFIX}-{i}", "namespace": NS, "labels": {"name": PREFIX}}
        if tc.deleting and tc.deleting[i]:
            meta["deletionTimestamp"] = rfc3339(NOW)
        pods.append(types.from_dict({
            "metadata": meta, "spec": {"containers": containers},
            "status": {"phase": tc.phase[i] if tc.phase else "Running",
                       "startTime": rfc3339(tc.start[i]) if tc.start else "0001-01-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": ready}]}}, core_v1.Pod))
    return pods


class FakeMetrics:
    """The metrics APIs as upstream's fake clients answer for a case."""

    def __init__(self, tc: Case) -> None:
        self.tc = tc

    def get_resource_metric(self, resource: str, namespace: str, selector: Any, container: str
                            ) -> tuple[PodMetricsInfo, float]:
        res = self.tc.resource
        if res is None:
            raise ValueError("no pod resource metrics specified in test client")
        raw = []
        for i, values in enumerate(res.levels):
            name = res.pod_names[i] if i < len(res.pod_names) else f"{PREFIX}-{i}"
            containers: list[dict[str, Any]] = [{} for _ in range(CONTAINERS)]     # zero-valued, as Go's make
            for j, v in enumerate(values):
                containers[j] = {"name": f"container{j + 1}", "usage": {res.name: f"{v}m"}}
            raw.append({"metadata": {"name": name, "namespace": NS}, "window": "1m0s", "containers": containers})
        if not raw:
            raise ValueError("no metrics returned from resource metrics API")
        if container:
            try:
                return get_container_metrics(raw, resource, container), ZERO
            except ValueError as e:
                raise ValueError(f"failed to get container metrics: {e}") from None
        return get_pod_metrics(raw, resource), ZERO

    def get_raw_metric(self, metric_name: str, namespace: str, selector: Any, metric_selector: Any
                       ) -> tuple[PodMetricsInfo, float]:
        m = self.tc.metric
        assert m is not None and metric_name == m.name
        return {f"{PREFIX}-{i}": PodMetric(v, ZERO, 60.0) for i, v in enumerate(m.levels)}, ZERO

    def get_object_metric(self, metric_name: str, namespace: str, object_ref: Any, metric_selector: Any
                          ) -> tuple[int, float]:
        m = self.tc.metric
        assert m is not None and metric_name == m.name and object_ref["name"] == "some-deployment"
        return m.levels[0], ZERO

    def get_external_metric(self, metric_name: str, namespace: str, selector: Any) -> tuple[list[int], float]:
        m = self.tc.metric
        assert m is not None and metric_name == m.name and selector == {"matchLabels": {"label": "value"}}
        return list(m.levels), ZERO


class PodLister:
    def __init__(self, pods: list[core_v1.Pod]) -> None:
        self._pods = pods

    def pods(self, namespace: str) -> PodLister:
        return self

    def list(self, selector: Any) -> list[core_v1.Pod]:
        return self._pods


DEPLOYMENT = {"kind": "Deployment", "apiVersion": "apps/v1", "name": "some-deployment"}
ONE = "1.0"
T, F = "True", "False"

CASES: dict[str, Case] = {
    "DisjointResourcesMetrics": Case(1, error="no metrics returned matched known pods",
                                     resource=Res([ONE], levels(100), 100, pod_names=["an-older-pod-name"])),
    "ScaleUp": Case(3, 5, resource=Res([ONE] * 3, levels(300, 500, 700), 30, 50, CONTAINERS * 500)),
    "ContainerScaleUp": Case(3, 5, resource=Res([ONE] * 3, [[1000, 300], [1000, 500], [1000, 700]], 30, 50, 500),
                             container="container2"),
    "ScaleUpUnreadyLessScale": Case(3, 4, readiness=[F, T, T],
                                    resource=Res([ONE] * 3, levels(300, 500, 700), 30, 60, CONTAINERS * 600)),
    "ScaleUpContainerHotCpuLessScale": Case(3, 4, start=[HOT, COOL, COOL], container="container2",
                                            resource=Res([ONE] * 3, [[0, 300], [0, 500], [0, 700]], 30, 60, 600)),
    "ScaleUpHotCpuLessScale": Case(3, 4, start=[HOT, COOL, COOL],
                                   resource=Res([ONE] * 3, levels(300, 500, 700), 30, 60, CONTAINERS * 600)),
    "ScaleUpUnreadyNoScale": Case(3, 3, readiness=[T, F, F],
                                  resource=Res([ONE] * 3, levels(400, 500, 700), 30, 40, CONTAINERS * 400)),
    "ScaleHotCpuNoScale": Case(3, 3, readiness=[T, F, F], start=[COOL, HOT, HOT],
                               resource=Res([ONE] * 3, levels(400, 500, 700), 30, 40, CONTAINERS * 400)),
    "ScaleUpIgnoresFailedPods": Case(2, 4, readiness=[T, T, F, F], phase=["Running", "Running", "Failed", "Failed"],
                                     resource=Res([ONE] * 4, levels(500, 700), 30, 60, CONTAINERS * 600)),
    "ScaleUpContainerIgnoresFailedPods": Case(
        2, 4, readiness=[T, T, F, F], phase=["Running", "Running", "Failed", "Failed"], container="container2",
        resource=Res([ONE] * 4, [[1000, 500], [9000, 700]], 30, 60, 600)),
    "ScaleUpIgnoresDeletionPods": Case(2, 4, readiness=[T, T, F, F], phase=["Running"] * 4,
                                       deleting=[False, False, True, True],
                                       resource=Res([ONE] * 4, levels(500, 700), 30, 60, CONTAINERS * 600)),
    "ScaleUpContainerIgnoresDeletionPods": Case(2, 4, readiness=[T, T, F, F], phase=["Running"] * 4,
                                                deleting=[False, False, True, True], container="container1",
                                                resource=Res([ONE] * 4, levels(500, 700), 30, 60, 600)),
    "ScaleUpCM": Case(3, 4, metric=Met([20000, 10000, 30000], "pod", target=15000, usage=20000)),
    "ScaleUpCMUnreadyHotCpuNoLessScale": Case(3, 6, readiness=[T, T, F], start=[COOL, COOL, HOT],
                                              metric=Met([50000, 10000, 30000], "pod", target=15000, usage=30000)),
    "ScaleUpCMUnreadyHotCpuScaleWouldScaleDown": Case(
        3, 7, readiness=[F, T, F], start=[HOT, COOL, HOT],
        metric=Met([50000, 15000, 30000], "pod", target=15000, usage=31666)),
    "ScaleUpCMObject": Case(3, 4, metric=Met([20000], "object", target=15000, usage=20000)),
    "ScaleUpCMPerPodObject": Case(3, 4, metric=Met([20000], "objectPerPod", per_pod_target=5000, usage=6667)),
    "ScaleUpCMObjectIgnoresUnreadyPods": Case(3, 5, readiness=[F, T, F],
                                              metric=Met([50000], "object", target=10000, usage=50000)),
    "ScaleUpCMExternal": Case(1, 2, metric=Met([8600], "pod", target=4400, usage=8600)),
    "ScaleUpCMExternalIgnoresUnreadyPods": Case(3, 2, readiness=[F, T, F],
                                                metric=Met([8600], "external", target=4400, usage=8600)),
    "ScaleUpCMExternalNoLabels": Case(1, 2, metric=Met([8600], "pod", target=4400, usage=8600)),
    "ScaleUpPerPodCMExternal": Case(3, 4, metric=Met([8600], "externalPerPod", per_pod_target=2150, usage=2867)),
    "ScaleDown": Case(5, 3, resource=Res([ONE] * 5, levels(100, 300, 500, 250, 250), 50, 28, CONTAINERS * 280)),
    "ContainerScaleDown": Case(5, 3, container="container2", resource=Res(
        [ONE] * 5, [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]], 50, 28, 280)),
    "ScaleDownCM": Case(5, 3, metric=Met([12000] * 5, "pod", target=20000, usage=12000)),
    "ScaleDownPerPodCMObject": Case(5, 3, metric=Met([6000], "objectPerPod", per_pod_target=2000, usage=1200)),
    "ScaleDownCMObject": Case(5, 3, metric=Met([12000], "object", target=20000, usage=12000)),
    "ScaleDownCMExternal": Case(5, 3, metric=Met([8600], "external", target=14334, usage=8600)),
    "ScaleDownPerPodCMExternal": Case(5, 3, metric=Met([8600], "externalPerPod", per_pod_target=2867, usage=1720)),
    "ScaleDownExcludeUnreadyPods": Case(5, 2, readiness=[T, T, T, F, F], resource=Res(
        [ONE] * 5, levels(100, 300, 500, 250, 250), 50, 30, CONTAINERS * 300)),
    "ScaleDownContainerExcludeUnreadyPods": Case(5, 2, readiness=[T, T, T, F, F], container="container2", resource=Res(
        [ONE] * 5, [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]], 50, 30, 300)),
    "ScaleDownExcludeUnscheduledPods": Case(5, 1, readiness=[T, F, F, F, F], phase=["Running"] + ["Pending"] * 4,
                                            resource=Res([ONE] * 5, levels(100), 50, 10, CONTAINERS * 100)),
    "ScaleDownContainerExcludeUnscheduledPods": Case(
        5, 1, readiness=[T, F, F, F, F], phase=["Running"] + ["Pending"] * 4, container="container2",
        resource=Res([ONE] * 5, [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]], 50, 10, 100)),
    "ScaleDownIgnoreHotCpuPods": Case(5, 2, start=[COOL, COOL, COOL, HOT, HOT], resource=Res(
        [ONE] * 5, levels(100, 300, 500, 250, 250), 50, 30, CONTAINERS * 300)),
    "ScaleDownContainerIgnoreHotCpuPods": Case(5, 2, start=[COOL, COOL, COOL, HOT, HOT], container="container2",
                                               resource=Res([ONE] * 5, [[1000, 100], [1000, 300], [1000, 500],
                                                                         [1000, 1000], [1000, 1000]], 50, 30, 300)),
    "ScaleDownIgnoresFailedPods": Case(5, 3, readiness=[T] * 5 + [F, F], phase=["Running"] * 5 + ["Failed"] * 2,
                                       resource=Res([ONE] * 7, levels(100, 300, 500, 250, 250), 50, 28,
                                                    CONTAINERS * 280)),
    "ScaleDownContainerIgnoresFailedPods": Case(
        5, 3, readiness=[T] * 5 + [F, F], phase=["Running"] * 5 + ["Failed"] * 2, container="container2",
        resource=Res([ONE] * 7, [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]], 50, 28, 280)),
    "ScaleDownIgnoresDeletionPods": Case(5, 3, readiness=[T] * 5 + [F, F], phase=["Running"] * 7,
                                         deleting=[False] * 5 + [True] * 2,
                                         resource=Res([ONE] * 7, levels(100, 300, 500, 250, 250), 50, 28,
                                                      CONTAINERS * 280)),
    "ScaleDownIgnoresDeletionPods_StillRunning": Case(
        5, 3, readiness=[T] * 5 + [F, F], phase=["Running"] * 7, deleting=[False] * 5 + [True] * 2,
        container="container2",
        resource=Res([ONE] * 7, [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]], 50, 28, 280)),
    "Tolerance": Case(3, 3, resource=Res(["0.9", "1.0", "1.1"], levels(1010, 1030, 1020), 100, 102,
                                         CONTAINERS * 1020)),
    "ToleranceCM": Case(3, 3, metric=Met([20000, 21000, 21000], "pod", target=20000, usage=20666)),
    "ToleranceCMObject": Case(3, 3, metric=Met([20666], "object", target=20000, usage=20666)),
    "TolerancePerPodCMObject": Case(4, 4, metric=Met([20166], "objectPerPod", per_pod_target=5000, usage=5042)),
    "ToleranceCMExternal": Case(3, 3, metric=Met([8600], "external", target=8888, usage=8600)),
    "TolerancePerPodCMExternal": Case(3, 3, metric=Met([8600], "externalPerPod", per_pod_target=2900, usage=2867)),
    "SuperfluousMetrics": Case(4, 24, resource=Res([ONE] * 4, levels(4000, 9500, 3000, 7000, 3200, 2000), 100, 587,
                                                   CONTAINERS * 5875)),
    "MissingMetrics": Case(4, 3, resource=Res([ONE] * 4, levels(400, 95), 100, 24, 495)),
    "EmptyMetrics": Case(4, error="unable to get metrics for resource cpu: no metrics returned from resource "
                                  "metrics API", resource=Res([ONE] * 3, levels(), 100)),
    "EmptyCPURequest": Case(1, error="missing request for", resource=Res([], levels(200), 100)),
    "PlainMetricMissingMetricsNoChangeEq": Case(5, 5, metric=Met([20000, 19000, 21000], "pod", target=20000,
                                                                 usage=20000)),
    "MissingMetricsNoChangeEq": Case(2, 2, resource=Res([ONE] * 2, levels(1000), 100, 100, CONTAINERS * 1000)),
    "MissingMetricsNoChangeGt": Case(2, 2, resource=Res([ONE] * 2, levels(1900), 100, 190, CONTAINERS * 1900)),
    "MissingMetricsNoChangeLt": Case(2, 2, resource=Res([ONE] * 2, levels(600), 100, 60, CONTAINERS * 600)),
    "MissingMetricsUnreadyChange": Case(3, 3, readiness=[F, T, T],
                                        resource=Res([ONE] * 3, levels(100, 450), 50, 45, CONTAINERS * 450)),
    "MissingMetricsHotCpuNoChange": Case(3, 3, start=[HOT, COOL, COOL],
                                         resource=Res([ONE] * 3, levels(100, 450), 50, 45, CONTAINERS * 450)),
    "MissingMetricsUnreadyScaleUp": Case(3, 4, readiness=[F, T, T],
                                         resource=Res([ONE] * 3, levels(100, 2000), 50, 200, CONTAINERS * 2000)),
    "MissingMetricsHotCpuScaleUp": Case(3, 4, readiness=[F, T, T], start=[HOT, COOL, COOL],
                                        resource=Res([ONE] * 3, levels(100, 2000), 50, 200, CONTAINERS * 2000)),
    "MissingMetricsUnreadyScaleDown": Case(4, 3, readiness=[F, T, T, T],
                                           resource=Res([ONE] * 4, levels(100, 100, 100), 50, 10, CONTAINERS * 100)),
    "MissingMetricsScaleDownTargetOver100": Case(4, 2, readiness=[F, T, T, T], resource=Res(
        [ONE, ONE, "2.0", "2.0"], levels(200, 100, 100), 300, 6, CONTAINERS * 100)),
    "DuringRollingUpdateWithMaxSurge": Case(2, 2, phase=["Running"] * 3,
                                            resource=Res([ONE] * 3, levels(100, 100), 50, 10, CONTAINERS * 100)),
    "DuringRollingUpdateWithMaxSurgeCM": Case(2, 2, phase=["Running"] * 3,
                                              metric=Met([10000, 10000], "pod", target=17000, usage=10000)),
}


def run(tc: Case) -> None:
    calc = ReplicaCalculator(FakeMetrics(tc), PodLister(pods_of(tc)), cpu_initialization_period=INIT_PERIOD,
                             delay_of_initial_readiness_status=READINESS_DELAY, clock=FakeClock(NOW))
    selector = {"matchLabels": {"name": PREFIX}}
    if tc.resource is not None:
        r = tc.resource
        if tc.error:
            with pytest.raises(ValueError, match=tc.error):
                calc.get_resource_replicas(tc.current, r.target, r.name, TOLERANCES, NS, selector, tc.container)
            return
        assert calc.get_resource_replicas(tc.current, r.target, r.name, TOLERANCES, NS, selector, tc.container) == \
            (tc.expected, r.utilization, r.value, ZERO)
        return
    m = tc.metric
    assert m is not None
    external = {"matchLabels": {"label": "value"}}
    if m.kind == "object":
        got = calc.get_object_metric_replicas(tc.current, m.target, m.name, TOLERANCES, NS, DEPLOYMENT, selector)
    elif m.kind == "objectPerPod":
        got = calc.get_object_per_pod_metric_replicas(tc.current, m.per_pod_target, m.name, TOLERANCES, NS,
                                                      DEPLOYMENT)
    elif m.kind == "external":
        got = calc.get_external_metric_replicas(tc.current, m.target, m.name, TOLERANCES, NS, external, selector)
    elif m.kind == "externalPerPod":
        got = calc.get_external_per_pod_metric_replicas(tc.current, m.per_pod_target, m.name, TOLERANCES, NS,
                                                        external)
    else:
        got = calc.get_metric_replicas(tc.current, m.target, m.name, TOLERANCES, NS, selector)
    assert got == (tc.expected, m.usage, ZERO)


@pytest.mark.parametrize("name", list(CASES))
def test_replica_calc(name: str) -> None:
    """Upstream: TestReplicaCalc<name>"""
    run(CASES[name])


def test_computed_tolerance_alg_implementation() -> None:
    """Upstream: TestReplicaCalcComputedToleranceAlgImplementation — just past the tolerance
    scales down; just inside it does not."""
    start_pods = 10
    used = start_pods * 150                       # 150m per pod
    requested = 2 * used                          # each pod asks for twice what it uses
    requested_to_used = float(requested // used)
    per_pod = requested // start_pods
    target = abs(1 / (requested_to_used * (1 - 0.1))) + .01
    ratio = used / (requested * target)
    final_pods = math.ceil(ratio * start_pods)
    requests = [f"{per_pod + d}m" for d in (100, -100, 10, -10, 2, -2, 1, -1, 0, 0)]
    res = Res(requests, levels(*[used // 10] * 10), int(target * 100), (used * 100) // requested,
              CONTAINERS * used // 10)
    run(Case(start_pods, final_pods, resource=res))
    target = abs(1 / (requested_to_used * (1 - 0.1))) + .004
    res.target = int(target * 100)
    run(Case(start_pods, start_pods, resource=res))


def _pod(name: str, phase: str, start: float | None = None, ready: tuple[str, float] | None = None,
         deleted: bool = False) -> core_v1.Pod:
    status: dict[str, Any] = {"phase": phase}
    if start is not None:
        status["startTime"] = rfc3339(start)
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready[0], "lastTransitionTime": rfc3339(ready[1])}]
    meta: dict[str, Any] = {"name": name}
    if deleted:
        meta["deletionTimestamp"] = rfc3339(1)
    return types.from_dict({"metadata": meta, "status": status}, core_v1.Pod)


M = 60.0


@pytest.mark.parametrize("name,pods,metrics,resource,ready,unready,missing,ignored", [
    ("void", [], {}, "cpu", 0, set(), set(), set()),
    ("count in a ready pod - memory", [_pod("bentham", "Succeeded")],
     {"bentham": PodMetric(1, NOW, M)}, "memory", 1, set(), set(), set()),
    ("unready a pod without ready condition - CPU", [_pod("lucretius", "Succeeded", NOW)],
     {"lucretius": PodMetric(1)}, "cpu", 0, {"lucretius"}, set(), set()),
    ("count in a ready pod with fresh metrics during initialization period - CPU",
     [_pod("bentham", "Succeeded", NOW - M, ("True", NOW - 30))], {"bentham": PodMetric(1, NOW, 30)}, "cpu",
     1, set(), set(), set()),
    ("unready a ready pod without fresh metrics during initialization period - CPU",
     [_pod("bentham", "Succeeded", NOW - M, ("True", NOW - 30))], {"bentham": PodMetric(1, NOW, 60)}, "cpu",
     0, {"bentham"}, set(), set()),
    ("unready an unready pod during initialization period - CPU",
     [_pod("lucretius", "Succeeded", NOW - 10 * M, ("False", NOW - 9 * M - 54))], {"lucretius": PodMetric(1)},
     "cpu", 0, {"lucretius"}, set(), set()),
    ("count in a ready pod without fresh metrics after initialization period - CPU",
     [_pod("bentham", "Succeeded", NOW - 3 * M, ("True", NOW - 3 * M))], {"bentham": PodMetric(1, NOW - 2 * M, M)},
     "cpu", 1, set(), set(), set()),
    ("count in an unready pod that was ready after initialization period - CPU",
     [_pod("lucretius", "Succeeded", NOW - 10 * M, ("False", NOW - 9 * M))], {"lucretius": PodMetric(1)}, "cpu",
     1, set(), set(), set()),
    ("unready pod that has never been ready after initialization period - CPU",
     [_pod("lucretius", "Succeeded", NOW - 10 * M, ("False", NOW - 9 * M - 50))], {"lucretius": PodMetric(1)},
     "cpu", 1, set(), set(), set()),
    ("a missing pod", [_pod("epicurus", "Succeeded", NOW - 3 * M)], {}, "cpu", 0, set(), {"epicurus"}, set()),
    ("several pods", [_pod("lucretius", "Succeeded", NOW), _pod("niccolo", "Succeeded", NOW - 3 * M,
                                                                ("True", NOW - 3 * M)),
                      _pod("epicurus", "Succeeded", NOW - 3 * M)],
     {"lucretius": PodMetric(1), "niccolo": PodMetric(1)}, "cpu", 1, {"lucretius"}, {"epicurus"}, set()),
    ("pending pods are unreadied", [_pod("unscheduled", "Pending")], {}, "cpu", 0, {"unscheduled"}, set(), set()),
    ("ignore pods with deletion timestamps", [_pod("deleted", "Pending", deleted=True)], {"deleted": PodMetric(1)},
     "cpu", 0, set(), set(), {"deleted"}),
    ("ignore pods in a failed state", [_pod("failed", "Failed")], {"failed": PodMetric(1)}, "cpu", 0, set(), set(),
     {"failed"}),
])
def test_group_pods(name: str, pods: list[core_v1.Pod], metrics: PodMetricsInfo, resource: str, ready: int,
                    unready: set[str], missing: set[str], ignored: set[str]) -> None:
    """Upstream: TestGroupPods"""
    assert group_pods(pods, metrics, resource, INIT_PERIOD, READINESS_DELAY, NOW) == (ready, unready, missing, ignored)


def _requests_pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> core_v1.Pod:
    return types.from_dict({"metadata": {"name": "test-pod", "namespace": NS},
                            "spec": {"containers": containers, "initContainers": init}}, core_v1.Pod)


def _c(name: str, cpu: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, **({"resources": {"requests": {"cpu": cpu}}} if cpu else {}), **extra}


@pytest.mark.parametrize("name,pods,container,expected,error", [
    ("void", [], "", {}, ""),
    ("pod with regular containers", [_requests_pod([_c("container1", "100m"), _c("container2", "50m")])], "",
     {"test-pod": 150}, ""),
    ("calculate requests with special container",
     [_requests_pod([_c("container1", "100m"), _c("container2", "50m")])], "container1", {"test-pod": 100}, ""),
    ("container missing requests", [_requests_pod([_c("container1")])], "", None,
     "missing request for cpu in container container1 of Pod test-pod"),
    ("pod with restartable init containers",
     [_requests_pod([_c("container1", "100m")],
                    [_c("init-container1", "20m"), _c("restartable-container1", "50m", restartPolicy="Always")])],
     "", {"test-pod": 150}, ""),
])
def test_calculate_pod_requests(name: str, pods: list[core_v1.Pod], container: str, expected: Any, error: str
                                ) -> None:
    """Upstream: TestCalculatePodRequests"""
    if error:
        with pytest.raises(ValueError) as e:
            calculate_requests(pods, container, "cpu")
        assert str(e.value) == error
    else:
        assert calculate_requests(pods, container, "cpu") == expected


def test_pod_level_requests_win_unless_a_container_is_named() -> None:
    """Upstream: calculateRequests with PodLevelResources: a named container still wins."""
    pod = types.from_dict({"metadata": {"name": "p"}, "spec": {
        "resources": {"requests": {"cpu": "800m"}},
        "containers": [_c("c1", "100m"), _c("c2", "50m")]}}, core_v1.Pod)
    assert calculate_requests([pod], "", "cpu") == {"p": 800}
    assert calculate_requests([pod], "c2", "cpu") == {"p": 50}
    with pytest.raises(ValueError, match="missing pod-level request for memory in Pod p"):
        calculate_requests([pod], "", "memory")


def test_tolerances() -> None:
    t = Tolerances(0.1, 0.2)
    assert str(t) == "[down:10.0%, up:20.0%]"
    assert t.is_within(0.9) and t.is_within(1.2) and not t.is_within(0.89) and not t.is_within(1.21)
