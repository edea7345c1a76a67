"""The StatefulSet controller's metrics, registered once in prometheus_client's default REGISTRY.

    statefulset_controller_statefulset_max_unavailable{statefulset_namespace, statefulset_name, pod_management_policy}
    statefulset_controller_statefulset_unavailable_replicas{...the same labels}

Set by each rolling-update step (MaxUnavailableStatefulSet): the allowed and the actual number of
unavailable pods; a deleted StatefulSet's series go. Upstream: pkg/controller/statefulset/metrics
(both ALPHA).
"""
from __future__ import annotations

from prometheus_client import Gauge

_LABELS = ["statefulset_namespace", "statefulset_name", "pod_management_policy"]
MAX_UNAVAILABLE = Gauge("statefulset_controller_statefulset_max_unavailable",
                        "[ALPHA] Maximum number of unavailable pods allowed during StatefulSet rolling updates", _LABELS)
UNAVAILABLE_REPLICAS = Gauge("statefulset_controller_statefulset_unavailable_replicas",
                             "[ALPHA] Current number of unavailable pods in StatefulSet", _LABELS)


def observe(namespace: str, name: str, policy: str, max_unavailable: int, unavailable: int) -> None:
    MAX_UNAVAILABLE.labels(namespace, name, policy).set(max_unavailable)
    UNAVAILABLE_REPLICAS.labels(namespace, name, policy).set(unavailable)


def forget(namespace: str, name: str) -> None:
    """A deleted StatefulSet's series go (whatever its policy was)."""
    for policy in ("OrderedReady", "Parallel"):
        for g in (MAX_UNAVAILABLE, UNAVAILABLE_REPLICAS):
            try:
                g.remove(namespace, name, policy)
            except KeyError:
                pass
