"""Scheduler metrics, registered once in prometheus_client's default REGISTRY.

    scheduler_schedule_attempts_total{result, profile}             scheduled | unschedulable | error
    scheduler_scheduling_attempt_duration_seconds{result, profile} algorithm + binding, 1 ms .. 16 s
    scheduler_pending_pods{queue}                                  active | backoff | unschedulable | gated
    scheduler_queue_incoming_pods_total{queue, event}              pods entering a sub-queue, and why

Once per scheduling attempt, not per node: a counter increment and a histogram observation
cost about a microsecond against tens for an attempt. The pending-pod gauges are read from
the queue when scraped.

Upstream: pkg/scheduler/metrics/metrics.go (names, help, buckets; STABLE) and metric_recorder.go.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import Counter, Gauge, Histogram

if TYPE_CHECKING:
    from .internal.queue.scheduling_queue import PriorityQueue

SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"

SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts",
    "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
    "scheduled, while 'error' means an internal scheduler problem.", ["result", "profile"])
SCHEDULING_LATENCY = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)", ["result", "profile"],
    buckets=[0.001 * 2 ** i for i in range(15)])          # Upstream: ExponentialBuckets(0.001, 2, 15)
PENDING_PODS = Gauge(
    "scheduler_pending_pods",
    "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
    "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
    "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler "
    "never attempted to schedule because they are gated.", ["queue"])
QUEUE_INCOMING_PODS = Counter(
    "scheduler_queue_incoming_pods",
    "[STABLE] Number of pods added to scheduling queues by event and queue type.", ["queue", "event"])


# Label children by label values: labels() validates and locks on every call, ~1 µs.
_attempts: dict[tuple[str, str], tuple[Any, Any]] = {}
_incoming: dict[tuple[str, str], Any] = {}


def observe_attempt(result: str, profile: str, seconds: float) -> None:
    """Upstream: metrics.PodScheduled / PodUnschedulable / PodScheduleError"""
    children = _attempts.get((result, profile))
    if children is None:
        children = _attempts[result, profile] = (SCHEDULE_ATTEMPTS.labels(result, profile),
                                                  SCHEDULING_LATENCY.labels(result, profile))
    children[0].inc()
    children[1].observe(seconds)


def incoming(queue: str, event: str) -> None:
    """A pod entered `queue` (active, backoff, unschedulable) because of `event`."""
    child = _incoming.get((queue, event))
    if child is None:
        child = _incoming[queue, event] = QUEUE_INCOMING_PODS.labels(queue, event)
    child.inc()


def watch_pending_pods(q: PriorityQueue) -> None:
    """Report q's sub-queue sizes (the last queue made wins: one scheduler per process)."""
    PENDING_PODS.labels("active").set_function(lambda: len(q.active_q))
    PENDING_PODS.labels("backoff").set_function(lambda: len(q.backoff_q))
    PENDING_PODS.labels("unschedulable").set_function(lambda: len(q.unschedulable_pods))
    PENDING_PODS.labels("gated").set(0)          # scheduling gates are not implemented
