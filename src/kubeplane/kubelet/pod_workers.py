"""Pod workers: every sync of one pod runs alone, with the latest pod, as often as needed.

Upstream's podWorkers (pod_workers.go) keeps a goroutine per pod fed by UpdatePod, with
states SyncPod -> TerminatingPod -> TerminatedPod. Here the same guarantees come from a
delaying work queue of pod UIDs, level-triggered: an informer event, a runtime event (our
PLEG) or a back-off timer enqueues the UID; a worker calls sync(uid), which re-reads the
latest pod and runtime state and decides what phase the pod is in. The queue never hands
one UID to two workers and coalesces repeated enqueues, so a burst of events for a pod
costs one sync.

Each sync is timed into kubelet_pod_worker_duration_seconds{operation_type}, from the latest
request it serves to its end, as upstream times each work item from its StartTime (a later
update replaces a pending one, time and type). The type is the request's: "create" (a pod
seen for the first time; kept until its first sync, which is that pod's create), "update" (a
change from the API server), "sync" (the runtime, a probe, a timer, a retry), or the sync's
own verdict, "terminated", when it found the pod gone and forgot it. A sync woken by a timer
alone is timed from its start.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from ..client.util.workqueue import DelayingQueue, DelayingQueueOptions
from ..client.util.workqueue.worker import process_next_work_item
from ..utils.clock import REAL_CLOCK, Clock
from . import metrics
from .metrics import CREATE, SYNC

log = logging.getLogger(__name__)

RETRY_AFTER = 1.0     # seconds before a sync that raised is retried (upstream: backOffPeriod jittered)


class PodWorkers:
    def __init__(self, sync: Callable[[str], Awaitable[str | None]], *, clock: Clock = REAL_CLOCK,
                 workers: int = 1) -> None:
        self.sync = sync                  # test seam; returns an operation type to report, or None
        self.workers = workers
        self.queue: DelayingQueue[str] = DelayingQueue(DelayingQueueOptions("pod-workers", clock))
        self.syncs = 0
        self._queued: set[str] = set()    # uids enqueued (not after a delay) whose sync has not begun
        self._now = clock.monotonic
        self._requested: dict[str, tuple[float, str]] = {}   # uid -> (when, operation type) not yet served

    def enqueue(self, uid: str, operation: str = SYNC) -> None:
        """Sync uid soon. Upstream: UpdatePod"""
        self._queued.add(uid)
        req = self._requested.get(uid)
        if req is None or req[1] != CREATE:
            self._requested[uid] = (self._now(), operation)
        self.queue.add(uid)

    def pending(self, uid: str) -> bool:
        """Whether a sync of uid is queued to run soon (not counting delayed ones)."""
        return uid in self._queued

    def enqueue_after(self, uid: str, seconds: float) -> None:
        """Sync uid after seconds (back-off expiry, probe schedule). Upstream: workQueue.Enqueue"""
        self.queue.add_after(uid, seconds)

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(self.workers):
                    tg.create_task(self._worker())
        finally:
            self.queue.shut_down()

    async def _worker(self) -> None:
        while await process_next_work_item(self.queue, self._sync, self._handle_err):
            pass

    async def _sync(self, uid: str) -> None:
        self.syncs += 1
        self._queued.discard(uid)
        start, operation = self._requested.pop(uid, None) or (self._now(), SYNC)
        done: str | None = None
        try:
            done = await self.sync(uid)
        finally:
            metrics.observe_pod_worker(done or operation, self._now() - start)

    def _handle_err(self, err: Exception | None, uid: str) -> None:
        if err is not None:
            log.error("Error syncing pod, skipping", exc_info=err, extra={"podUID": uid})
            self.queue.add_after(uid, RETRY_AFTER)
