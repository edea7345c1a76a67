"""The CronJob controller: starts a Job at each scheduled time of every CronJob.

A sync reads the CronJob and the Jobs it controls from the listers, removes finished Jobs past
the history limits, reconciles status.active with the Jobs that exist, and, when a scheduled time
has come (and is within startingDeadlineSeconds, and concurrencyPolicy allows it), creates the
Job `<cronjob>-<scheduled minutes>` and records it in status.active and lastScheduleTime. It
then requeues the CronJob for its next scheduled time (+100ms) on the clock: no polling, and a
fake clock in the tests makes minutes pass at once.

Example: "*/1 * * * *", created 10:00:30. At 10:01:00.1 the sync finds 10:01 unmet, creates
`x-<10:01 in minutes>` and requeues 60s later; when the Job completes, status.active drops it
(SawCompletedJob) and lastSuccessfulTime takes its completion time.

    cjc = ControllerV2(factory.batch_v1().jobs(), factory.batch_v1().cronjobs(), clientset)
    factory.start()
    await cjc.run(5)

Upstream: pkg/controller/cronjob/cronjob_controllerv2.go (ControllerV2).
"""
from __future__ import annotations

import asyncio
import logging
import zoneinfo
from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.types import batch_v1
from ...api.validation.cron import CronError, Schedule, load_location, parse_standard
from ...client.tools.cache import ResourceEventHandlerFuncs, meta_namespace_key_func, object_from_tombstone
from ...client.tools.cache import split_meta_namespace_key
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339, rfc3339
from .. import controller_utils as cu
from . import utils
from .metrics import CRON_JOB_CREATION_SKEW
from .injection import CJControlInterface, JobControlInterface, RealCJControl, RealJobControl

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

CONTROLLER_NAME = "cronjob-controller"


class _LogRecorder:
    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason})


class ControllerV2:
    """Upstream: ControllerV2"""

    def __init__(self, job_informer: ResourceInformer[Any], cron_job_informer: ResourceInformer[Any],
                 client: Clientset, *, clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None) -> None:
        self.clock = clock
        self.recorder: Any = recorder if recorder is not None else _LogRecorder()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name="cronjob", clock=clock))
        self.job_control: JobControlInterface = RealJobControl(client)          # test seams
        self.cron_job_control: CJControlInterface = RealCJControl(client)
        self.now = clock.now
        self.job_lister = job_informer.lister()
        self.cron_job_lister = cron_job_informer.lister()
        self._informers = (job_informer.informer(), cron_job_informer.informer())
        job_informer.informer().add_event_handler(ResourceEventHandlerFuncs(self.add_job, self.update_job,
                                                                            self.delete_job))
        cron_job_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.enqueue_controller, self.update_cron_job, self.enqueue_controller))

    # --- run loop -------------------------------------------------------------------------------

    async def run(self, workers: int = 5) -> None:
        """Wait for the caches, then run workers until cancelled. Upstream: Run"""
        log.info("Starting controller", extra={"controller": CONTROLLER_NAME})
        try:
            for inf in self._informers:
                await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for _ in range(workers):
                    tg.create_task(self.worker())
        finally:
            self.queue.shut_down()
            log.info("Shutting down controller", extra={"controller": CONTROLLER_NAME})

    async def worker(self) -> None:
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """A failed sync is retried with back-off; a successful one waits for its next
        scheduled time (a suspended or unparseable CronJob waits for its next update).
        Upstream: processNextWorkItem"""
        key, shutdown = await self.queue.get()
        if shutdown:
            return False
        try:
            requeue_after = await self.sync(key)
        except Exception as err:
            log.info("error syncing CronJobController %s, requeuing: %s", key, err)
            self.queue.add_rate_limited(key)
        else:
            if requeue_after is not None:
                self.queue.forget(key)
                self.queue.add_after(key, requeue_after)
        finally:
            self.queue.done(key)
        return True

    async def sync(self, key: str) -> float | None:
        """Seconds until the CronJob wants syncing again, or None. Upstream: sync"""
        ns, name = split_meta_namespace_key(key)
        try:
            cron_job = self.cron_job_lister.cronjobs(ns).get(name)
        except errors.NotFound:
            return None                      # deleted: nothing to requeue
        jobs = self.get_jobs_to_be_reconciled(cron_job)
        # One copy gathers every change, so the status is written once.
        cj = cron_job.deep_copy()
        update_after_cleanup = await self.cleanup_finished_jobs(cj, jobs)
        requeue_after, update_after_sync, sync_err = await self._sync_cron_job_or_error(cj, jobs)
        if update_after_cleanup or update_after_sync:
            await self.cron_job_control.update_status(cj)
        if requeue_after is not None:
            return requeue_after
        if sync_err is not None:
            raise sync_err
        return None

    async def _sync_cron_job_or_error(self, cj: batch_v1.CronJob, jobs: list[batch_v1.Job]
                                      ) -> tuple[float | None, bool, Exception | None]:
        try:
            requeue_after, update_status = await self.sync_cron_job(cj, jobs)
        except _SyncError as e:
            log.info("Error reconciling cronjob %s: %s", cu.key_func(cj), e.err)
            return None, e.update_status, e.err
        return requeue_after, update_status, None

    # --- ownership --------------------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str | None, ref: Any) -> batch_v1.CronJob | None:
        """The cached CronJob a controller ref points to: right Kind, name and UID.
        Upstream: resolveControllerRef"""
        if ref.kind != utils.CONTROLLER_KIND.kind:
            return None
        try:
            cj = self.cron_job_lister.cronjobs(namespace or "").get(ref.name)
        except errors.NotFound:
            return None
        return cj if cj.metadata.uid == ref.uid else None

    def get_jobs_to_be_reconciled(self, cj: batch_v1.CronJob) -> list[batch_v1.Job]:
        """Every Job of the namespace whose controller ref names the CronJob, whatever its labels.
        Upstream: getJobsToBeReconciled"""
        return [j for j in self.job_lister.jobs(cj.metadata.namespace or "").list()
                if (ref := cu.get_controller_of(j)) is not None and ref.name == cj.metadata.name]

    # --- event handlers ---------------------------------------------------------------------------

    def add_job(self, job: batch_v1.Job) -> None:
        """Upstream: addJob"""
        if job.metadata.deletion_timestamp is not None:
            self.delete_job(job)
            return
        if (ref := cu.get_controller_of(job)) is not None:
            if (cj := self.resolve_controller_ref(job.metadata.namespace, ref)) is not None:
                self.enqueue_controller(cj)

    def update_job(self, old: batch_v1.Job, cur: batch_v1.Job) -> None:
        """Wake the old and the new controller. Upstream: updateJob"""
        if cur.metadata.resource_version == old.metadata.resource_version:
            return                                   # a periodic resync
        cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            if (cj := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
                self.enqueue_controller(cj)
        if cur_ref is not None:
            if (cj := self.resolve_controller_ref(cur.metadata.namespace, cur_ref)) is not None:
                self.enqueue_controller(cj)

    def delete_job(self, obj: Any) -> None:
        """Upstream: deleteJob"""
        job = object_from_tombstone(obj, batch_v1.Job)
        if job is None or (ref := cu.get_controller_of(job)) is None:
            return
        if (cj := self.resolve_controller_ref(job.metadata.namespace, ref)) is not None:
            self.enqueue_controller(cj)

    def enqueue_controller(self, obj: Any) -> None:
        self.queue.add(meta_namespace_key_func(obj))

    def enqueue_controller_after(self, obj: Any, delay: float) -> None:
        self.queue.add_after(meta_namespace_key_func(obj), delay)

    def update_cron_job(self, old: batch_v1.CronJob, cur: batch_v1.CronJob) -> None:
        """A new schedule or time zone requeues for its next time (sooner than the old one's, or a
        no-op sync at the old time); any other change syncs now. Upstream: updateCronJob"""
        old_spec, new_spec = old.spec or batch_v1.CronJobSpec(), cur.spec or batch_v1.CronJobSpec()
        if old_spec.schedule != new_spec.schedule or old_spec.time_zone != new_spec.time_zone:
            try:
                sched = parse_standard(format_schedule(cur, None))
            except CronError:
                # A user error in the spec: not reconciled until the next update.
                self.recorder.eventf(cur, "Warning", "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s",
                                     new_spec.schedule)
                return
            delay = utils.next_schedule_time_duration(cur, self.now(), sched)
            self.enqueue_controller_after(cur, 0.0 if delay is None else delay)     # None: sync reports it
            return
        self.enqueue_controller(cur)

    # --- sync ---------------------------------------------------------------------------------------

    async def sync_cron_job(self, cron_job: batch_v1.CronJob, jobs: list[batch_v1.Job]) -> tuple[float | None, bool]:
        """Reconcile a CronJob with its Jobs and start the one that is due: (seconds until the
        next sync or None, whether the status changed). Failures raise _SyncError, which carries
        whether the status changed before. Upstream: syncCronJob"""
        now = self.now()
        update_status = False
        try:
            cron_job, update_status = await self._reconcile_active(cron_job, jobs)
            if cron_job.metadata.deletion_timestamp is not None:
                return None, update_status          # being deleted: only the status is kept
            return await self._start_due_job(cron_job, now, update_status)
        except _SyncError:
            raise
        except Exception as err:
            raise _SyncError(err, update_status) from err

    async def _reconcile_active(self, cron_job: batch_v1.CronJob, jobs: list[batch_v1.Job]
                                ) -> tuple[batch_v1.CronJob, bool]:
        """status.active against the Jobs seen: unexpected ones reported, finished ones removed,
        lastSuccessfulTime advanced, vanished ones dropped (after asking the API server)."""
        update_status = False
        children = set()
        status = utils._status(cron_job)
        for j in jobs:
            children.add(j.metadata.uid)
            found = utils.in_active_list(cron_job, j.metadata.uid)
            if not found and not utils.is_job_finished(j):
                try:
                    fresh = await self.cron_job_control.get_cron_job(cron_job.metadata.namespace or "",
                                                                     cron_job.metadata.name or "")
                except Exception as err:
                    raise _SyncError(err, update_status) from err
                if utils.in_active_list(fresh, j.metadata.uid):
                    # Our status is older than the Job list; upstream goes on with the fresh copy.
                    cron_job, status = fresh, utils._status(fresh)
                    continue
                # Not in our active list: we crashed between the create and the status write, the
                # lists are out of step after a relist, or someone wants us to adopt it.
                self.recorder.eventf(cron_job, "Warning", "UnexpectedJob",
                                     "Saw a job that the controller did not create or forgot: %s", j.metadata.name)
            elif utils.is_job_finished(j):
                if found:
                    _, condition = utils.finished_condition(j)
                    utils.delete_from_active_list(cron_job, j.metadata.uid)
                    self.recorder.eventf(cron_job, "Normal", "SawCompletedJob", "Saw completed job: %s, condition: %v",
                                         j.metadata.name, condition)
                    update_status = True
                if utils.is_job_succeeded(j):
                    # Any succeeded Job counts, in the active list or not.
                    completed = j.status.completion_time if j.status else None
                    if status.last_successful_time is None:
                        status.last_successful_time = completed
                        update_status = True
                    if completed and status.last_successful_time and _after(completed, status.last_successful_time):
                        status.last_successful_time = completed
                        update_status = True
        for ref in list(status.active or ()):
            if ref.uid in children:
                continue
            # Not in the lister: ask the API server, the watch may just be slow.
            try:
                await self.job_control.get_job(ref.namespace or "", ref.name or "")
            except errors.StatusError as err:
                if not errors.is_not_found(err):
                    raise _SyncError(err, update_status) from err
                self.recorder.eventf(cron_job, "Normal", "MissingJob", "Active job went missing: %v", ref.name)
                utils.delete_from_active_list(cron_job, ref.uid)
                update_status = True
        return cron_job, update_status

    async def _start_due_job(self, cron_job: batch_v1.CronJob, now: float, update_status: bool
                             ) -> tuple[float | None, bool]:
        spec = cron_job.spec or batch_v1.CronJobSpec()
        if spec.time_zone is not None:
            try:
                load_location(spec.time_zone)
            except CronError as err:
                self.recorder.eventf(cron_job, "Warning", "UnknownTimeZone", "invalid timeZone: %q: %s",
                                     spec.time_zone, str(err))
                return None, update_status
        if spec.suspend:
            return None, update_status
        try:
            sched = parse_standard(format_schedule(cron_job, self.recorder))
        except CronError as parse_err:
            # A user error in the spec: not reconciled until the next update.
            self.recorder.eventf(cron_job, "Warning", "UnparseableSchedule", "unparseable schedule: %q : %s",
                                 spec.schedule or "", str(parse_err))
            return None, update_status
        scheduled, invalid = utils.next_schedule_time(cron_job, now, sched, self.recorder)
        if invalid is not None:
            self.recorder.eventf(cron_job, "Warning", "InvalidSchedule", "invalid schedule: %s : %s",
                                 spec.schedule or "", invalid)
            return None, update_status
        if scheduled is None:
            # No unmet start time: only after a restart; otherwise the requeue lands on one.
            return utils.next_schedule_time_duration(cron_job, now, sched), update_status
        if spec.starting_deadline_seconds is not None and scheduled + spec.starting_deadline_seconds < now:
            self.recorder.eventf(cron_job, "Warning", "MissSchedule", "Missed scheduled time to start a job: %s",
                                 _rfc1123z(scheduled))
            return utils.next_schedule_time_duration(cron_job, now, sched), update_status
        status = utils._status(cron_job)
        name = utils.get_job_name(cron_job, scheduled)
        if (utils.in_active_list_by_name(cron_job, cron_job.metadata.namespace, name)
                or status.last_schedule_time == rfc3339(scheduled)):
            return utils.next_schedule_time_duration(cron_job, now, sched), update_status     # already done
        if spec.concurrency_policy == "Forbid" and status.active:
            # Whatever we read, we may miss a running Job (an unseen status write or create), so
            # Forbid can still overlap; runs far enough apart in time do not.
            self.recorder.eventf(cron_job, "Normal", "JobAlreadyActive",
                                 "Not starting job because prior execution is running and concurrency policy is Forbid")
            return utils.next_schedule_time_duration(cron_job, now, sched), update_status
        if spec.concurrency_policy == "Replace":
            update_status = await self._replace_active(cron_job, update_status)
        return await self._create_job(cron_job, scheduled, now, sched, update_status)

    async def _replace_active(self, cron_job: batch_v1.CronJob, update_status: bool) -> bool:
        for ref in list(utils._status(cron_job).active or ()):
            try:
                job = await self.job_control.get_job(ref.namespace or "", ref.name or "")
            except Exception as err:
                self.recorder.eventf(cron_job, "Warning", "FailedGet", "Get job: %v", str(err))
                raise _SyncError(err, update_status) from err
            if not await delete_job(cron_job, job, self.job_control, self.recorder):
                raise _SyncError(RuntimeError(f"could not replace job {job.metadata.namespace}/{job.metadata.name}"),
                                 update_status)
            update_status = True
        return update_status

    async def _create_job(self, cron_job: batch_v1.CronJob, scheduled: float, now: float, sched: Schedule,
                          update_status: bool) -> tuple[float | None, bool]:
        """Create the scheduled Job (its name is the lock against creating it twice), then
        record it in status.active and lastScheduleTime."""
        try:
            job_req = utils.get_job_from_template2(cron_job, scheduled)
        except CronError as err:
            raise _SyncError(err, update_status) from err
        namespace = cron_job.metadata.namespace or ""
        try:
            job = await self.job_control.create_job(namespace, job_req)
        except errors.StatusError as err:
            if errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                raise _SyncError(err, update_status) from err     # every create fails: nothing to do
            if not errors.is_already_exists(err):
                self.recorder.eventf(cron_job, "Warning", "FailedCreate", "Error creating job: %v", str(err))
                raise _SyncError(err, update_status) from err
            # We made it before but did not record it (a failed status write), or someone else did.
            try:
                job = await self.job_control.get_job(namespace, job_req.metadata.name or "")
            except Exception as get_err:
                raise _SyncError(get_err, update_status) from get_err
            if not cu.is_controlled_by(job, cron_job) or utils.in_active_list(cron_job, job.metadata.uid):
                return None, update_status          # another owner updates the status; or done
            log.info("Job already exists", extra={"cronjob": cu.key_func(cron_job), "job": job.metadata.name})
        else:
            if job.metadata.creation_timestamp:
                CRON_JOB_CREATION_SKEW.observe(parse_rfc3339(job.metadata.creation_timestamp) - scheduled)
            self.recorder.eventf(cron_job, "Normal", "SuccessfulCreate", "Created job %v", job.metadata.name)
        status = utils._status(cron_job)
        status.active = [*(status.active or ()), utils.get_ref(job)]
        status.last_schedule_time = rfc3339(scheduled)
        return utils.next_schedule_time_duration(cron_job, now, sched), True

    # --- history ------------------------------------------------------------------------------------

    async def cleanup_finished_jobs(self, cj: batch_v1.CronJob, jobs: list[batch_v1.Job]) -> bool:
        """Delete the oldest finished Jobs past successfulJobsHistoryLimit and
        failedJobsHistoryLimit; whether the status changed. Upstream: cleanupFinishedJobs"""
        spec = cj.spec or batch_v1.CronJobSpec()
        if spec.failed_jobs_history_limit is None and spec.successful_jobs_history_limit is None:
            return False
        successful, failed = [], []
        for job in jobs:
            finished, condition = utils.finished_condition(job)
            if finished and condition == "Complete":
                successful.append(job)
            elif finished and condition == "Failed":
                failed.append(job)
        update_status = False
        if spec.successful_jobs_history_limit is not None and await self.remove_oldest_jobs(
                cj, successful, spec.successful_jobs_history_limit):
            update_status = True
        if spec.failed_jobs_history_limit is not None and await self.remove_oldest_jobs(
                cj, failed, spec.failed_jobs_history_limit):
            update_status = True
        return update_status

    async def remove_oldest_jobs(self, cj: batch_v1.CronJob, jobs: list[batch_v1.Job], max_jobs: int) -> bool:
        """Upstream: removeOldestJobs"""
        to_delete = len(jobs) - max_jobs
        if to_delete <= 0:
            return False
        update_status = False
        for job in sorted(jobs, key=utils.by_job_start_time)[:to_delete]:
            if await delete_job(cj, job, self.job_control, self.recorder):
                update_status = True
        return update_status


class _SyncError(Exception):
    """A sync failure, and whether the status had changed before it (upstream returns both)."""

    def __init__(self, err: Exception, update_status: bool) -> None:
        super().__init__(str(err))
        self.err = err
        self.update_status = update_status


async def delete_job(cj: batch_v1.CronJob, job: batch_v1.Job, job_control: JobControlInterface, recorder: Any) -> bool:
    """Delete a Job (its pods go with it) and its active-list entry. Upstream: deleteJob"""
    try:
        await job_control.delete_job(job.metadata.namespace or "", job.metadata.name or "")
    except Exception as err:
        recorder.eventf(cj, "Warning", "FailedDelete", "Deleted job: %v", str(err))
        log.warning("Error deleting job %s from cronjob %s: %s", job.metadata.name, cj.metadata.name, err)
        return False
    utils.delete_from_active_list(cj, job.metadata.uid)
    recorder.eventf(cj, "Normal", "SuccessfulDelete", "Deleted job %v", job.metadata.name)
    return True


def format_schedule(cj: batch_v1.CronJob, recorder: Any) -> str:
    """The schedule robfig parses: a TZ in the schedule as it is (warned about), else the
    timeZone field as a TZ= prefix. Upstream: formatSchedule"""
    spec = cj.spec or batch_v1.CronJobSpec()
    schedule = spec.schedule or ""
    if "TZ" in schedule:
        if recorder is not None:
            recorder.eventf(cj, "Warning", "UnsupportedSchedule",
                            "CRON_TZ or TZ used in schedule %q is not officially supported, see "
                            "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                            schedule)
        return schedule
    if spec.time_zone is not None:
        try:
            load_location(spec.time_zone)
        except (CronError, zoneinfo.ZoneInfoNotFoundError):
            return schedule
        return f"TZ={spec.time_zone} {schedule}"
    return schedule


def _after(a: str, b: str) -> bool:
    return parse_rfc3339(a) > parse_rfc3339(b)


def _rfc1123z(t: float) -> str:
    """Go's time.RFC1123Z in UTC: "Thu, 19 May 2016 10:00:00 +0000"."""
    import datetime as dt
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S +0000")
