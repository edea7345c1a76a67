"""What the HPA reads from the metrics APIs, as the replica calculator needs it.
Upstream: pkg/controller/podautoscaler/metrics."""
from .interfaces import MetricsClient, PodMetric, PodMetricsInfo
from .utilization import get_metric_usage_ratio, get_resource_utilization_ratio

__all__ = ["MetricsClient", "PodMetric", "PodMetricsInfo", "get_metric_usage_ratio", "get_resource_utilization_ratio"]
