"""Usage ratios: how far the pods are from their target.

Example: 3 pods requesting 1 CPU each use 300m, 500m and 700m against a 30% target: utilization
is (1500 * 100) // 3000 = 50%, the ratio 50 / 30 = 1.67, the raw average 500m.

Upstream: pkg/controller/podautoscaler/metrics/utilization.go
"""
from __future__ import annotations

from .interfaces import PodMetricsInfo


def get_resource_utilization_ratio(metrics: PodMetricsInfo, requests: dict[str, int], target_utilization: int
                                   ) -> tuple[float, int, int]:
    """(utilization / target, utilization in percent of the requests, the average raw value);
    metrics of pods without a known request are extraneous. Upstream: GetResourceUtilizationRatio"""
    metrics_total = requests_total = entries = 0
    for pod, metric in metrics.items():
        if (request := requests.get(pod)) is None:
            continue
        metrics_total += metric.value
        requests_total += request
        entries += 1
    # A set of requests disjoint from the set of metrics leaves nothing to divide by.
    if requests_total == 0:
        raise ValueError("no metrics returned matched known pods")
    utilization = _go_div(metrics_total * 100, requests_total)
    return utilization / target_utilization, utilization, _go_div(metrics_total, entries)


def get_metric_usage_ratio(metrics: PodMetricsInfo, target_usage: int) -> tuple[float, int]:
    """(average usage / target, the average usage). Upstream: GetMetricUsageRatio"""
    usage = _go_div(sum(m.value for m in metrics.values()), len(metrics))
    return usage / target_usage, usage


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
