"""The HPA controller's metrics, registered once in prometheus_client's default REGISTRY.

    horizontal_pod_autoscaler_controller_reconciliations_total{action, error}
    horizontal_pod_autoscaler_controller_reconciliation_duration_seconds{action, error}       1 ms .. 16 s
    horizontal_pod_autoscaler_controller_metric_computation_total{action, error, metric_type}
    horizontal_pod_autoscaler_controller_metric_computation_duration_seconds{action, error, metric_type}
    horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers       gauge
    horizontal_pod_autoscaler_controller_desired_replicas{namespace, hpa_name} gauge

action: scale_up | scale_down | none (none whenever there was an error); error: spec (the HPA
or its target's scale is invalid: no or a bad selector, an unknown metric type, a target with
neither utilization nor value) | internal (anything else) | none. Once per reconciliation and
once per metric of it (every sync period per HPA), never per pod.

The two gauges: the HPAs the controller has seen added and not yet deleted, and each one's
desiredReplicas after its last reconciliation (its series goes with it). Upstream:
pkg/controller/podautoscaler/monitor (metrics.go, monitor.go: names, help, buckets; where the
controller calls ObserveHPAAddition/Deletion and ObserveDesiredReplicas is inferred here).
"""
from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

SCALE_UP, SCALE_DOWN, NONE = "scale_up", "scale_down", "none"
SPEC, INTERNAL = "spec", "internal"

_SUBSYSTEM = "horizontal_pod_autoscaler_controller"
_LABELS_HELP = ("The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' "
                "should be either 'spec', 'internal', or 'none'.")
_BUCKETS = [0.001 * 2 ** i for i in range(15)]             # ExponentialBuckets(0.001, 2, 15)

RECONCILIATIONS_TOTAL = Counter(
    f"{_SUBSYSTEM}_reconciliations",
    f"[ALPHA] Number of reconciliations of HPA controller. {_LABELS_HELP} Note that if both spec and internal errors "
    "happen during a reconciliation, the first one to occur is reported in `error` label.", ["action", "error"])
RECONCILIATION_DURATION = Histogram(
    f"{_SUBSYSTEM}_reconciliation_duration_seconds",
    f"[ALPHA] The time(seconds) that the HPA controller takes to reconcile once. {_LABELS_HELP} Note that if both "
    "spec and internal errors happen during a reconciliation, the first one to occur is reported in `error` label.",
    ["action", "error"], buckets=_BUCKETS)
METRIC_COMPUTATION_TOTAL = Counter(
    f"{_SUBSYSTEM}_metric_computation",
    f"[ALPHA] Number of metric computations. {_LABELS_HELP} The label 'metric_type' corresponds to "
    "HPA.spec.metrics[*].type", ["action", "error", "metric_type"])
METRIC_COMPUTATION_DURATION = Histogram(
    f"{_SUBSYSTEM}_metric_computation_duration_seconds",
    "[ALPHA] The time(seconds) that the HPA controller takes to calculate one metric. The label 'action' should be "
    "either 'scale_down', 'scale_up', or 'none'. The label 'error' should be either 'spec', 'internal', or 'none'. "
    "The label 'metric_type' corresponds to HPA.spec.metrics[*].type", ["action", "error", "metric_type"],
    buckets=_BUCKETS)


NUM_HORIZONTAL_POD_AUTOSCALERS = Gauge(f"{_SUBSYSTEM}_num_horizontal_pod_autoscalers",
                                       "[ALPHA] Current number of controlled HPA objects.")
DESIRED_REPLICAS = Gauge(f"{_SUBSYSTEM}_desired_replicas", "[ALPHA] Current desired replica count for HPA objects.",
                         ["namespace", "hpa_name"])


class SpecError(str):
    """An error message caused by the HPA's spec (upstream wraps errSpec)."""


class ReconcileSpecError(RuntimeError):
    """A reconciliation that failed because of the spec (its error label is "spec")."""


def observe_reconciliation_result(action: str, error: str, seconds: float) -> None:
    """Upstream: monitor.ObserveReconciliationResult"""
    RECONCILIATIONS_TOTAL.labels(action, error).inc()
    RECONCILIATION_DURATION.labels(action, error).observe(seconds)


def observe_metric_computation_result(action: str, error: str, seconds: float, metric_type: str) -> None:
    """Upstream: monitor.ObserveMetricComputationResult"""
    METRIC_COMPUTATION_TOTAL.labels(action, error, metric_type).inc()
    METRIC_COMPUTATION_DURATION.labels(action, error, metric_type).observe(seconds)


def action_for(proposal: int, current: int) -> str:
    return SCALE_UP if proposal > current else SCALE_DOWN if proposal < current else NONE


def observe_hpa_addition() -> None:
    NUM_HORIZONTAL_POD_AUTOSCALERS.inc()


def observe_hpa_deletion(namespace: str, name: str) -> None:
    NUM_HORIZONTAL_POD_AUTOSCALERS.dec()
    try:
        DESIRED_REPLICAS.remove(namespace, name)
    except KeyError:
        pass


def observe_desired_replicas(namespace: str, name: str, replicas: int) -> None:
    DESIRED_REPLICAS.labels(namespace, name).set(replicas)
