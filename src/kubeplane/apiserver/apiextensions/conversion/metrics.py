"""The conversion webhook metrics upstream exposes, as plain series read at scrape time.

    apiserver_conversion_webhook_request_total{result, failure_type}
    apiserver_conversion_webhook_duration_seconds{result, failure_type}
    apiserver_crd_conversion_webhook_duration_seconds{crd_name, from_version, to_version, succeeded}
        (only when the input's version differs from the target's: never for a list, whose
        version is the target's, as upstream's converterMetric)

Upstream: ConversionWebhookMetrics, converterMetric (apiextensions-apiserver
pkg/apiserver/conversion/metrics.go). apiserver/metrics.py's collector yields collect().
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

CALL_FAILURE = "conversion_webhook_call_failure"
MALFORMED_RESPONSE_FAILURE = "conversion_webhook_malformed_response_failure"
PARTIAL_RESPONSE_FAILURE = "conversion_webhook_partial_response_failure"
INVALID_CONVERTED_OBJECT_FAILURE = "conversion_webhook_invalid_converted_object_failure"
NO_OBJECTS_RETURNED_FAILURE = "conversion_webhook_no_objects_returned_failure"

REQUEST_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45, 60)
CRD_BUCKETS = tuple(0.001 * 2**i for i in range(15))       # ExponentialBuckets(0.001, 2, 15)

_requests: dict[tuple[str, str], int] = {}
_latency: dict[tuple[str, str], list[float]] = {}          # bucket counts, then the sum
_crd_latency: dict[tuple[str, str, str, str], list[float]] = {}


def _observe(h: dict[Any, list[float]], key: Any, buckets: tuple[float, ...], seconds: float) -> None:
    counts = h.get(key)
    if counts is None:
        counts = h[key] = [0.0] * (len(buckets) + 2)
    counts[next((i for i, b in enumerate(buckets) if seconds <= b), len(buckets))] += 1
    counts[-1] += seconds


def observe_webhook(seconds: float, failure_type: str = "") -> None:
    """Upstream: ObserveConversionWebhookSuccess / ObserveConversionWebhookFailure"""
    key = ("failure" if failure_type else "success", failure_type)
    _requests[key] = _requests.get(key, 0) + 1
    _observe(_latency, key, REQUEST_BUCKETS, seconds)


def observe_crd(crd_name: str, from_version: str, to_version: str, succeeded: bool, seconds: float) -> None:
    """Upstream: converterMetric.Convert"""
    if from_version != to_version:
        _observe(_crd_latency, (crd_name, from_version, to_version, "true" if succeeded else "false"), CRD_BUCKETS,
                 seconds)


def collect() -> Iterator[Any]:
    from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily
    from prometheus_client.utils import floatToGoString

    def histogram(name: str, help_: str, labels: tuple[str, ...], series: dict[Any, list[float]],
                  buckets: tuple[float, ...]) -> Any:
        fam = HistogramMetricFamily(name, help_, labels=labels)
        for key, h in list(series.items()):
            acc, out = 0.0, []
            for bound, n in zip(buckets, h):
                acc += n
                out.append((floatToGoString(bound), acc))
            out.append(("+Inf", acc + h[len(buckets)]))
            fam.add_metric(key, out, h[-1])
        return fam

    total = CounterMetricFamily("apiserver_conversion_webhook_request_total", "[ALPHA] Counter for conversion "
                                "webhook requests with success/failure and failure error type",
                                labels=("result", "failure_type"))
    for key, n in list(_requests.items()):
        total.add_metric(key, n)
    yield total
    yield histogram("apiserver_conversion_webhook_duration_seconds", "[ALPHA] Conversion webhook request latency",
                    ("result", "failure_type"), _latency, REQUEST_BUCKETS)
    yield histogram("apiserver_crd_conversion_webhook_duration_seconds", "[ALPHA] CRD webhook conversion duration in "
                    "seconds", ("crd_name", "from_version", "to_version", "succeeded"), _crd_latency, CRD_BUCKETS)
