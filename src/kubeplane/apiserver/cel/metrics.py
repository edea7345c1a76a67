"""The CEL metrics upstream exposes, as plain histograms read at scrape time.

Upstream: CelMetrics (k8s.io/apiserver pkg/cel/metrics/metrics.go): apiserver_cel_compilation_
duration_seconds and apiserver_cel_evaluation_duration_seconds, BETA, with Prometheus' default
buckets; observed by the CRD validation rules (apiextensions-apiserver pkg/apiserver/schema/cel
validation.go: one compilation per schema node with rules when its validator is built, one
evaluation per custom object validated). apiserver/metrics.py's collector yields collect()'s
families on /metrics.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)   # prometheus.DefBuckets
_COMPILATION_HELP = "[BETA] CEL compilation time in seconds."
_EVALUATION_HELP = "[BETA] CEL evaluation time in seconds."

# the count of observations up to each bound (then above the last), then their sum
_compilation: list[float] = [0] * (len(DEF_BUCKETS) + 1) + [0.0]
_evaluation: list[float] = [0] * (len(DEF_BUCKETS) + 1) + [0.0]


def _observe(h: list[float], seconds: float) -> None:
    h[bisect_left(DEF_BUCKETS, seconds)] += 1
    h[-1] += seconds


def observe_compilation(seconds: float) -> None:
    """Upstream: ObserveCompilation."""
    _observe(_compilation, seconds)


def observe_evaluation(seconds: float) -> None:
    """Upstream: ObserveEvaluation."""
    _observe(_evaluation, seconds)


def collect() -> Iterator[Any]:
    """The families for prometheus_client (apiserver/metrics.py's collector yields them)."""
    from prometheus_client.metrics_core import HistogramMetricFamily
    from prometheus_client.utils import floatToGoString

    for name, help_, h in (("apiserver_cel_compilation_duration_seconds", _COMPILATION_HELP, _compilation),
                           ("apiserver_cel_evaluation_duration_seconds", _EVALUATION_HELP, _evaluation)):
        buckets, acc = [], 0.0
        for bound, n in zip(DEF_BUCKETS, h):
            acc += n
            buckets.append((floatToGoString(bound), acc))
        buckets.append(("+Inf", acc + h[len(DEF_BUCKETS)]))
        family = HistogramMetricFamily(name, help_)
        family.add_metric([], buckets, h[-1])
        yield family
