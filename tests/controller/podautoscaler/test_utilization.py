"""Usage ratios. Upstream: pkg/controller/podautoscaler/metrics/utilization_test.go"""
from __future__ import annotations

import pytest

from kubeplane.controller.podautoscaler.metrics import PodMetric, get_metric_usage_ratio, get_resource_utilization_ratio
from kubeplane.controller.podautoscaler.metrics.interfaces import get_container_metrics, get_pod_metrics

TWO = {"test-pod-0": PodMetric(50), "test-pod-1": PodMetric(76)}


@pytest.mark.parametrize("name,metrics,requests", [
    ("BaseCase", TWO, {"test-pod-0": 100, "test-pod-1": 100}),
    ("IgnorePodsWithNoRequest", {**TWO, "test-pod-no-request": PodMetric(100)}, {"test-pod-0": 100, "test-pod-1": 100}),
    ("ExtraRequest", TWO, {"test-pod-0": 100, "test-pod-1": 100, "test-pod-extra-request": 500}),
])
def test_get_resource_utilization_ratio(name: str, metrics: dict[str, PodMetric], requests: dict[str, int]) -> None:
    """Upstream: TestGetResourceUtilizationRatio<name>"""
    assert get_resource_utilization_ratio(metrics, requests, 50) == (1.26, 63, 63)


def test_get_resource_utilization_ratio_no_requests() -> None:
    """Upstream: TestGetResourceUtilizationRatioNoRequests"""
    with pytest.raises(ValueError, match="no metrics returned matched known pods"):
        get_resource_utilization_ratio(TWO, {}, 50)


def test_get_metric_usage_ratio_base_case() -> None:
    """Upstream: TestGetMetricUsageRatioBaseCase"""
    metrics = {"test-pod-0": PodMetric(5000), "test-pod-1": PodMetric(10000)}
    assert get_metric_usage_ratio(metrics, 10000) == (.75, 7500)


def test_pod_metrics_from_the_resource_metrics_api() -> None:
    """Upstream: getPodMetrics / getContainerMetrics — a pod with a container lacking the
    resource is missing; a named container absent from a pod's metrics is an error."""
    raw = [{"metadata": {"name": "a", "namespace": "ns"}, "timestamp": "2026-01-01T00:00:00Z", "window": "30s",
            "containers": [{"name": "c1", "usage": {"cpu": "250m"}}, {"name": "c2", "usage": {"cpu": "1"}}]},
           {"metadata": {"name": "b", "namespace": "ns"},
            "containers": [{"name": "c1", "usage": {"cpu": "1"}}, {"name": "c2", "usage": {"memory": "1Mi"}}]},
           {"metadata": {"name": "empty", "namespace": "ns"}, "containers": []}]
    pods = get_pod_metrics(raw, "cpu")
    assert list(pods) == ["a"] and pods["a"].value == 1250 and pods["a"].window == 30.0
    assert {k: v.value for k, v in get_container_metrics(raw[:2], "cpu", "c1").items()} == {"a": 250, "b": 1000}
    assert {k: v.value for k, v in get_container_metrics(raw[:2], "cpu", "c2").items()} == {"a": 1000}
    with pytest.raises(ValueError, match="container c3 not present in metrics for pod ns/a"):
        get_container_metrics(raw, "cpu", "c3")
