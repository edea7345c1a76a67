"""The audit metrics, with upstream's names and help texts, at /metrics while auditing is on.

Plain counters (updated on the loop; write errors by the writer thread), handed to
prometheus_client by a collector at scrape time, as apiserver/metrics.py does for the
request metrics. Upstream: apiserver/pkg/audit/metrics.go
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client import Metric

events = [0]                          # apiserver_audit_event_total
errors: dict[str, int] = {}           # apiserver_audit_error_total, by plugin
levels: dict[str, int] = {}           # apiserver_audit_level_total, by level
rejected = [0]                        # apiserver_audit_requests_rejected_total


def observe_policy_level(level: str) -> None:
    """Upstream: ObservePolicyLevel (one per request)."""
    levels[level] = levels.get(level, 0) + 1


def plugin_error(plugin: str, n: int = 1) -> None:
    """Upstream: HandlePluginError's count (the caller logs)."""
    errors[plugin] = errors.get(plugin, 0) + n


class _Collector:
    def collect(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import CounterMetricFamily

        yield CounterMetricFamily("apiserver_audit_event_total",
                                  "[ALPHA] Counter of audit events generated and sent to the audit backend.",
                                  value=events[0])
        err = CounterMetricFamily("apiserver_audit_error_total",
                                  "[ALPHA] Counter of audit events that failed to be audited properly. Plugin "
                                  "identifies the plugin affected by the error.", labels=("plugin",))
        for plugin, n in list(errors.items()):
            err.add_metric((plugin,), n)
        yield err
        lv = CounterMetricFamily("apiserver_audit_level_total",
                                 "[ALPHA] Counter of policy levels for audit events (1 per request).",
                                 labels=("level",))
        for level, n in list(levels.items()):
            lv.add_metric((level,), n)
        yield lv
        yield CounterMetricFamily("apiserver_audit_requests_rejected_total",
                                  "[ALPHA] Counter of apiserver requests rejected due to an error in audit "
                                  "logging backend.", value=rejected[0])


_registered = False


def register() -> None:
    """Register the collector in prometheus_client's default registry (once, when auditing starts)."""
    global _registered
    if not _registered:
        from prometheus_client import REGISTRY
        REGISTRY.register(_Collector())
        _registered = True
