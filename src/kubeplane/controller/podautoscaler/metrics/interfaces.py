"""A pod's metric sample and the metrics client the replica calculator reads.

Times are epoch seconds; values are milli-units (Quantity.MilliValue: 250m CPU is 250).

Upstream: pkg/controller/podautoscaler/metrics/interfaces.go (PodMetric, PodMetricsInfo,
MetricsClient) and rest_metrics_client.go's conversion of metrics.k8s.io PodMetrics
(getPodMetrics, getContainerMetrics).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ....api import quantity


@dataclass(frozen=True, slots=True)
class PodMetric:
    """One pod's sample: when it was taken, over which window, its value. Upstream: PodMetric"""

    value: int
    timestamp: float = -62135596800.0      # Go's zero time, as upstream's tests leave it
    window: float = 0.0


PodMetricsInfo = dict[str, PodMetric]


class MetricsClient(Protocol):
    """Upstream: MetricsClient. Each raises ValueError with upstream's message on failure."""

    def get_resource_metric(self, resource: str, namespace: str, selector: Any, container: str
                            ) -> tuple[PodMetricsInfo, float]: ...

    def get_raw_metric(self, metric_name: str, namespace: str, selector: Any, metric_selector: Any
                       ) -> tuple[PodMetricsInfo, float]: ...

    def get_object_metric(self, metric_name: str, namespace: str, object_ref: Any, metric_selector: Any
                          ) -> tuple[int, float]: ...

    def get_external_metric(self, metric_name: str, namespace: str, selector: Any) -> tuple[list[int], float]: ...


def get_pod_metrics(raw: list[dict[str, Any]], resource: str) -> PodMetricsInfo:
    """Per pod, the sum of its containers' usage of `resource`; a pod with no containers, or a
    container without that resource, is left out (a missing pod). Upstream: getPodMetrics"""
    res: PodMetricsInfo = {}
    for m in raw:
        containers = m.get("containers") or []
        usages = [(c.get("usage") or {}).get(resource) for c in containers]
        if not containers or any(u is None for u in usages):
            continue
        res[m["metadata"]["name"]] = PodMetric(sum(quantity.milli_value(u) for u in usages), *_when(m))
    return res


def get_container_metrics(raw: list[dict[str, Any]], resource: str, container: str) -> PodMetricsInfo:
    """Per pod, one container's usage; ValueError if a pod's metrics lack that container.
    Upstream: getContainerMetrics"""
    res: PodMetricsInfo = {}
    for m in raw:
        meta = m.get("metadata") or {}
        for c in m.get("containers") or []:
            if c.get("name") == container:
                if (u := (c.get("usage") or {}).get(resource)) is not None:
                    res[meta["name"]] = PodMetric(quantity.milli_value(u), *_when(m))
                break
        else:
            raise ValueError(f"container {container} not present in metrics for pod "
                             f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return res


def _when(m: dict[str, Any]) -> tuple[float, float]:
    from ....utils.goduration import parse_go_duration
    from ....utils.clock import parse_rfc3339
    ts, window = m.get("timestamp"), m.get("window")
    return (parse_rfc3339(ts) if ts else -62135596800.0), (parse_go_duration(window) if window else 0.0)
