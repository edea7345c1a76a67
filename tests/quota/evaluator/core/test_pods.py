"""The pod evaluator: usage, the cpu/memory constraint, scopes. Facts from upstream's
pkg/quota/v1/evaluator/core/pods_test.go (TestPodConstraintsFunc, TestPodEvaluatorUsage,
TestPodEvaluatorMatchingScopes), with kubeplane's dict pods."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.quota import resources as q
from kubeplane.quota.evaluator.core.pods import PodEvaluator, pod_usage
from kubeplane.quota.generic import QuotaConstraintError, UsageStatsOptions
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


def container(name: str = "c", requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
              **extra: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"name": name, "image": "x", "resources": res, **extra}


def pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None, phase: str = "",
        meta: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": list(containers), **spec}
    if init:
        s["initContainers"] = init
    p: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns", **(meta or {})}, "spec": s}
    if phase:
        p["status"] = {"phase": phase}
    return p


def usage(p: dict[str, Any]) -> dict[str, str]:
    return q.to_json(pod_usage(p, NOW))


@pytest.mark.parametrize("p, expected", [
    pytest.param(pod(container(requests={"cpu": "1m"}, limits={"cpu": "2m"}) | {"name": "i"}),
                 {"requests.cpu": "1m", "limits.cpu": "2m", "pods": "1", "count/pods": "1", "cpu": "1m"},
                 id="container CPU"),
    pytest.param(pod(container(requests={"memory": "1m"}, limits={"memory": "2m"})),
                 {"requests.memory": "1m", "limits.memory": "2m", "pods": "1", "count/pods": "1", "memory": "1m"},
                 id="container MEM"),
    pytest.param(pod(container(requests={"ephemeral-storage": "32Mi"}, limits={"ephemeral-storage": "64Mi"})),
                 {"requests.ephemeral-storage": "32Mi", "limits.ephemeral-storage": "64Mi", "pods": "1",
                  "count/pods": "1", "ephemeral-storage": "32Mi"}, id="container local ephemeral storage"),
    pytest.param(pod(container(requests={"hugepages-2Mi": "100Mi"})),
                 {"requests.hugepages-2Mi": "100Mi", "hugepages-2Mi": "100Mi", "pods": "1", "count/pods": "1"},
                 id="container hugepages"),
    pytest.param(pod(container(requests={"example.com/dongle": "3"}, limits={"example.com/dongle": "3"})),
                 {"requests.example.com/dongle": "3", "pods": "1", "count/pods": "1"}, id="container extended resources"),
    pytest.param(pod(container(), init=[container("i", requests={"cpu": "1m"}, limits={"cpu": "2m"})]),
                 {"requests.cpu": "1m", "limits.cpu": "2m", "pods": "1", "count/pods": "1", "cpu": "1m"},
                 id="init container CPU"),
    pytest.param(pod(container(requests={"cpu": "1", "memory": "50M", "example.com/dongle": "1"},
                               limits={"cpu": "2", "memory": "100M", "example.com/dongle": "1"}),
                     container("d", requests={"cpu": "1", "memory": "50M"}, limits={"cpu": "2", "memory": "100M"}),
                     init=[container("i1", requests={"cpu": "4", "memory": "100M", "example.com/dongle": "3"},
                                     limits={"cpu": "8", "memory": "200M", "example.com/dongle": "3"}),
                           container("i2", requests={"cpu": "1", "memory": "50M"}, limits={"cpu": "2", "memory": "100M"})]),
                 {"requests.cpu": "4", "limits.cpu": "8", "requests.memory": "100M", "limits.memory": "200M",
                  "requests.example.com/dongle": "3", "pods": "1", "count/pods": "1", "cpu": "4", "memory": "100M"},
                 id="init container maximums override sum of containers"),
    pytest.param(pod(container(requests={"cpu": "1"}, limits={"cpu": "2"}), overhead={"cpu": "1"}),
                 {"requests.cpu": "2", "limits.cpu": "3", "pods": "1", "count/pods": "1", "cpu": "2"},
                 id="count pod overhead as usage"),
    pytest.param(pod(container(requests={"cpu": "1"}, limits={"cpu": "2"}),
                     init=[container("s", requests={"cpu": "1"}, limits={"cpu": "2"}, restartPolicy="Always"),
                           container("i", requests={"cpu": "3"}, limits={"cpu": "4"})]),
                 {"requests.cpu": "4", "limits.cpu": "6", "pods": "1", "count/pods": "1", "cpu": "4"},
                 id="sidecar: init container plus the sidecars before it"),
    pytest.param(pod(container(requests={"cpu": "1"}), init=[container("s", requests={"cpu": "1"}, restartPolicy="Always")]),
                 {"requests.cpu": "2", "pods": "1", "count/pods": "1", "cpu": "2"}, id="sidecar runs alongside"),
    pytest.param(pod(container(requests={"cpu": "100m"}), resources={"requests": {"cpu": "1", "memory": "1Gi"}}),
                 {"requests.cpu": "1", "requests.memory": "1Gi", "pods": "1", "count/pods": "1", "cpu": "1", "memory": "1Gi"},
                 id="pod-level resources"),
    pytest.param(pod(container(requests={"cpu": "1"}), phase="Succeeded"), {"count/pods": "1"},
                 id="terminated generic count still appears"),
    pytest.param(pod(container(requests={"cpu": "1"}), phase="Failed"), {"count/pods": "1"}, id="failed"),
    pytest.param(pod(container(requests={"cpu": "1"}),
                     meta={"deletionTimestamp": rfc3339(NOW - 61), "deletionGracePeriodSeconds": 60}),
                 {"count/pods": "1"}, id="pod deletion timestamp exceeded"),
    pytest.param(pod(container(requests={"cpu": "1"}),
                     meta={"deletionTimestamp": rfc3339(NOW - 59), "deletionGracePeriodSeconds": 60}),
                 {"requests.cpu": "1", "pods": "1", "count/pods": "1", "cpu": "1"},
                 id="pod deletion timestamp not exceeded"),
])
def test_pod_usage(p: dict[str, Any], expected: dict[str, str]) -> None:
    assert usage(p) == expected


@pytest.mark.parametrize("p, required, err", [
    pytest.param(pod(container(requests={"cpu": "1m"})), ["cpu"], None, id="init container resource requirements"),
    pytest.param(pod(container("c", requests={"memory": "1m"})), ["cpu"], "must specify cpu for: c",
                 id="container resource missing"),
    pytest.param(pod(container("a"), container("b", requests={"cpu": "1m"}), init=[container("i")]),
                 ["requests.cpu", "limits.memory"],
                 "must specify limits.memory for: a,b,i; requests.cpu for: a,i", id="many missing"),
    pytest.param(pod(container("app")), ["requests.cpu", "requests.memory", "limits.cpu", "limits.memory"],
                 "must specify limits.cpu for: app; limits.memory for: app; requests.cpu for: app; "
                 "requests.memory for: app", id="the documented message"),
    pytest.param(pod(container("c")), ["pods", "requests.storage", "requests.ephemeral-storage"], None,
                 id="only cpu and memory are required"),
])
def test_pod_constraints(p: dict[str, Any], required: list[str], err: str | None) -> None:
    if err is None:
        PodEvaluator().constraints(required, p)
    else:
        with pytest.raises(QuotaConstraintError) as e:
            PodEvaluator().constraints(required, p)
        assert str(e.value) == err


BEST_EFFORT = pod(container())
BURSTABLE = pod(container(requests={"cpu": "100m"}))
TERMINATING = pod(container(), activeDeadlineSeconds=60)
PRIORITY = pod(container(), priorityClassName="high")
CROSS_NS = pod(container(), affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "k", "namespaces": ["other"]}]}})
CROSS_NS_SELECTOR = pod(container(), affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "namespaceSelector": {}}}]}})


def exists(scope: str) -> dict[str, Any]:
    return {"scopeName": scope, "operator": "Exists"}


@pytest.mark.parametrize("p, selectors, matched", [
    pytest.param(BEST_EFFORT, [exists("BestEffort"), exists("NotBestEffort")], ["BestEffort"], id="best effort"),
    pytest.param(BURSTABLE, [exists("BestEffort"), exists("NotBestEffort")], ["NotBestEffort"], id="burstable"),
    pytest.param(pod(container(requests={"cpu": "0"})), [exists("BestEffort")], ["BestEffort"], id="zero is best effort"),
    pytest.param(TERMINATING, [exists("Terminating"), exists("NotTerminating")], ["Terminating"], id="terminating"),
    pytest.param(BEST_EFFORT, [exists("Terminating"), exists("NotTerminating")], ["NotTerminating"], id="not terminating"),
    pytest.param(PRIORITY, [exists("PriorityClass")], ["PriorityClass"], id="priority class exists"),
    pytest.param(BEST_EFFORT, [exists("PriorityClass")], [], id="no priority class"),
    pytest.param(PRIORITY, [{"scopeName": "PriorityClass", "operator": "In", "values": ["high", "low"]}],
                 ["PriorityClass"], id="priority class in"),
    pytest.param(PRIORITY, [{"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}], [],
                 id="priority class not in"),
    pytest.param(BEST_EFFORT, [{"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}],
                 ["PriorityClass"], id="no priority class is not in"),
    pytest.param(BEST_EFFORT, [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}], ["PriorityClass"],
                 id="priority class does not exist"),
    pytest.param(CROSS_NS, [exists("CrossNamespacePodAffinity")], ["CrossNamespacePodAffinity"], id="namespaces"),
    pytest.param(CROSS_NS_SELECTOR, [exists("CrossNamespacePodAffinity")], ["CrossNamespacePodAffinity"],
                 id="namespace selector"),
    pytest.param(BEST_EFFORT, [exists("CrossNamespacePodAffinity")], [], id="no affinity"),
])
def test_pod_matching_scopes(p: dict[str, Any], selectors: list[dict[str, Any]], matched: list[str]) -> None:
    assert [s["scopeName"] for s in PodEvaluator().matching_scopes(p, selectors)] == matched


def test_matching_resources() -> None:
    e = PodEvaluator()
    got = e.matching_resources(["pods", "cpu", "requests.storage", "count/pods", "hugepages-2Mi",
                                "requests.example.com/dongle", "example.com/dongle", "services"])
    assert sorted(got) == ["count/pods", "cpu", "hugepages-2Mi", "pods", "requests.example.com/dongle"]


def test_matches_needs_a_tracked_name_and_every_scope() -> None:
    e = PodEvaluator()
    quota = {"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "5"}}}
    assert e.matches(quota, BEST_EFFORT) and not e.matches(quota, BURSTABLE)
    assert not e.matches({"status": {"hard": {"services": "1"}}}, BEST_EFFORT)


def test_usage_stats_sums_pods_in_scope() -> None:
    e = PodEvaluator(FakeClock(NOW))
    opts = UsageStatsOptions("ns", scopes=("NotBestEffort",), resources=("pods", "requests.cpu", "requests.memory"))
    got = e.usage_stats(opts, [BURSTABLE, BURSTABLE, BEST_EFFORT, pod(container(requests={"cpu": "1"}), phase="Failed")])
    assert q.to_json(q.mask(got, opts.resources)) == {"pods": "2", "requests.cpu": "200m", "requests.memory": "0"}
