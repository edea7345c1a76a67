"""The availability controller's metrics, as plain values read at scrape time.

    aggregator_unavailable_apiservice{name}            1 while the APIService is not Available
    aggregator_unavailable_apiservice_total{name, reason}
                                                       each time one turns unavailable, by reason

Upstream: kube-aggregator pkg/controllers/status/metrics/metrics.go (SetUnavailableGauge,
SetUnavailableCounter, ForgetAPIService). apiserver/metrics.py's collector yields collect().
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_GAUGE_HELP = "[ALPHA] Gauge of APIServices which are marked as unavailable broken down by APIService name."
_COUNTER_HELP = ("[ALPHA] Counter of APIServices which are marked as unavailable broken down by APIService name "
                 "and reason.")
_available: dict[str, bool] = {}
_unavailable_total: dict[tuple[str, str], int] = {}


def set_unavailable_gauge(name: str, available: bool) -> None:
    _available[name] = available


def set_unavailable_counter(name: str, was_available: bool, available: bool, reason: str) -> None:
    """Count a change to unavailable (reason "UnknownReason" when none is given)."""
    if was_available != available and not available:
        key = (name, reason or "UnknownReason")
        _unavailable_total[key] = _unavailable_total.get(key, 0) + 1


def forget(name: str) -> None:
    _available.pop(name, None)


def collect() -> Iterator[Any]:
    from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily
    gauge = GaugeMetricFamily("aggregator_unavailable_apiservice", _GAUGE_HELP, labels=("name",))
    for name, ok in sorted(_available.items()):
        gauge.add_metric((name,), 0.0 if ok else 1.0)
    yield gauge
    counter = CounterMetricFamily("aggregator_unavailable_apiservice", _COUNTER_HELP, labels=("name", "reason"))
    for key, n in sorted(_unavailable_total.items()):
        counter.add_metric(key, float(n))
    yield counter
