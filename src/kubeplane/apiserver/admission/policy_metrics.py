"""The admission policies' metrics, as plain counters read at scrape time:

    apiserver_validating_admission_policy_check_total / _check_duration_seconds
        {policy, policy_binding, error_type, enforcement_action}
    apiserver_mutating_admission_policy_check_total / _check_duration_seconds
        {policy, policy_binding, error_type}

A ValidatingAdmissionPolicy observes every failed validation once per action of its binding
(deny, warn, audit) and an evaluation error its Ignore failure policy lets pass (allow); a
passing validation is not observed. A MutatingAdmissionPolicy observes every mutation it runs.
error_type is no_error, compile_error, out_of_budget or invalid_error, read off the error's text
as upstream's ErrorType does.

Upstream: pkg/admission/plugin/policy/validating/metrics/metrics.go and errors.go (ErrorType),
validating/dispatcher.go (where each Observe* is called), and the mutating twins.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

VALIDATING = "validating_admission_policy"
MUTATING = "mutating_admission_policy"
BUCKETS = (0.0000005, 0.001, 0.01, 0.1, 1.0)
_LABELS = {VALIDATING: ("policy", "policy_binding", "error_type", "enforcement_action"),
           MUTATING: ("policy", "policy_binding", "error_type")}
_HELP = {
    (VALIDATING, "total"): ("[BETA] Validation admission policy check total, labeled by policy and further "
                            "identified by binding and enforcement action taken."),
    (VALIDATING, "duration"): ("[BETA] Validation admission latency for individual validation expressions in seconds, "
                               "labeled by policy and further including binding and enforcement action taken."),
    (MUTATING, "total"): ("[ALPHA] Mutation admission policy check total, labeled by policy and further identified "
                          "by binding."),
    (MUTATING, "duration"): ("[ALPHA] Mutation admission latency for individual mutation expressions in seconds, "
                             "labeled by policy and binding."),
}
COMPILE_PREFIX = "compilation"
OUT_OF_BUDGET_PREFIX = "validation failed due to running out of cost budget"

# (subsystem, labels) -> bucket counts (the last one +Inf), then the sum of seconds
_checks: dict[tuple[str, tuple[str, ...]], list[float]] = {}


def error_type(error: str | None) -> str:
    """Upstream: ErrorType — by the error's text."""
    if not error:
        return "no_error"
    if error.startswith(COMPILE_PREFIX):
        return "compile_error"
    if error.startswith(OUT_OF_BUDGET_PREFIX):
        return "out_of_budget"
    return "invalid_error"


def observe(subsystem: str, labels: tuple[str, ...], elapsed: float) -> None:
    """One check: the counter and the latency histogram of its labels."""
    h = _checks.get((subsystem, labels))
    if h is None:
        h = _checks[(subsystem, labels)] = [0.0] * (len(BUCKETS) + 2)
    h[next((i for i, b in enumerate(BUCKETS) if elapsed <= b), len(BUCKETS))] += 1
    h[-1] += elapsed


def collect() -> Iterator[Any]:
    """The families for prometheus_client (apiserver/metrics.py's collector yields them)."""
    from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily
    from prometheus_client.utils import floatToGoString

    for subsystem, label_names in _LABELS.items():
        total = CounterMetricFamily(f"apiserver_{subsystem}_check_total", _HELP[(subsystem, "total")],
                                    labels=label_names)
        duration = HistogramMetricFamily(f"apiserver_{subsystem}_check_duration_seconds",
                                         _HELP[(subsystem, "duration")], labels=label_names)
        for (sub, labels), h in list(_checks.items()):
            if sub != subsystem:
                continue
            buckets, acc = [], 0.0
            for bound, n in zip(BUCKETS, h):
                acc += n
                buckets.append((floatToGoString(bound), acc))
            count = acc + h[len(BUCKETS)]
            buckets.append(("+Inf", count))
            total.add_metric(labels, count)
            duration.add_metric(labels, buckets, h[-1])
        yield total
        yield duration


def reset() -> None:
    """Upstream: Reset (tests)."""
    _checks.clear()
