"""Pod GC metrics, registered once in prometheus_client's default REGISTRY.

    pod_gc_collector_force_delete_pods_total{namespace, reason}
    pod_gc_collector_force_delete_pod_errors_total{namespace, reason}

reason: terminated | orphaned | terminating_out_of_service | unscheduled_terminating.
Upstream: pkg/controller/podgc/metrics/metrics.go
"""
from __future__ import annotations

from prometheus_client import Counter

TERMINATED, ORPHANED = "terminated", "orphaned"
TERMINATING_OUT_OF_SERVICE, UNSCHEDULED_TERMINATING = "terminating_out_of_service", "unscheduled_terminating"

DELETING_PODS = Counter(
    "pod_gc_collector_force_delete_pods",
    "[ALPHA] Number of pods that are being forcefully deleted since the Pod GC Controller started.",
    ["namespace", "reason"])
DELETING_PODS_ERRORS = Counter(
    "pod_gc_collector_force_delete_pod_errors",
    "[ALPHA] Number of errors encountered when forcefully deleting the pods since the Pod GC Controller "
    "started.", ["namespace", "reason"])
