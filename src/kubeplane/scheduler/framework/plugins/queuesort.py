"""PrioritySort: higher priority first, then the pod that has waited longest.

Upstream: framework/plugins/queuesort/priority_sort.go
"""
from __future__ import annotations

from ....api.types.core_v1 import Pod
from ..types import QueuedPodInfo


def pod_priority(pod: Pod) -> int:
    """spec.priority, 0 when unset. Upstream: corev1helpers.PodPriority"""
    return (pod.spec.priority if pod.spec else None) or 0


class PrioritySort:
    NAME = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Upstream: PrioritySort.Less"""
        p1, p2 = pod_priority(a.pod), pod_priority(b.pod)
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    @staticmethod
    def sort_key(a: QueuedPodInfo) -> tuple[int, float]:
        """What less compares, as one value: sort_key(a) < sort_key(b) exactly when
        less(a, b) (ours: the queue's heap compares these at C level)."""
        return -pod_priority(a.pod), a.timestamp
