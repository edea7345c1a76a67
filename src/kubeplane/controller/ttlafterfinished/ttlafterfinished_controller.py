"""The TTL-after-finished controller: delete a finished Job spec.ttlSecondsAfterFinished
seconds after it finished (its Complete or Failed condition's lastTransitionTime).

A Job that is not due yet is re-queued for the moment it will be; at that moment the Job is
read live once more (its TTL may have changed meanwhile) and deleted with a UID
precondition and foreground propagation, so its pods go with it.

Upstream: pkg/controller/ttlafterfinished/ttlafterfinished_controller.go
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from prometheus_client import Histogram

from ...api import errors
from ...api.types import ObjectName, batch_v1
from ...client.tools.cache import ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339
from ..job.util import JOB_COMPLETE, JOB_FAILED, is_job_finished

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import JobLister

log = logging.getLogger(__name__)

# Upstream: metrics.JobDeletionDurationSeconds (pkg/controller/ttlafterfinished/metrics).
JOB_DELETION_DURATION_SECONDS = Histogram(
    "ttl_after_finished_controller_job_deletion_duration_seconds",
    "[ALPHA] The time it took to delete the job since it became eligible for deletion",
    buckets=[0.1 * 2 ** i for i in range(14)])      # ExponentialBuckets(100ms, 2, 14): 0.1 s .. 13.6 min


class TTLAfterFinishedController:
    """Upstream: Controller"""

    def __init__(self, job_informer: ResourceInformer[JobLister], client: Clientset, *,
                 clock: Clock = REAL_CLOCK) -> None:
        self.client, self.clock = client, clock
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="ttl_jobs_to_delete", clock=clock))
        inf = job_informer.informer()
        inf.add_event_handler(ResourceEventHandlerFuncs(self.add_job, self.update_job, None))
        self._informer = inf
        self.j_lister = job_informer.lister()
        self.j_lister_synced = inf.has_synced     # test seam

    async def run(self, workers: int = 5) -> None:
        """Upstream: Run (--concurrent-ttl-after-finished-syncs, default 5)."""
        log.info("Starting TTL after finished controller")
        try:
            if not self.j_lister_synced():
                await self._informer.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for i in range(workers):
                    tg.create_task(self._worker(), name=f"ttl-after-finished-worker-{i}")
        finally:
            self.queue.shut_down()
            log.info("Shutting down TTL after finished controller")

    async def _worker(self) -> None:
        while await process_next_work_item(self.queue, self.process_job, self._handle_err):
            pass

    def _handle_err(self, err: Exception | None, key: ObjectName) -> None:
        if err is None:
            self.queue.forget(key)
            return
        log.info("error cleaning up Job", extra={"key": str(key), "err": repr(err)})
        self.queue.add_rate_limited(key)

    def add_job(self, job: batch_v1.Job) -> None:
        """Upstream: addJob"""
        if job.metadata.deletion_timestamp is None and needs_cleanup(job):
            self.enqueue(job)

    def update_job(self, old: batch_v1.Job, cur: batch_v1.Job) -> None:
        """Upstream: updateJob"""
        self.add_job(cur)

    def enqueue(self, job: batch_v1.Job) -> None:
        self.queue.add(ObjectName(job.metadata.namespace or "", job.metadata.name or ""))

    def enqueue_after(self, job: batch_v1.Job, after: float) -> None:
        self.queue.add_after(ObjectName(job.metadata.namespace or "", job.metadata.name or ""), after)

    async def process_job(self, key: ObjectName) -> None:
        """Delete the Job if its TTL has expired, checked twice: on the cached Job, then on a
        live read (the TTL may have been changed). Upstream: processJob
        """
        try:
            job = self.j_lister.jobs(key.namespace).get(key.name)
        except errors.NotFound:
            return
        if self.process_ttl(job) is None:
            return
        jobs = self.client.batch_v1().jobs(key.namespace)
        try:
            fresh = await jobs.get(key.name)
        except errors.NotFound:
            return
        expired_at = self.process_ttl(fresh)
        if expired_at is None:
            return
        log.info("Cleaning up Job", extra={"job": str(key)})
        try:
            await jobs.delete(key.name, propagation_policy="Foreground",
                              preconditions={"uid": fresh.metadata.uid or ""})
        except errors.NotFound:
            return
        JOB_DELETION_DURATION_SECONDS.observe(max(0.0, self.clock.now() - expired_at))

    def process_ttl(self, job: batch_v1.Job) -> float | None:
        """The time the Job expired at, or None if it has not (then it is re-queued for when
        it will). Upstream: processTTL
        """
        if job.metadata.deletion_timestamp is not None or not needs_cleanup(job):
            return None
        now = self.clock.now()
        left, expire_at = time_left(job, now)
        if left <= 0:
            return expire_at
        self.enqueue_after(job, left)
        return None


def needs_cleanup(job: batch_v1.Job) -> bool:
    """A TTL is set and the Job has finished. Upstream: needsCleanup"""
    return job.spec is not None and job.spec.ttl_seconds_after_finished is not None and is_job_finished(job)


def time_left(job: batch_v1.Job, since: float) -> tuple[float, float]:
    """(seconds until the Job expires, when it expires). Example: finished at 10:00:00 with a
    TTL of 100 s, now 10:01:00 -> (40, 10:01:40). Upstream: timeLeft
    """
    finish_at, expire_at = get_finish_and_expire_time(job)
    if finish_at > since:
        log.info("Warning: Found Job finished in the future. This is likely due to time skew in the cluster. "
                 "Job cleanup will be deferred.", extra={"job": job.metadata.name})
    return expire_at - since, expire_at


def get_finish_and_expire_time(job: batch_v1.Job) -> tuple[float, float]:
    """Upstream: getFinishAndExpireTime"""
    finish_at = job_finish_time(job)
    return finish_at, finish_at + (job.spec.ttl_seconds_after_finished or 0)


def job_finish_time(job: batch_v1.Job) -> float:
    """The lastTransitionTime of the Job's True Complete/Failed condition. Upstream: jobFinishTime"""
    for c in (job.status.conditions if job.status else None) or ():
        if c.type in (JOB_COMPLETE, JOB_FAILED) and c.status == "True":
            if not c.last_transition_time:
                raise ValueError(f"unable to find the time when the Job {job.metadata.namespace}/"
                                 f"{job.metadata.name} finished")
            return parse_rfc3339(c.last_transition_time)
    raise ValueError(f"unable to find the status of the finished Job {job.metadata.namespace}/{job.metadata.name}")
