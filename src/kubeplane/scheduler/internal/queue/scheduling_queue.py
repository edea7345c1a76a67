"""The scheduling queue: activeQ, backoffQ and unschedulablePods.

Upstream: pkg/scheduler/backend/queue/scheduling_queue.go (PriorityQueue). A pod waits in
exactly one place:

* activeQ — ready to be tried, a heap in QueueSort order (priority, then age);
* backoffQ — failed recently, waiting out its backoff (1 s doubling to 10 s);
* unschedulablePods — failed because no node fits; it stays until a cluster event that
  might help (a node added or changed, a pod deleted) moves it, or for at most 5 minutes;
* in flight — popped and being scheduled; the cycle ends with done() and, on failure,
  add_unschedulable_if_not_present().

Queueing hints (per-plugin event filtering) are not implemented: every move request moves
every unschedulable pod, which is upstream's behaviour with the hints feature off.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from ....api.types.core_v1 import Pod
from ....utils.clock import REAL_CLOCK, Clock
from ... import metrics
from ...framework.plugins.queuesort import PrioritySort
from ...framework.types import PodInfo, QueuedPodInfo
from ..heap import Heap

log = logging.getLogger(__name__)

DEFAULT_POD_INITIAL_BACKOFF = 1.0               # seconds; Upstream: DefaultPodInitialBackoffDuration
DEFAULT_POD_MAX_BACKOFF = 10.0                  # Upstream: DefaultPodMaxBackoffDuration
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS = 300.0   # Upstream: DefaultPodMaxInUnschedulablePodsDuration
FLUSH_BACKOFF_Q_PERIOD = 1.0
FLUSH_UNSCHEDULABLE_PODS_PERIOD = 30.0

# Cluster events (labels as upstream's ClusterEvent.Label()).
NODE_ADD = "NodeAdd"
NODE_UPDATE = "NodeUpdate"
ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_UPDATE = "AssignedPodUpdate"
ASSIGNED_POD_DELETE = "AssignedPodDelete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
POD_ADD = "PodAdd"                                # the rest label only queue_incoming_pods_total
POD_UPDATE = "PodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"


def key_of(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _stripped(pod: Pod) -> tuple[Any, Any]:
    meta = msgspec.structs.replace(pod.metadata, resource_version=None, generation=None, managed_fields=None,
                                   finalizers=None)
    return meta, pod.spec


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """Whether anything but status, resourceVersion, generation, managedFields and finalizers
    changed (a status-only update cannot make a pod schedulable). Upstream: isPodUpdated"""
    return _stripped(old) != _stripped(new)


class PriorityQueue:
    """Upstream: PriorityQueue.

    Invariant (check_invariants): each pod key is in at most one of active_q, backoff_q,
    unschedulable_pods and in_flight; backoff_q is ordered by backoff expiry; the
    scheduling cycle counts pops, and move_request_cycle is the cycle of the last move
    request (a pod that fails in a cycle <= move_request_cycle goes to backoff_q, since
    the event that might have helped it arrived while it was being scheduled).
    """

    def __init__(self, *, clock: Clock = REAL_CLOCK, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None,
                 pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
                 pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
                 pod_max_in_unschedulable_pods: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS) -> None:
        self.clock = clock
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable_pods = pod_max_in_unschedulable_pods
        less = less or PrioritySort().less
        # PrioritySort's order as a sort key: compared at C level (Heap's sort_key)
        sort_key = PrioritySort.sort_key if getattr(less, "__func__", None) is PrioritySort.less else None
        self.active_q: Heap[QueuedPodInfo] = Heap(_key, less, sort_key)
        self.backoff_q: Heap[QueuedPodInfo] = Heap(_key, self._backoff_less)
        self.unschedulable_pods: dict[str, QueuedPodInfo] = {}
        self.in_flight: dict[str, QueuedPodInfo] = {}
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self.closed = False
        self._wakeup = asyncio.Event()
        metrics.watch_pending_pods(self)

    # --- backoff arithmetic ----------------------------------------------------------------

    def calculate_backoff_duration(self, pinfo: QueuedPodInfo) -> float:
        """initial * 2^(attempts-1), capped: 1 attempt -> 1 s, 2 -> 2 s, 4 -> 8 s, 5+ -> 10 s.

        Upstream: PriorityQueue.calculateBackoffDuration
        """
        duration = self.pod_initial_backoff
        for _ in range(1, pinfo.attempts):
            if duration > self.pod_max_backoff - duration:
                return self.pod_max_backoff
            duration += duration
        return duration

    def get_backoff_time(self, pinfo: QueuedPodInfo) -> float:
        return pinfo.timestamp + self.calculate_backoff_duration(pinfo)

    def is_pod_backing_off(self, pinfo: QueuedPodInfo) -> bool:
        return self.get_backoff_time(pinfo) > self.clock.now()

    def _backoff_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.get_backoff_time(a) < self.get_backoff_time(b)

    # --- adding and popping ------------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new unscheduled pod: straight to activeQ. Upstream: PriorityQueue.Add"""
        key = key_of(pod)
        if key in self.in_flight:
            self.in_flight[key].pod_info.update(pod)
            return
        pinfo = self._take(key) or QueuedPodInfo(PodInfo(pod))
        pinfo.pod_info.update(pod)
        pinfo.timestamp = self.clock.now()
        self._to_active(pinfo, POD_ADD)

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for and take the head of activeQ (None once closed). Upstream: PriorityQueue.Pop"""
        while not self.active_q:
            if self.closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._pop_now()

    def _pop_now(self) -> QueuedPodInfo:
        pinfo = self.active_q.pop()
        self.scheduling_cycle += 1
        pinfo.attempts += 1
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self.clock.now()
        self.in_flight[pinfo.key] = pinfo
        return pinfo

    def done(self, key: str) -> None:
        """The scheduling (and binding) of the popped pod is over. Upstream: PriorityQueue.Done"""
        self.in_flight.pop(key, None)

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        """Requeue a pod whose attempt failed: backoffQ for errors or when a move request
        came during its cycle, unschedulablePods otherwise.

        Upstream: PriorityQueue.AddUnschedulableIfNotPresent
        """
        key = pinfo.key
        self.in_flight.pop(key, None)
        if key in self.active_q or key in self.backoff_q or key in self.unschedulable_pods:
            raise ValueError(f"pod {key} is already present in a queue")
        pinfo.timestamp = self.clock.now()
        if not pinfo.unschedulable_plugins or self.move_request_cycle >= pod_scheduling_cycle:
            self.backoff_q.add_or_update(pinfo)
            metrics.incoming("backoff", SCHEDULE_ATTEMPT_FAILURE)
        else:
            self.unschedulable_pods[key] = pinfo
            metrics.incoming("unschedulable", SCHEDULE_ATTEMPT_FAILURE)

    # --- updates and deletes -------------------------------------------------------------------

    def update(self, old: Pod | None, new: Pod) -> None:
        """Upstream: PriorityQueue.Update"""
        key = key_of(new)
        if key in self.in_flight:
            self.in_flight[key].pod_info.update(new)
            return
        for q in (self.active_q, self.backoff_q):
            pinfo = q.get(key)
            if pinfo is not None:
                pinfo.pod_info.update(new)
                q.add_or_update(pinfo)
                return
        pinfo = self.unschedulable_pods.get(key)
        if pinfo is not None:
            pinfo.pod_info.update(new)
            if old is not None and is_pod_updated(old, new):
                del self.unschedulable_pods[key]
                self._move(pinfo, POD_UPDATE)
            return
        self.add(new)

    def delete(self, pod: Pod) -> None:
        """Forget the pod wherever it waits. Upstream: PriorityQueue.Delete"""
        self._take(key_of(pod))
        self.in_flight.pop(key_of(pod), None)

    def _take(self, key: str) -> QueuedPodInfo | None:
        return self.active_q.delete(key) or self.backoff_q.delete(key) or self.unschedulable_pods.pop(key, None)

    # --- moves -------------------------------------------------------------------------------

    def move_all_to_active_or_backoff_queue(self, event: str, pre_check: Callable[[Pod], bool] | None = None) -> None:
        """A cluster event may have made pods schedulable: move every unschedulable pod
        (that passes pre_check) to activeQ, or to backoffQ if still backing off.

        Upstream: PriorityQueue.MoveAllToActiveOrBackoffQueue
        """
        pods = [p for p in self.unschedulable_pods.values() if pre_check is None or pre_check(p.pod)]
        self._move_pods_to_active_or_backoff_queue(pods, event)

    def assigned_pod_added(self, pod: Pod) -> None:
        """Pods with affinity to the new pod may fit now. Upstream: AssignedPodAdded"""
        self._move_pods_to_active_or_backoff_queue(self._unschedulable_pods_with_matching_affinity_term(pod),
                                                   ASSIGNED_POD_ADD)

    def assigned_pod_updated(self, old: Pod | None, new: Pod) -> None:
        """Upstream: AssignedPodUpdated"""
        if not self.unschedulable_pods:           # nothing to move (the common case)
            self.move_request_cycle = self.scheduling_cycle
            return
        self._move_pods_to_active_or_backoff_queue(self._unschedulable_pods_with_matching_affinity_term(new),
                                                   ASSIGNED_POD_UPDATE)

    def _unschedulable_pods_with_matching_affinity_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """Upstream: getUnschedulablePodsWithMatchingAffinityTerm"""
        return [p for p in self.unschedulable_pods.values()
                if any(t.matches(pod, None) for t in p.pod_info.required_affinity_terms)]

    def _move_pods_to_active_or_backoff_queue(self, pods: list[QueuedPodInfo], event: str) -> None:
        for pinfo in pods:
            if self.unschedulable_pods.pop(pinfo.key, None) is not None:
                self._move(pinfo, event)
        self.move_request_cycle = self.scheduling_cycle

    def _move(self, pinfo: QueuedPodInfo, event: str) -> None:
        if self.is_pod_backing_off(pinfo):
            self.backoff_q.add_or_update(pinfo)
            metrics.incoming("backoff", event)
        else:
            self._to_active(pinfo, event)

    def _to_active(self, pinfo: QueuedPodInfo, event: str) -> None:
        self.active_q.add_or_update(pinfo)
        self._wakeup.set()
        metrics.incoming("active", event)

    def flush_backoff_q_completed(self) -> None:
        """Move pods whose backoff expired to activeQ. Upstream: flushBackoffQCompleted"""
        while self.backoff_q:
            head = self.backoff_q.peek()
            assert head is not None
            if self.is_pod_backing_off(head):
                return
            self.backoff_q.pop()
            self._to_active(head, BACKOFF_COMPLETE)

    def flush_unschedulable_pods_leftover(self) -> None:
        """Move pods stuck in unschedulablePods for longer than 5 minutes.

        Upstream: flushUnschedulablePodsLeftover
        """
        now = self.clock.now()
        stale = [p for p in self.unschedulable_pods.values()
                 if now - p.timestamp > self.pod_max_in_unschedulable_pods]
        if stale:
            self._move_pods_to_active_or_backoff_queue(stale, UNSCHEDULABLE_TIMEOUT)

    async def run(self) -> None:
        """The two periodic flushes, until cancelled. Upstream: PriorityQueue.Run"""
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._every(FLUSH_BACKOFF_Q_PERIOD, self.flush_backoff_q_completed))
            tg.create_task(self._every(FLUSH_UNSCHEDULABLE_PODS_PERIOD, self.flush_unschedulable_pods_leftover))

    async def _every(self, period: float, f: Callable[[], None]) -> None:
        while not self.closed:
            await self.clock.sleep(period)
            f()

    def close(self) -> None:
        self.closed = True
        self._wakeup.set()

    # --- introspection -----------------------------------------------------------------------

    def pending_pods(self) -> tuple[list[Pod], str]:
        """Upstream: PendingPods: all waiting pods and a summary line."""
        active = [p.pod for p in self.active_q]
        backoff = [p.pod for p in self.backoff_q]
        unsched = [p.pod for p in self.unschedulable_pods.values()]
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(unsched)}"
        return active + backoff + unsched, summary

    def where(self, key: str) -> str | None:
        """Which sub-queue holds key: "active", "backoff", "unschedulable", "in_flight" or None."""
        if key in self.active_q:
            return "active"
        if key in self.backoff_q:
            return "backoff"
        if key in self.unschedulable_pods:
            return "unschedulable"
        if key in self.in_flight:
            return "in_flight"
        return None

    def check_invariants(self) -> None:
        self.active_q.check_invariants()
        self.backoff_q.check_invariants()
        places = [set(p.key for p in self.active_q), set(p.key for p in self.backoff_q),
                  set(self.unschedulable_pods), set(self.in_flight)]
        assert sum(len(s) for s in places) == len(set().union(*places)), "a pod is in two sub-queues"
        assert all(k == p.key for k, p in self.unschedulable_pods.items())
        assert self.move_request_cycle <= self.scheduling_cycle


def _key(p: QueuedPodInfo) -> str:
    return p.key
