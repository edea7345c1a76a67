"""The Job controller: run a Job's pods to completion and track them with a finalizer.

Handlers only enqueue keys and do expectations bookkeeping. sync_job re-reads the listers,
claims the Job's pods (adding the batch.kubernetes.io/job-tracking finalizer on adoption),
decides whether the Job has finished (backoffLimit, podFailurePolicy, activeDeadlineSeconds,
backoffLimitPerIndex/maxFailedIndexes, successPolicy, completions), creates or deletes pods
(manage_job), and then counts finished pods: their UIDs go to status.uncountedTerminatedPods,
their finalizers are removed, and only then are they added to status.succeeded/failed. A
terminal condition (Complete/Failed) is written once nothing is left uncounted or terminating;
before it the interim SuccessCriteriaMet/FailureTarget condition records the decision.

Upstream: pkg/controller/job/job_controller.go (Kubernetes 1.37 with its default feature
gates: JobPodReplacementPolicy, JobManagedBy, JobSuccessPolicy, JobBackoffLimitPerIndex,
PodIndexLabel all on).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence, cast

import orjson

from ...api import errors, labels
from ...api.types import ObjectName, batch_v1, core_v1, meta_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.default_rate_limiters import ItemExponentialFailureRateLimiter
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock, rfc3339
from .. import controller_utils as cu
from ..controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from . import indexed_job_utils as ix
from . import metrics
from .backoff_utils import BackoffRecord, BackoffStore, get_finished_time, get_remaining_time_per_index
from .indexed_job_utils import OrderedIntervals, get_completion_index, has_job_tracking_finalizer
from .pod_failure_policy import FAIL_INDEX, match_pod_failure_policy
from .success_policy import match_success_policy
from .tracking_utils import UIDTrackingExpectations
from .util import (
    INDEXED, JOB_COMPLETE, JOB_CONTROLLER_NAME, JOB_FAILED, JOB_FAILURE_TARGET, JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
    JOB_REASON_COMPLETIONS_REACHED, JOB_REASON_DEADLINE_EXCEEDED, JOB_REASON_FAILED_INDEXES,
    JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED, JOB_REASON_POD_FAILURE_POLICY, JOB_REASON_SUCCESS_POLICY,
    JOB_SUCCESS_CRITERIA_MET, JOB_SUSPENDED, JOB_TRACKING_FINALIZER, NON_INDEXED, find_condition_by_type,
    is_job_finished, parse_time,
)

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import JobLister, PodLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

JOB_KIND = cu.GroupVersionKind("batch", "v1", "Job")

# Upstream: DefaultJobApiBackOff / MaxJobApiBackOff (the queue's failure back-off),
# MaxUncountedPods (keeps .status.uncountedTerminatedPods under ~20 KB), MaxPodCreateDeletePerSync.
DEFAULT_JOB_API_BACK_OFF = 1.0
MAX_JOB_API_BACK_OFF = 60.0
MAX_UNCOUNTED_PODS = 500
MAX_POD_CREATE_DELETE_PER_SYNC = 500


@dataclass(frozen=True, slots=True)
class JobControllerOptions:
    workers: int = 5                       # --concurrent-job-syncs
    # Pod events and status updates sync a Job after this long, so that a burst of pod
    # changes makes one sync (seconds). Upstream: syncJobBatchPeriod.
    sync_job_batch_period: float = 1.0
    max_uncounted_pods: int = MAX_UNCOUNTED_PODS
    max_pod_create_delete_per_sync: int = MAX_POD_CREATE_DELETE_PER_SYNC


@dataclass
class SyncJobCtx:
    """What one sync has found out about a Job. Upstream: syncJobCtx"""

    job: batch_v1.Job
    pods: list[core_v1.Pod]
    active_pods: list[core_v1.Pod]
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_rm_finalizers: frozenset[str]
    ready: int = 0
    terminating: int = 0
    succeeded: int = 0
    failed: int = 0
    finished_condition: batch_v1.JobCondition | None = None
    prev_succeeded_indexes: OrderedIntervals = field(default_factory=OrderedIntervals)
    succeeded_indexes: OrderedIntervals = field(default_factory=OrderedIntervals)
    failed_indexes: OrderedIntervals | None = None
    new_backoff_record: BackoffRecord = field(default_factory=lambda: BackoffRecord(""))
    pods_with_delayed_deletion_per_index: dict[int, core_v1.Pod] = field(default_factory=dict)
    action: str = metrics.RECONCILING                  # what the sync did, for the metrics
    policy_actions: dict[str, int] = field(default_factory=dict)   # failed pods per pod failure policy action


class _LogRecorder:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason, "note": message})


class JobController:
    """Keeps every Job's pods in line with its spec. Upstream: Controller"""

    def __init__(self, pod_informer: ResourceInformer[PodLister], job_informer: ResourceInformer[JobLister],
                 client: Clientset, *, clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: JobControllerOptions = JobControllerOptions()) -> None:
        self.client, self.clock, self.options = client, clock, options
        self.recorder = cast("EventRecorder", recorder if recorder is not None else _LogRecorder())
        self.pod_control: cu.PodControlInterface = cu.RealPodControl(client, self.recorder)    # test seam
        self.expectations = cu.ControllerExpectations(clock)
        self.finalizer_expectations = UIDTrackingExpectations()
        self.pod_backoff_store = BackoffStore()
        # Failed syncs retry after 1 s doubling to 1 min (upstream's own limiter, not the
        # default controller one); each queue has its own: limiters keep state.
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(RateLimitingQueueOptions(
            name="job", clock=clock,
            rate_limiter=ItemExponentialFailureRateLimiter(DEFAULT_JOB_API_BACK_OFF, MAX_JOB_API_BACK_OFF)))
        self.orphan_queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(RateLimitingQueueOptions(
            name="job_orphan_pod", clock=clock,
            rate_limiter=ItemExponentialFailureRateLimiter(DEFAULT_JOB_API_BACK_OFF, MAX_JOB_API_BACK_OFF)))
        jinf, pinf = job_informer.informer(), pod_informer.informer()
        jinf.add_event_handler(ResourceEventHandlerFuncs(self.add_job, self.update_job, self.delete_job))
        pinf.add_event_handler(ResourceEventHandlerFuncs(self.add_pod, self.update_pod,
                                                         lambda obj: self.delete_pod(obj, True)))
        cu.add_pod_controller_uid_indexer(pinf.get_indexer())
        self._informers = (jinf, pinf)
        self.job_lister = job_informer.lister()
        self.pod_lister = pod_informer.lister()
        self.pod_indexer = pinf.get_indexer()
        self.job_lister_synced = jinf.has_synced          # test seam
        self.pod_lister_synced = pinf.has_synced          # test seam
        self.sync_handler = self.sync_job                 # test seam
        self.update_status_handler = self.update_job_status   # test seam

    # --- run loop -----------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run the workers and the orphan worker. Upstream: Run"""
        log.info("Starting job controller")
        try:
            for synced, inf in zip((self.job_lister_synced, self.pod_lister_synced), self._informers):
                if not synced():
                    await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for i in range(workers or self.options.workers):
                    tg.create_task(self._worker(), name=f"job-worker-{i}")
                tg.create_task(self._orphan_worker(), name="job-orphan-worker")
        finally:
            self.queue.shut_down()
            self.orphan_queue.shut_down()
            log.info("Shutting down job controller")

    async def _worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self._handle_err):
            pass

    async def _orphan_worker(self) -> None:
        while await process_next_work_item(self.orphan_queue, self.sync_orphan_pod, self._handle_orphan_err):
            pass

    def _handle_err(self, err: Exception | None, key: ObjectName) -> None:
        if err is None:
            self.queue.forget(key)
            return
        log.info("syncing job", extra={"key": str(key), "err": repr(err)})
        self.queue.add_rate_limited(key)

    def _handle_orphan_err(self, err: Exception | None, key: ObjectName) -> None:
        if err is None:
            self.orphan_queue.forget(key)
            return
        log.info("Error syncing orphan pod", extra={"key": str(key), "err": repr(err)})
        self.orphan_queue.add_rate_limited(key)

    # --- enqueueing ----------------------------------------------------------------------------

    def enqueue_sync_job_immediately(self, job: batch_v1.Job) -> None:
        """For Job events (creation, deletion, spec update). Upstream: enqueueSyncJobImmediately"""
        self.queue.add(_key(job))

    def enqueue_sync_job_batched(self, job: batch_v1.Job) -> None:
        """For pod events and status updates: one sync per batch period. Upstream: enqueueSyncJobBatched"""
        self.queue.add_after(_key(job), self.options.sync_job_batch_period)

    def enqueue_sync_job_with_delay(self, job: batch_v1.Job, delay: float) -> None:
        """Upstream: enqueueSyncJobWithDelay (never sooner than the batch period)."""
        self.queue.add_after(_key(job), max(delay, self.options.sync_job_batch_period))

    def enqueue_orphan_pod(self, pod: core_v1.Pod) -> None:
        self.orphan_queue.add(_key(pod))

    # --- pod handlers ----------------------------------------------------------------------------

    def add_pod(self, pod: core_v1.Pod) -> None:
        """Upstream: addPod"""
        metrics.finished_pod_with_tracking_finalizer(False, _finished_with_tracking_finalizer(pod))
        if pod.metadata.deletion_timestamp is not None:
            self.delete_pod(pod, False)        # after a restart a pod may show up being deleted
            return
        if (ref := cu.get_controller_of(pod)) is not None:
            if (job := self.resolve_controller_ref(pod.metadata.namespace, ref)) is not None:
                self.expectations.creation_observed(cu.key_func(job))
                self.enqueue_sync_job_batched(job)
            return
        if has_job_tracking_finalizer(pod):
            self.enqueue_orphan_pod(pod)
        for job in self.get_pod_jobs(pod):     # an orphan: does anyone want to adopt it?
            self.enqueue_sync_job_batched(job)

    def update_pod(self, old: core_v1.Pod, cur: core_v1.Pod) -> None:
        """Upstream: updatePod"""
        tracked = has_job_tracking_finalizer(cur)
        if (tracked or has_job_tracking_finalizer(old)) and \
                (was := _finished_with_tracking_finalizer(old)) != (is_ := _finished_with_tracking_finalizer(cur)):
            metrics.finished_pod_with_tracking_finalizer(was, is_)     # records only a change
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        if not tracked and (cur_ref := cu.get_controller_of(cur)) is not None and cur_ref.kind != JOB_KIND.kind \
                and cu.same_controller_ref(old, cur, cur_ref):
            # Another kind's pod without the Job tracking finalizer, before and after: no Job
            # resolves from it and no orphan is left to clean up, being deleted or not.
            return
        if cur.metadata.deletion_timestamp is not None:
            self.delete_pod(cur, False)        # react to a graceful delete now
            return
        finalizer_removed = not tracked
        cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            if (job := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
                if finalizer_removed:
                    self.finalizer_expectations.finalizer_removal_observed(cu.key_func(job), cur.metadata.uid or "")
                self.enqueue_sync_job_batched(job)
        if cur_ref is not None:
            if (job := self.resolve_controller_ref(cur.metadata.namespace, cur_ref)) is not None:
                if finalizer_removed:
                    self.finalizer_expectations.finalizer_removal_observed(cu.key_func(job), cur.metadata.uid or "")
                self.enqueue_sync_job_batched(job)
            return
        if has_job_tracking_finalizer(cur):
            self.enqueue_orphan_pod(cur)
        if cur.metadata.labels != old.metadata.labels or ref_changed:
            for job in self.get_pod_jobs(cur):
                self.enqueue_sync_job_batched(job)

    def delete_pod(self, obj: core_v1.Pod | DeletedFinalStateUnknown, final: bool) -> None:
        """A pod deleted (final) or being deleted. Upstream: deletePod"""
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is None:
            return
        if final:
            metrics.finished_pod_with_tracking_finalizer(_finished_with_tracking_finalizer(pod), False)
        ref = cu.get_controller_of(pod)
        has_finalizer = has_job_tracking_finalizer(pod)
        if ref is None:
            if has_finalizer:                  # the GC may have removed the reference
                self.enqueue_orphan_pod(pod)
            return
        job = self.resolve_controller_ref(pod.metadata.namespace, ref)
        if job is None or is_job_finished(job):
            if has_finalizer:                  # sync_job will not remove it
                self.enqueue_orphan_pod(pod)
            return
        key = cu.key_func(job)
        self.expectations.deletion_observed(key)
        if final or not has_finalizer:
            self.finalizer_expectations.finalizer_removal_observed(key, pod.metadata.uid or "")
        self.enqueue_sync_job_batched(job)

    # --- Job handlers ---------------------------------------------------------------------------

    def add_job(self, job: batch_v1.Job) -> None:
        """Upstream: addJob"""
        self.enqueue_sync_job_immediately(job)
        if (name := _managed_by_external_controller(job)) is not None:
            metrics.job_by_external_controller(name)

    def update_job(self, old: batch_v1.Job, cur: batch_v1.Job) -> None:
        """A spec change syncs at once, a status change batched; re-arm activeDeadlineSeconds.

        Upstream: updateJob
        """
        if cur.metadata.generation == old.metadata.generation:
            self.enqueue_sync_job_batched(cur)
        else:
            self.enqueue_sync_job_immediately(cur)
        if is_job_finished(cur):
            self.cleanup_pod_finalizers(cur)       # a back-up: finished Jobs have none left
        start = parse_time(cur.status.start_time if cur.status else None)
        cur_ads = cur.spec.active_deadline_seconds if cur.spec else None
        if start is not None and cur_ads is not None:
            old_ads = old.spec.active_deadline_seconds if old.spec else None
            if old_ads != cur_ads:
                self.queue.add_after(_key(cur), cur_ads - (self.clock.now() - start))

    def delete_job(self, obj: batch_v1.Job | DeletedFinalStateUnknown) -> None:
        """Sync (to forget it) and free its pods of the tracking finalizer. Upstream: deleteJob"""
        job = object_from_tombstone(obj, batch_v1.Job)
        if job is None:
            return
        self.enqueue_sync_job_immediately(job)
        self.cleanup_pod_finalizers(job)

    def cleanup_pod_finalizers(self, job: batch_v1.Job) -> None:
        """Upstream: cleanupPodFinalizers"""
        for pod in cu.filter_pods_by_owner(self.pod_indexer, job.metadata, include_orphaned_pods=False):
            if cu.is_controlled_by(pod, job) and has_job_tracking_finalizer(pod):
                self.enqueue_orphan_pod(pod)

    # --- ownership lookups -------------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str | None, ref: Any) -> batch_v1.Job | None:
        """Upstream: resolveControllerRef"""
        if ref.kind != JOB_KIND.kind:
            return None
        try:
            job = self.job_lister.jobs(namespace or "").get(ref.name)
        except errors.NotFound:
            return None
        return job if job.metadata.uid == ref.uid else None

    def get_pod_jobs(self, pod: core_v1.Pod) -> list[batch_v1.Job]:
        """Jobs whose selector matches the pod. Upstream: getPodJobs (JobLister.GetPodJobs)"""
        if not pod.metadata.labels:
            return []
        jobs = []
        for job in self.job_lister.jobs(pod.metadata.namespace or "").list():
            try:
                selector = cu.selector_from(job.spec.selector if job.spec else None)
            except errors.StatusError:
                continue
            if selector and labels.matches(selector, pod.metadata.labels):
                jobs.append(job)
        if len(jobs) > 1:
            log.warning("user error! more than one job is selecting pods with labels",
                        extra={"labels": pod.metadata.labels})
        return jobs

    async def get_pods_for_job(self, job: batch_v1.Job) -> list[core_v1.Pod]:
        """The Job's pods after adopting (with the tracking finalizer) and releasing.

        Upstream: getPodsForJob
        """
        selector = cu.selector_from(job.spec.selector)

        async def get_fresh() -> batch_v1.Job:
            fresh = await self.client.batch_v1().jobs(job.metadata.namespace).get(job.metadata.name)
            if fresh.metadata.uid != job.metadata.uid:
                raise RuntimeError(f"original Job {job.metadata.namespace}/{job.metadata.name} is gone: "
                                   f"got uid {fresh.metadata.uid}, wanted {job.metadata.uid}")
            return fresh

        candidates = cu.filter_pods_by_owner(self.pod_indexer, job.metadata, include_orphaned_pods=True)
        cm = PodControllerRefManager(self.pod_control, job, selector, JOB_KIND, recheck_deletion_timestamp(get_fresh),
                                     JOB_TRACKING_FINALIZER)
        pods = await cm.claim_pods(candidates)
        out = []
        for p in pods:                         # adopted just now: count it as carrying the finalizer
            adopted = not any(r.uid == job.metadata.uid for r in p.metadata.owner_references or ())
            if adopted and not has_job_tracking_finalizer(p):
                p = p.deep_copy()
                p.metadata.finalizers = [*(p.metadata.finalizers or ()), JOB_TRACKING_FINALIZER]
            out.append(p)
        return out

    # --- orphans ----------------------------------------------------------------------------------

    async def sync_orphan_pod(self, key: ObjectName) -> None:
        """Remove the tracking finalizer from a pod no running Job tracks. Upstream: syncOrphanPod"""
        try:
            pod = self.pod_lister.pods(key.namespace).get(key.name)
        except errors.NotFound:
            return
        if (ref := cu.get_controller_of(pod)) is not None:
            if ref.kind != JOB_KIND.kind or ref.api_version != JOB_KIND.group_version():
                return                         # not a batch/v1 Job's: not ours to touch
            job = self.resolve_controller_ref(pod.metadata.namespace, ref)
            if job is not None and _managed_by_external_controller(job) is not None:
                return
            if job is not None and not is_job_finished(job):
                return                         # adopted meanwhile
        if (patch := remove_tracking_finalizer_patch(pod)) is not None:
            try:
                await self.pod_control.patch_pod(key.namespace, key.name, patch)
            except errors.NotFound:
                pass

    # --- the sync ----------------------------------------------------------------------------------

    async def sync_job(self, key: ObjectName) -> None:
        """Converge one Job. Upstream: syncJob

        1. Read the Job; gone -> forget its expectations and back-off record.
        2. Skip Jobs managed elsewhere, finished Jobs, unknown completion modes.
        3. Claim its pods; count what finished since the last sync.
        4. Decide whether it failed (FailureTarget, pod failure policy, backoff limit, deadline,
           failed indexes) or succeeded early (success policy); if so delete its active pods,
           else create/delete pods (manage_job) and decide Complete by completions.
        5. Track: uncounted pods, finalizer removal, counters, conditions, one status write.
        """
        job_key = str(key)
        try:
            shared = self.job_lister.jobs(key.namespace).get(key.name)
        except errors.NotFound:
            self.expectations.delete_expectations(job_key)
            self.finalizer_expectations.delete_expectations(job_key)
            self.pod_backoff_store.remove_backoff_record(job_key)
            return
        if _managed_by_external_controller(shared) is not None:
            return
        job = shared.deep_copy()
        if is_job_finished(job):
            self.pod_backoff_store.remove_backoff_record(job_key)
            return
        if job.spec.completion_mode not in (None, NON_INDEXED, INDEXED):
            self.recorder.event(job, cu.EVENT_TYPE_WARNING, "UnknownCompletionMode",
                                "Skipped Job sync because completion mode is unknown")
            return
        mode = INDEXED if ix.is_indexed_job(job) else NON_INDEXED
        start, action = self.clock.monotonic(), [metrics.RECONCILING]
        try:
            await self._sync_job(job, job_key, action)
        except Exception:
            metrics.observe_sync(mode, "error", action[0], self.clock.monotonic() - start)
            raise
        metrics.observe_sync(mode, "success", action[0], self.clock.monotonic() - start)

    async def _sync_job(self, job: batch_v1.Job, job_key: str, action: list[str]) -> None:
        """sync_job from step 3 on; action[0] is set to what it did (for the metrics)."""
        job.status = job.status or batch_v1.JobStatus()
        if job.status.uncounted_terminated_pods is None:
            job.status.uncounted_terminated_pods = batch_v1.UncountedTerminatedPods()
        satisfied = self.expectations.satisfied_expectations(job_key)
        ctx = await self._new_sync_ctx(job, job_key)
        active = len(ctx.active_pods)
        if job.status.start_time is None and not job_suspended(job):
            job.status.start_time = rfc3339(self.clock.now())
        self._decide_finished(ctx, job_key)
        suspend_changed = False
        manage_err: Exception | None = None
        if ctx.finished_condition is not None:
            deleted_ready, deleted, manage_err = await self.delete_active_pods(job, ctx.active_pods)
            if deleted != active or not satisfied:
                ctx.finished_condition = None  # pods or finalizers may remain: finish next time
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
        else:
            manage_called = False
            if satisfied and job.metadata.deletion_timestamp is None:
                active, manage_err = await self.manage_job(job, ctx)
                action[0] = ctx.action
                manage_called = True
            if _complete(job, ctx, active):
                ctx.finished_condition = self.new_success_condition()
            elif manage_called:
                suspend_changed = self._sync_suspended_condition(job)
        needs_update = (suspend_changed or active != job.status.active or ctx.ready != job.status.ready
                        or ctx.terminating != job.status.terminating)
        job.status.active, job.status.ready, job.status.terminating = active, ctx.ready, ctx.terminating
        await self.track_job_status_and_remove_finalizers(ctx, needs_update)
        if manage_err is not None:
            raise manage_err

    async def _new_sync_ctx(self, job: batch_v1.Job, job_key: str) -> SyncJobCtx:
        pods = await self.get_pods_for_job(job)
        active_pods = cu.filter_active_pods(pods)
        uncounted = job.status.uncounted_terminated_pods
        ctx = SyncJobCtx(job, pods, active_pods, set(uncounted.succeeded or ()), set(uncounted.failed or ()),
                         self.finalizer_expectations.get_expected_uids(job_key),
                         ready=count_ready_pods(active_pods), terminating=cu.count_terminating_pods(pods))
        new_succeeded, new_failed = get_new_finished_pods(ctx)
        ctx.succeeded = (job.status.succeeded or 0) + len(new_succeeded) + len(ctx.uncounted_succeeded)
        ctx.failed = ((job.status.failed or 0) + non_ignored_failed_pods_count(job, new_failed)
                      + len(ctx.uncounted_failed))
        ctx.new_backoff_record = self.pod_backoff_store.new_backoff_record(job_key, new_succeeded, new_failed)
        return ctx

    def _decide_finished(self, ctx: SyncJobCtx, job_key: str) -> None:
        """Set ctx.finished_condition when the Job has failed or met its success criteria.

        Precedence, as upstream: an earlier SuccessCriteriaMet or FailureTarget, a FailJob
        rule, the backoff limit, the deadline; for Indexed Jobs then maxFailedIndexes, all
        indexes finished with some failed, and the success policy.
        """
        job, now = ctx.job, self.clock.now()
        ctx.finished_condition = _success_criteria_met(job)
        if ctx.finished_condition is None:
            target = find_condition_by_type(job.status.conditions, JOB_FAILURE_TARGET)
            if target is not None and target.status == "True":
                ctx.finished_condition = new_condition(JOB_FAILED, "True", target.reason, target.message, now)
            elif (msg := get_fail_job_message(job, ctx.pods)) is not None:
                ctx.finished_condition = new_condition(JOB_FAILURE_TARGET, "True", JOB_REASON_POD_FAILURE_POLICY,
                                                       msg, now)
        if ctx.finished_condition is None:
            if ctx.failed > (job.spec.backoff_limit or 0) or past_backoff_limit_on_failure(job, ctx.pods):
                ctx.finished_condition = self.new_failure_condition(JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
                                                                    "Job has reached the specified backoff limit")
            elif self.past_active_deadline(job):
                ctx.finished_condition = self.new_failure_condition(JOB_REASON_DEADLINE_EXCEEDED,
                                                                    "Job was active longer than specified deadline")
            elif job.spec.active_deadline_seconds is not None and not job_suspended(job):
                elapsed = now - (parse_time(job.status.start_time) or now)
                self.queue.add_after(ObjectName.parse(job_key), job.spec.active_deadline_seconds - elapsed)
        if ix.is_indexed_job(job):
            self._decide_indexed(ctx)

    def _decide_indexed(self, ctx: SyncJobCtx) -> None:
        job = ctx.job
        completions = job.spec.completions or 0
        ctx.prev_succeeded_indexes, ctx.succeeded_indexes = ix.calculate_succeeded_indexes(job, ctx.pods)
        ctx.succeeded = ctx.succeeded_indexes.total()
        if ix.has_backoff_limit_per_index(job):
            ctx.failed_indexes = calculate_failed_indexes(job, ctx.pods)
            if ctx.finished_condition is None:
                failed = ctx.failed_indexes.total()
                if job.spec.max_failed_indexes is not None and failed > job.spec.max_failed_indexes:
                    ctx.finished_condition = self.new_failure_condition(
                        JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED,
                        "Job has exceeded the specified maximal number of failed indexes")
                elif failed > 0 and failed + ctx.succeeded_indexes.total() >= completions:
                    ctx.finished_condition = self.new_failure_condition(JOB_REASON_FAILED_INDEXES,
                                                                        "Job has failed indexes")
            ctx.pods_with_delayed_deletion_per_index = get_pods_with_delayed_deletion_per_index(ctx)
        if ctx.finished_condition is None:
            msg, met = match_success_policy(job.spec.success_policy, completions, ctx.succeeded_indexes)
            if met:
                ctx.finished_condition = new_condition(JOB_SUCCESS_CRITERIA_MET, "True", JOB_REASON_SUCCESS_POLICY,
                                                       msg, self.clock.now())

    def _sync_suspended_condition(self, job: batch_v1.Job) -> bool:
        """The Suspended condition and its event after a manage_job. Upstream: syncJob's suspend branch"""
        now = self.clock.now()
        if job_suspended(job):
            job.status.conditions, changed = ensure_job_condition_status(
                job.status.conditions, JOB_SUSPENDED, "True", "JobSuspended", "Job suspended", now)
            if changed:
                self.recorder.event(job, cu.EVENT_TYPE_NORMAL, "Suspended", "Job suspended")
            return changed
        job.status.conditions, changed = ensure_job_condition_status(
            job.status.conditions, JOB_SUSPENDED, "False", "JobResumed", "Job resumed", now)
        if changed:
            self.recorder.event(job, cu.EVENT_TYPE_NORMAL, "Resumed", "Job resumed")
            # activeDeadlineSeconds counts continuous activity: restart it on resume.
            job.status.start_time = rfc3339(now)
        return changed

    def new_failure_condition(self, reason: str, message: str) -> batch_v1.JobCondition:
        """The interim FailureTarget (Failed follows once no pod is left). Upstream: newFailureCondition"""
        return new_condition(JOB_FAILURE_TARGET, "True", reason, message, self.clock.now())

    def new_success_condition(self) -> batch_v1.JobCondition:
        """The interim SuccessCriteriaMet (Complete follows). Upstream: newSuccessCondition"""
        return new_condition(JOB_SUCCESS_CRITERIA_MET, "True", JOB_REASON_COMPLETIONS_REACHED,
                             "Reached expected number of succeeded pods", self.clock.now())

    def past_active_deadline(self, job: batch_v1.Job) -> bool:
        """Upstream: pastActiveDeadline"""
        ads = job.spec.active_deadline_seconds
        start = parse_time(job.status.start_time)
        if ads is None or start is None or job_suspended(job):
            return False
        return self.clock.now() - start >= ads

    # --- pods: create and delete -------------------------------------------------------------------

    async def manage_job(self, job: batch_v1.Job, ctx: SyncJobCtx) -> tuple[int, Exception | None]:
        """Create or delete pods toward the wanted number of active pods; returns (active, error).

        wantActive is parallelism, capped by the completions still missing: completions 10,
        parallelism 3, 8 succeeded -> 2. A sync either deletes or creates, never both.
        Upstream: manageJob
        """
        active = len(ctx.active_pods)
        job_key = cu.key_func(job)
        if job_suspended(job):
            to_delete = active_pods_for_removal(job, ctx.active_pods, active)
            return await self._delete_for_manage(job, job_key, ctx, to_delete, active)
        parallelism = job.spec.parallelism or 0
        if job.spec.completions is None:
            want_active = active if ctx.succeeded > 0 else parallelism
        else:
            want_active = max(0, min(job.spec.completions - ctx.succeeded, parallelism))
        to_delete = active_pods_for_removal(job, ctx.active_pods, max(0, active - want_active))
        if to_delete:
            return await self._delete_for_manage(job, job_key, ctx,
                                                 to_delete[:self.options.max_pod_create_delete_per_sync], active)
        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want_active - terminating - active
        if diff <= 0:
            ctx.action = metrics.TRACKING
            return active, None
        return await self._create_for_manage(job, job_key, ctx, diff, active)

    async def _delete_for_manage(self, job: batch_v1.Job, job_key: str, ctx: SyncJobCtx,
                                 to_delete: list[core_v1.Pod], active: int) -> tuple[int, Exception | None]:
        ctx.action = metrics.PODS_DELETED
        self.expectations.expect_deletions(job_key, len(to_delete))
        removed_ready, removed, err = await self.delete_job_pods(job, job_key, to_delete)
        ctx.terminating += removed
        ctx.ready -= removed_ready
        return active - removed, err

    async def _create_for_manage(self, job: batch_v1.Job, job_key: str, ctx: SyncJobCtx, diff: int,
                                 active: int) -> tuple[int, Exception | None]:
        ctx.action = metrics.PODS_CREATED
        now = self.clock.now()
        if not ix.has_backoff_limit_per_index(job):
            remaining = ctx.new_backoff_record.get_remaining_time(now)
            if remaining > 0:
                self.enqueue_sync_job_with_delay(job, remaining)
                return 0, None
        diff = min(diff, self.options.max_pod_create_delete_per_sync)
        indexes: list[int] = []
        if ix.is_indexed_job(job):
            terminating = (cu.filter_terminating_pods(ctx.pods) if only_replace_failed_pods(job) else None)
            indexes = ix.first_pending_indexes(ctx.succeeded_indexes, ctx.failed_indexes, ctx.active_pods,
                                               terminating, diff, job.spec.completions or 0)
            if ix.has_backoff_limit_per_index(job):
                indexes, remaining = self.get_pod_creation_info_for_independent_indexes(
                    indexes, ctx.pods_with_delayed_deletion_per_index)
                if remaining > 0:
                    self.enqueue_sync_job_with_delay(job, remaining)
                    return 0, None
            diff = len(indexes)
        if diff <= 0:
            return active, None
        self.expectations.expect_creations(job_key, diff)
        template = job.spec.template.deep_copy()
        if ix.is_indexed_job(job):
            ix.add_completion_index_env_variables(template)
        template.metadata = template.metadata or meta_v1.ObjectMeta()
        if JOB_TRACKING_FINALIZER not in (template.metadata.finalizers or ()):
            template.metadata.finalizers = [*(template.metadata.finalizers or ()), JOB_TRACKING_FINALIZER]
        controller_ref = cu.new_controller_ref(job, JOB_KIND)
        pending = list(indexes)
        failed_creates = [0]

        async def create_one() -> None:
            t, generate_name = template, ""
            if pending:
                index = pending.pop(0)
                t = self._indexed_template(job, template, index, ctx)
                generate_name = ix.pod_generate_name_with_index(job.metadata.name or "", index)
            try:
                if generate_name:
                    await self.pod_control.create_pods_with_generate_name(   # type: ignore[attr-defined]
                        job.metadata.namespace, t, job, controller_ref, generate_name)
                else:
                    await self.pod_control.create_pods(job.metadata.namespace, t, job, controller_ref)
            except errors.StatusError as err:
                if not cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
                    failed_creates[0] += 1
                    raise
            except Exception:
                failed_creates[0] += 1
                raise

        log.debug("Too few pods running", extra={"key": job_key, "creating": diff})
        successful, err = await cu.slow_start_batch(diff, cu.SLOW_START_INITIAL_BATCH_SIZE, create_one)
        metrics.pods_created(_pod_creation_reason(job, ctx), successful, failed_creates[0])
        for _ in range(diff - successful):     # never observed: stop expecting them
            self.expectations.creation_observed(job_key)
        if err is not None and not isinstance(err, Exception):
            raise err
        return active + successful, err

    def _indexed_template(self, job: batch_v1.Job, template: core_v1.PodTemplateSpec, index: int,
                          ctx: SyncJobCtx) -> core_v1.PodTemplateSpec:
        """The template of index's pod: index annotation and label, hostname <job>-<index>,
        and the index's failure counts under backoffLimitPerIndex."""
        t = template.deep_copy()
        ix.add_completion_index_annotation(t, index)
        t.spec.hostname = f"{job.metadata.name}-{index}"
        if ix.has_backoff_limit_per_index(job):
            failed, ignored = get_new_index_failure_counts(job, ctx.pods_with_delayed_deletion_per_index.get(index))
            annotations = dict(t.metadata.annotations or {})
            annotations[ix.JOB_INDEX_FAILURE_COUNT_ANNOTATION] = str(failed)
            if ignored > 0:
                annotations[ix.JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
            t.metadata.annotations = annotations
        return t

    def get_pod_creation_info_for_independent_indexes(self, indexes: list[int],
                                                      delayed: dict[int, core_v1.Pod]) -> tuple[list[int], float]:
        """The indexes whose back-off has passed, else the shortest wait of the rest.

        Upstream: getPodCreationInfoForIndependentIndexes
        """
        now = self.clock.now()
        ready: list[int] = []
        min_remaining: float | None = None
        for i in indexes:
            remaining = get_remaining_time_per_index(now, delayed.get(i))
            if remaining == 0:
                ready.append(i)
            elif min_remaining is None or remaining < min_remaining:
                min_remaining = remaining
        if ready:
            return ready, 0.0
        return ready, min_remaining or 0.0

    async def delete_job_pods(self, job: batch_v1.Job, job_key: str,
                              pods: Sequence[core_v1.Pod]) -> tuple[int, int, Exception | None]:
        """Remove the finalizer, then delete; (ready deleted, deleted, first error).

        Upstream: deleteJobPods
        """
        async def one(pod: core_v1.Pod) -> tuple[bool, bool]:
            try:
                if (patch := remove_tracking_finalizer_patch(pod)) is not None:
                    await self.pod_control.patch_pod(pod.metadata.namespace, pod.metadata.name, patch)
                await self.pod_control.delete_pod(job.metadata.namespace, pod.metadata.name, job)
            except Exception as err:
                self.expectations.deletion_observed(job_key)     # the informer will not see it
                if not isinstance(err, errors.NotFound):
                    raise
            return True, cu.is_pod_ready(pod)
        return _tally(await asyncio.gather(*(one(p) for p in pods), return_exceptions=True))

    async def delete_active_pods(self, job: batch_v1.Job,
                                 pods: Sequence[core_v1.Pod]) -> tuple[int, int, Exception | None]:
        """Delete (keeping finalizers: tracking removes them) every active pod of a finished Job.

        Upstream: deleteActivePods
        """
        async def one(pod: core_v1.Pod) -> tuple[bool, bool]:
            try:
                await self.pod_control.delete_pod(job.metadata.namespace, pod.metadata.name, job)
            except errors.NotFound:
                pass
            return True, cu.is_pod_ready(pod)
        return _tally(await asyncio.gather(*(one(p) for p in pods), return_exceptions=True))

    # --- tracking finished pods -----------------------------------------------------------------------

    async def track_job_status_and_remove_finalizers(self, ctx: SyncJobCtx, needs_flush: bool) -> None:
        """Count finished pods through status.uncountedTerminatedPods, remove their finalizers,
        and write the interim then terminal conditions. Upstream: trackJobStatusAndRemoveFinalizers

        1. Finished pods still carrying the finalizer go to uncountedTerminatedPods (at most
           max_uncounted_pods per sync, so big Jobs do not starve small ones).
        2. That status is written before any finalizer is removed: a crash in between loses
           nothing, as the UIDs are recorded.
        3. Finalizers are removed; the pods that lost theirs move from the uncounted lists to
           succeeded/failed.
        4. Complete/Failed once nothing is uncounted or terminating.
        """
        job = ctx.job
        indexed = ix.is_indexed_job(job)
        completions = job.spec.completions or 0
        pods = sorted(ctx.pods, key=lambda p: get_completion_index(p.metadata.annotations)) if indexed else ctx.pods
        uids_with_finalizer = {p.metadata.uid or "" for p in pods if has_job_tracking_finalizer(p)
                               and (p.metadata.uid or "") not in ctx.expected_rm_finalizers}
        uncounted = job.status.uncounted_terminated_pods
        counted_before = (job.status.succeeded or 0, job.status.failed or 0, job.status.failed_indexes)
        if clean_uncounted_pods_without_finalizers(job.status, uids_with_finalizer):
            needs_flush = True
        to_remove: list[core_v1.Pod] = []
        new_succeeded_indexes: list[int] = []
        reached_max = False
        for pod in pods:
            uid = pod.metadata.uid or ""
            if not has_job_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers:
                continue                       # counted in an earlier sync
            failed = is_pod_failed(pod, job)
            if not can_remove_finalizer(ctx, pod, failed):
                continue
            to_remove.append(pod)
            phase = pod.status.phase if pod.status else None
            if phase == cu.POD_SUCCEEDED and uid not in ctx.uncounted_failed:
                if indexed:
                    i = get_completion_index(pod.metadata.annotations)
                    if ix.UNKNOWN_COMPLETION_INDEX < i < completions and not ctx.prev_succeeded_indexes.has(i):
                        new_succeeded_indexes.append(i)
                        needs_flush = True
                elif uid not in ctx.uncounted_succeeded:
                    uncounted.succeeded = [*(uncounted.succeeded or ()), uid]
                    needs_flush = True
            elif failed or (ctx.finished_condition is not None
                            and ctx.finished_condition.type != JOB_SUCCESS_CRITERIA_MET):
                # A finished (failed) Job counts every unfinished pod as failed.
                i = get_completion_index(pod.metadata.annotations)
                if uid not in ctx.uncounted_failed and (not indexed or ix.UNKNOWN_COMPLETION_INDEX < i < completions):
                    _, counted, pfp_action = match_pod_failure_policy(job.spec.pod_failure_policy, pod)
                    if pfp_action is not None:
                        ctx.policy_actions[pfp_action] = ctx.policy_actions.get(pfp_action, 0) + 1
                    if counted:
                        uncounted.failed = [*(uncounted.failed or ()), uid]
                        needs_flush = True
            if (len(new_succeeded_indexes) + len(uncounted.succeeded or ()) + len(uncounted.failed or ())
                    >= self.options.max_uncounted_pods):
                reached_max = True
                break
        if indexed:
            needs_flush |= self._update_indexes_status(ctx, new_succeeded_indexes)
        needs_flush |= self._interim_conditions(ctx)
        needs_flush = await self.flush_uncounted_and_remove_finalizers(ctx, to_remove, uids_with_finalizer,
                                                                       needs_flush)
        finished = not reached_max and self.enact_job_finished(ctx)
        if finished or needs_flush:
            await self.update_status_handler(ctx.job)
            if finished:
                self.record_job_finished(ctx.job, ctx.finished_condition)
        self._record_job_pod_finished(ctx.job, indexed, counted_before)

    @staticmethod
    def _record_job_pod_finished(job: batch_v1.Job, indexed: bool, before: tuple[int, int, str | None]) -> None:
        """The counters' growth since the sync began. Upstream: recordJobPodFinished"""
        succeeded = (job.status.succeeded or 0) - before[0]
        metrics.pods_finished(INDEXED if indexed else NON_INDEXED, succeeded, (job.status.failed or 0) - before[1])
        if not indexed:
            return
        per_index = ix.has_backoff_limit_per_index(job)
        failed = 0
        if per_index and job.status.failed_indexes != before[2]:
            completions = job.spec.completions or 0
            failed = (ix.parse_indexes_from_string(job.status.failed_indexes, completions).total()
                      - ix.parse_indexes_from_string(before[2], completions).total())
        metrics.finished_indexes(succeeded, failed, per_index)

    def _update_indexes_status(self, ctx: SyncJobCtx, new_succeeded_indexes: list[int]) -> bool:
        job = ctx.job
        ctx.succeeded_indexes = ctx.succeeded_indexes.with_ordered_indexes(sorted(new_succeeded_indexes))
        text = str(ctx.succeeded_indexes)
        changed = text != (job.status.completed_indexes or "")
        job.status.succeeded = ctx.succeeded_indexes.total()
        job.status.completed_indexes = text or None       # a Go string with omitempty: "" is absent
        failed_text = str(ctx.failed_indexes) if ctx.failed_indexes is not None else None
        if failed_text != job.status.failed_indexes:
            job.status.failed_indexes = failed_text
            changed = True
        return changed

    def _interim_conditions(self, ctx: SyncJobCtx) -> bool:
        """Write FailureTarget/SuccessCriteriaMet now; prepare Failed/Complete for later."""
        cond, job, now = ctx.finished_condition, ctx.job, self.clock.now()
        if cond is None:
            return False
        changed = False
        if cond.type == JOB_FAILURE_TARGET:
            job.status.conditions = [*(job.status.conditions or ()), cond]
            ctx.finished_condition = new_condition(JOB_FAILED, "True", cond.reason, cond.message, now)
            changed = True
        elif cond.type == JOB_SUCCESS_CRITERIA_MET:
            if _success_criteria_met(job) is None:
                job.status.conditions = [*(job.status.conditions or ()), cond]
                changed = True
            ctx.finished_condition = new_condition(JOB_COMPLETE, "True", cond.reason, cond.message, now)
        return changed

    async def flush_uncounted_and_remove_finalizers(self, ctx: SyncJobCtx, to_remove: list[core_v1.Pod],
                                                    uids_with_finalizer: set[str], needs_flush: bool) -> bool:
        """Returns whether the status still needs a write. Upstream: flushUncountedAndRemoveFinalizers

        1. Write the status holding the new uncounted UIDs (and interim conditions).
        2. Remove the finalizers of to_remove.
        3. Move the pods that lost theirs to the counters (written by the caller's last write).
        """
        if needs_flush:
            ctx.job = await self.update_status_handler(ctx.job)
            self.pod_backoff_store.update_backoff_record(ctx.new_backoff_record)
            needs_flush = False
        metrics.pod_failure_policy_actions(ctx.policy_actions)
        rm_err: Exception | None = None
        if to_remove:
            removed, rm_err = await self.remove_tracking_finalizer_from_pods(cu.key_func(ctx.job), to_remove)
            for pod, ok in zip(to_remove, removed):
                if ok:
                    uids_with_finalizer.discard(pod.metadata.uid or "")
        if clean_uncounted_pods_without_finalizers(ctx.job.status, uids_with_finalizer):
            needs_flush = True
        if rm_err is not None:
            if needs_flush:
                await self.update_status_handler(ctx.job)
            raise rm_err
        return needs_flush

    async def remove_tracking_finalizer_from_pods(self, job_key: str, pods: Sequence[core_v1.Pod]
                                                  ) -> tuple[list[bool], Exception | None]:
        """Patch the finalizer away from each pod: (removed per pod, first error); a pod
        already gone counts as removed. Upstream: removeTrackingFinalizerFromPods
        """
        self.finalizer_expectations.expect_finalizers_removed(job_key, [p.metadata.uid or "" for p in pods])

        async def one(pod: core_v1.Pod) -> bool:
            if (patch := remove_tracking_finalizer_patch(pod)) is None:
                return False
            try:
                await self.pod_control.patch_pod(pod.metadata.namespace, pod.metadata.name, patch)
            except Exception as err:
                self.finalizer_expectations.finalizer_removal_observed(job_key, pod.metadata.uid or "")
                if not isinstance(err, errors.NotFound):
                    raise
            return True
        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        first: Exception | None = None
        out: list[bool] = []
        for r in results:
            if isinstance(r, BaseException):
                if not isinstance(r, Exception):
                    raise r
                first = first or r
                out.append(False)
            else:
                out.append(r)
        return out, first

    def enact_job_finished(self, ctx: SyncJobCtx) -> bool:
        """Add Complete/Failed once no pod is uncounted or terminating. Upstream: enactJobFinished"""
        cond, job = ctx.finished_condition, ctx.job
        if cond is None:
            return False
        uncounted = job.status.uncounted_terminated_pods
        if uncounted is not None and (uncounted.succeeded or uncounted.failed):
            return False
        if ctx.terminating > 0:
            return False
        job.status.conditions, _ = ensure_job_condition_status(job.status.conditions, cond.type, cond.status or "",
                                                               cond.reason or "", cond.message or "", self.clock.now())
        if cond.type == JOB_COMPLETE:
            job.status.completion_time = cond.last_transition_time
        return True

    def record_job_finished(self, job: batch_v1.Job, cond: batch_v1.JobCondition) -> None:
        """Upstream: recordJobFinished (the events and jobs_finished_total)."""
        mode = INDEXED if ix.is_indexed_job(job) else NON_INDEXED
        if cond.type == JOB_COMPLETE:
            metrics.job_finished(mode, metrics.SUCCEEDED, "")
            if job.spec.completions is not None and (job.status.succeeded or 0) > job.spec.completions:
                self.recorder.event(job, cu.EVENT_TYPE_WARNING, "TooManySucceededPods",
                                    "Too many succeeded pods running after completion count reached")
            self.recorder.event(job, cu.EVENT_TYPE_NORMAL, "Completed", "Job completed")
        else:
            metrics.job_finished(mode, metrics.FAILED, cond.reason or "")
            self.recorder.event(job, cu.EVENT_TYPE_WARNING, cond.reason or "", cond.message or "")

    async def update_job_status(self, job: batch_v1.Job) -> batch_v1.Job:
        """Upstream: updateJobStatus"""
        return await self.client.batch_v1().jobs(job.metadata.namespace).update_status(job)


# --- pure helpers -----------------------------------------------------------------------------------

def _key(obj: Any) -> ObjectName:
    return ObjectName(obj.metadata.namespace or "", obj.metadata.name or "")


def _tally(results: list[Any]) -> tuple[int, int, Exception | None]:
    deleted = ready = 0
    first: Exception | None = None
    for r in results:
        if isinstance(r, BaseException):
            if not isinstance(r, Exception):
                raise r
            first = first or r
            continue
        deleted += 1
        ready += r[1]
    return ready, deleted, first


def _finished_with_tracking_finalizer(pod: core_v1.Pod) -> bool:
    """Upstream: isFinishedPodWithTrackingFinalizer"""
    # the finalizer first: most pods (all but Jobs') carry no finalizer at all
    return has_job_tracking_finalizer(pod) and pod.status is not None \
        and pod.status.phase in (cu.POD_FAILED, cu.POD_SUCCEEDED)


def _pod_creation_reason(job: batch_v1.Job, ctx: SyncJobCtx) -> str:
    """Why pods are being created, for job_pods_creation_total. Upstream: recordJobPodsCreationTotal"""
    if job.spec.pod_replacement_policy == "Failed" and ctx.failed > 0:     # defaulted by the API server
        return metrics.POD_RECREATE_FAILED
    if ctx.failed > 0 or ctx.terminating > 0:
        return metrics.POD_RECREATE_TERMINATING_OR_FAILED
    return metrics.POD_CREATE_NEW


def _managed_by_external_controller(job: batch_v1.Job) -> str | None:
    """Upstream: managedByExternalController"""
    managed_by = job.spec.managed_by if job.spec else None
    return managed_by if managed_by is not None and managed_by != JOB_CONTROLLER_NAME else None


def _success_criteria_met(job: batch_v1.Job) -> batch_v1.JobCondition | None:
    """Upstream: hasSuccessCriteriaMetCondition"""
    c = find_condition_by_type(job.status.conditions if job.status else None, JOB_SUCCESS_CRITERIA_MET)
    return c if c is not None and c.status == "True" else None


def _complete(job: batch_v1.Job, ctx: SyncJobCtx, active: int) -> bool:
    """Without completions any success completes the Job once nothing runs; with them, that
    many successes do."""
    if job.spec.completions is None:
        return ctx.succeeded > 0 and active == 0
    return ctx.succeeded >= job.spec.completions and active == 0


def job_suspended(job: batch_v1.Job) -> bool:
    """Upstream: jobSuspended"""
    return bool(job.spec and job.spec.suspend)


def new_condition(type_: str, status: str, reason: str | None, message: str | None,
                  now: float) -> batch_v1.JobCondition:
    """Upstream: newCondition"""
    t = rfc3339(now)
    return batch_v1.JobCondition(type=type_, status=status, last_probe_time=t, last_transition_time=t,
                                 reason=reason or None, message=message or None)


def ensure_job_condition_status(conds: list[batch_v1.JobCondition] | None, type_: str, status: str, reason: str,
                                message: str, now: float) -> tuple[list[batch_v1.JobCondition], bool]:
    """Set or add the condition; a new condition with status False is not added.

    Upstream: ensureJobConditionStatus
    """
    out = list(conds or ())
    for i, c in enumerate(out):
        if c.type == type_:
            if c.status != status or (c.reason or "") != reason or (c.message or "") != message:
                out[i] = new_condition(type_, status, reason, message, now)
                return out, True
            return out, False
    if status != "False":
        out.append(new_condition(type_, status, reason, message, now))
        return out, True
    return out, False


def is_pod_failed(p: core_v1.Pod, job: batch_v1.Job) -> bool:
    """Failed, or (when terminating pods are replaced at once) deleted before succeeding.

    Upstream: isPodFailed
    """
    phase = p.status.phase if p.status else None
    if phase == cu.POD_FAILED:
        return True
    if only_replace_failed_pods(job):
        return False
    return p.metadata.deletion_timestamp is not None and phase != cu.POD_SUCCEEDED


def only_replace_failed_pods(job: batch_v1.Job) -> bool:
    """podReplacementPolicy Failed, or a pod failure policy. Upstream: onlyReplaceFailedPods"""
    return job.spec.pod_replacement_policy == "Failed" or job.spec.pod_failure_policy is not None


def count_ready_pods(pods: Sequence[core_v1.Pod]) -> int:
    """Upstream: countReadyPods"""
    return sum(1 for p in pods if cu.is_pod_ready(p))


def get_valid_pods_with_filter(ctx: SyncJobCtx, uncounted: set[str] | None,
                               keep: Any) -> list[core_v1.Pod]:
    """Pods still carrying the finalizer, not yet uncounted, with a valid index for Indexed
    Jobs, that keep() accepts. Upstream: getValidPodsWithFilter"""
    indexed = ix.is_indexed_job(ctx.job)
    completions = ctx.job.spec.completions or 0
    out = []
    for p in ctx.pods:
        uid = p.metadata.uid or ""
        if not has_job_tracking_finalizer(p) or (uncounted and uid in uncounted) or uid in ctx.expected_rm_finalizers:
            continue
        if indexed and not ix.UNKNOWN_COMPLETION_INDEX < get_completion_index(p.metadata.annotations) < completions:
            continue
        if keep(p):
            out.append(p)
    return out


def get_new_finished_pods(ctx: SyncJobCtx) -> tuple[list[core_v1.Pod], list[core_v1.Pod]]:
    """Upstream: getNewFinishedPods"""
    succeeded = get_valid_pods_with_filter(ctx, ctx.uncounted_succeeded,
                                           lambda p: p.status is not None and p.status.phase == cu.POD_SUCCEEDED)
    failed = get_valid_pods_with_filter(ctx, ctx.uncounted_failed, lambda p: is_pod_failed(p, ctx.job))
    return succeeded, failed


def non_ignored_failed_pods_count(job: batch_v1.Job, failed: Sequence[core_v1.Pod]) -> int:
    """Upstream: nonIgnoredFailedPodsCount"""
    if job.spec.pod_failure_policy is None:
        return len(failed)
    return sum(1 for p in failed if match_pod_failure_policy(job.spec.pod_failure_policy, p)[1])


def get_fail_job_message(job: batch_v1.Job, pods: Sequence[core_v1.Pod]) -> str | None:
    """The message of the first failed pod matching a FailJob rule. Upstream: getFailJobMessage"""
    if job.spec.pod_failure_policy is None:
        return None
    for p in pods:
        if is_pod_failed(p, job):
            msg = match_pod_failure_policy(job.spec.pod_failure_policy, p)[0]
            if msg is not None:
                return msg
    return None


def past_backoff_limit_on_failure(job: batch_v1.Job, pods: Sequence[core_v1.Pod]) -> bool:
    """Under restartPolicy OnFailure, container restarts of running/pending pods count
    against backoffLimit. Upstream: pastBackoffLimitOnFailure
    """
    tspec = job.spec.template.spec if job.spec.template else None
    if tspec is None or tspec.restart_policy != "OnFailure":
        return False
    result = 0
    for p in pods:
        if p.status is not None and p.status.phase in (cu.POD_RUNNING, cu.POD_PENDING):
            for cs in [*(p.status.init_container_statuses or ()), *(p.status.container_statuses or ())]:
                result += cs.restart_count or 0
    limit = job.spec.backoff_limit or 0
    return result > 0 if limit == 0 else result >= limit


def active_pods_for_removal(job: batch_v1.Job, pods: Sequence[core_v1.Pod], rm_at_least: int) -> list[core_v1.Pod]:
    """Pods to delete: duplicated or invalid indexes first, then the least advanced
    (not ready < ready, unscheduled < scheduled, pending < running). Upstream: activePodsForRemoval
    """
    rm: list[core_v1.Pod] = []
    left = list(pods)
    if ix.is_indexed_job(job):
        rm, left = ix.append_duplicated_index_pods_for_removal(pods, job.spec.completions or 0)
    if len(rm) < rm_at_least:
        cu.sort_active_pods(left)
        rm.extend(left[:rm_at_least - len(rm)])
    return rm


def remove_tracking_finalizer_patch(pod: core_v1.Pod) -> bytes | None:
    """Upstream: removeTrackingFinalizerPatch"""
    if not has_job_tracking_finalizer(pod):
        return None
    return orjson.dumps({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})


def clean_uncounted_pods_without_finalizers(status: batch_v1.JobStatus, uids_with_finalizer: set[str]) -> bool:
    """Move the uncounted pods that lost their finalizer to the counters.

    Upstream: cleanUncountedPodsWithoutFinalizers
    """
    uncounted = status.uncounted_terminated_pods
    if uncounted is None:
        return False
    updated = False
    keep = [u for u in uncounted.succeeded or () if u in uids_with_finalizer]
    if len(keep) != len(uncounted.succeeded or ()):
        status.succeeded = (status.succeeded or 0) + len(uncounted.succeeded or ()) - len(keep)
        uncounted.succeeded = keep or None
        updated = True
    keep = [u for u in uncounted.failed or () if u in uids_with_finalizer]
    if len(keep) != len(uncounted.failed or ()):
        status.failed = (status.failed or 0) + len(uncounted.failed or ()) - len(keep)
        uncounted.failed = keep or None
        updated = True
    return updated


def can_remove_finalizer(ctx: SyncJobCtx, pod: core_v1.Pod, failed: bool) -> bool:
    """Whether the pod's finalizer may go now: the Job is being deleted or has finished, the
    pod succeeded, or it failed and is not the failed pod whose failure counts the next pod
    of its index inherits (backoffLimitPerIndex). Upstream: canRemoveFinalizer
    """
    if (ctx.job.metadata.deletion_timestamp is not None or ctx.finished_condition is not None
            or (pod.status is not None and pod.status.phase == cu.POD_SUCCEEDED)):
        return True
    if not failed:
        return False
    if ix.has_backoff_limit_per_index(ctx.job):
        i = get_completion_index(pod.metadata.annotations)
        kept = ctx.pods_with_delayed_deletion_per_index.get(i)
        if kept is not None and kept.metadata.uid == pod.metadata.uid:
            return False
    return True


def calculate_failed_indexes(job: batch_v1.Job, pods: Sequence[core_v1.Pod]) -> OrderedIntervals:
    """status.failedIndexes plus the indexes whose pods failed for good now.

    Upstream: calculateFailedIndexes
    """
    completions = job.spec.completions or 0
    prev = ix.parse_indexes_from_string(job.status.failed_indexes if job.status else None, completions)
    new = sorted({i for p in pods if is_index_failed(job, p)
                  and ix.UNKNOWN_COMPLETION_INDEX < (i := get_completion_index(p.metadata.annotations)) < completions
                  and not prev.has(i)})
    return prev.with_ordered_indexes(new)


def is_index_failed(job: batch_v1.Job, pod: core_v1.Pod) -> bool:
    """A FailIndex rule matched, or a counted failure reached backoffLimitPerIndex.

    Upstream: isIndexFailed
    """
    if not is_pod_failed(pod, job):
        return False
    counted = True
    if job.spec.pod_failure_policy is not None:
        _, counted, action = match_pod_failure_policy(job.spec.pod_failure_policy, pod)
        if action == FAIL_INDEX:
            return True
    return counted and ix.get_index_failure_count(pod) >= (job.spec.backoff_limit_per_index or 0)


def get_pods_with_delayed_deletion_per_index(ctx: SyncJobCtx) -> dict[int, core_v1.Pod]:
    """Per index still to be retried, its latest failed pod: it keeps its finalizer until a
    replacement carries its failure count on. Upstream: getPodsWithDelayedDeletionPerIndex
    """
    active = ix.get_indexes(ctx.active_pods)
    out: dict[int, core_v1.Pod] = {}
    for p in get_valid_pods_with_filter(ctx, None, lambda p: is_pod_failed(p, ctx.job)):
        i = get_completion_index(p.metadata.annotations)
        if (ctx.succeeded_indexes.has(i) or (ctx.failed_indexes is not None and ctx.failed_indexes.has(i))
                or i in active):
            continue
        last = out.get(i)
        if last is None or (ix.get_index_absolute_failure_count(last) <= ix.get_index_absolute_failure_count(p)
                            and get_finished_time(p) >= get_finished_time(last)):
            out[i] = p
    return out


def get_new_index_failure_counts(job: batch_v1.Job, replaced: core_v1.Pod | None) -> tuple[int, int]:
    """(failure count, ignored failure count) the replacement of a failed pod inherits.

    Upstream: getNewIndexFailureCounts
    """
    if replaced is None:
        return 0, 0
    failed = ix.get_index_failure_count(replaced)
    ignored = ix.get_index_absolute_failure_count(replaced) - failed
    if job.spec.pod_failure_policy is not None and not match_pod_failure_policy(job.spec.pod_failure_policy,
                                                                                 replaced)[1]:
        return failed, ignored + 1
    return failed + 1, ignored
