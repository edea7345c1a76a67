"""The admission webhook metrics upstream exposes, as plain counters read at scrape time.

Upstream: AdmissionMetrics.ObserveWebhook / ObserveWebhookRejection / ObserveWebhookFailOpen
(apiserver/pkg/admission/metrics/metrics.go). `type` is "admit" (mutating) or "validating".
apiserver/metrics.py's collector yields collect()'s families on /metrics.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from ..interface import Attributes

DURATION_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25)
_DURATION_HELP = ("[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out "
                  "for each operation and API resource and type (validate or admit).")
_REJECTION_HELP = ("[ALPHA] Admission webhook rejection count, identified by name and broken out for each "
                   "admission type (validating or admit) and operation. Additional labels specify an error type "
                   "(calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) "
                   "and optionally a non-zero rejection code if the webhook rejects the request with an HTTP "
                   "status code (honored by the apiserver when the code is greater or equal to 400). Codes "
                   "greater than 600 are truncated to 600, to keep the metrics cardinality bounded.")
_FAIL_OPEN_HELP = ("[ALPHA] Admission webhook fail open count, identified by name and broken out for each "
                   "admission type (validating or admit).")
_REQUEST_HELP = ("[ALPHA] Admission webhook request total, identified by name and broken out for each admission "
                 "type (validating or admit) and operation. Additional labels specify whether the request was "
                 "rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep "
                 "the metrics cardinality bounded.")

# (name, type, operation, rejected) -> bucket counts, then the sum
_durations: dict[tuple[str, ...], list[float]] = {}
_rejections: dict[tuple[str, ...], int] = {}       # (name, type, operation, error_type, rejection_code)
_fail_open: dict[tuple[str, ...], int] = {}        # (name, type)
_requests: dict[tuple[str, ...], int] = {}         # (name, type, operation, code, rejected)


def observe(name: str, step: str, a: Attributes, started: float, *, rejected: bool, code: int,
            error_type: str = "") -> None:
    """One webhook call's outcome: ObserveWebhook, plus ObserveWebhookRejection when refused
    (error_type: calling_webhook_error, no_error, apiserver_internal_error) and
    ObserveWebhookFailOpen when a failed call was ignored."""
    elapsed = time.perf_counter() - started
    op = a.operation.value
    code = min(code, 600)
    key = (name, step, op, "true" if rejected else "false")
    h = _durations.get(key)
    if h is None:
        h = _durations[key] = [0.0] * (len(DURATION_BUCKETS) + 2)
    i = next((i for i, b in enumerate(DURATION_BUCKETS) if elapsed <= b), len(DURATION_BUCKETS))
    h[i] += 1
    h[-1] += elapsed
    rk = (name, step, op, str(code), key[3])
    _requests[rk] = _requests.get(rk, 0) + 1
    if rejected:
        jk = (name, step, op, error_type, str(code))
        _rejections[jk] = _rejections.get(jk, 0) + 1
    elif error_type == "calling_webhook_error":
        fk = (name, step)
        _fail_open[fk] = _fail_open.get(fk, 0) + 1


def collect() -> Iterator[Any]:
    """The families for prometheus_client (apiserver/metrics.py's collector yields them)."""
    from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily
    from prometheus_client.utils import floatToGoString

    duration = HistogramMetricFamily("apiserver_admission_webhook_admission_duration_seconds", _DURATION_HELP,
                                     labels=("name", "type", "operation", "rejected"))
    for labels, h in list(_durations.items()):
        buckets, acc = [], 0.0
        for bound, n in zip(DURATION_BUCKETS, h):
            acc += n
            buckets.append((floatToGoString(bound), acc))
        buckets.append(("+Inf", acc + h[len(DURATION_BUCKETS)]))
        duration.add_metric(labels, buckets, h[-1])
    yield duration
    for fam_name, help_, label_names, values in (
        ("apiserver_admission_webhook_rejection_count", _REJECTION_HELP,
         ("name", "type", "operation", "error_type", "rejection_code"), _rejections),
        ("apiserver_admission_webhook_fail_open_count", _FAIL_OPEN_HELP, ("name", "type"), _fail_open),
        ("apiserver_admission_webhook_request_total", _REQUEST_HELP,
         ("name", "type", "operation", "code", "rejected"), _requests),
    ):
        fam = CounterMetricFamily(fam_name, help_, labels=label_names)
        for labels, n in list(values.items()):
            fam.add_metric(labels, n)
        yield fam
