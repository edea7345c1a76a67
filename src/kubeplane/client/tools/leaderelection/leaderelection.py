"""Leader election on a coordination.k8s.io/v1 Lease.

    le = LeaderElector(cs, LeaderElectionConfig(
        "kube-system", "kube-controller-manager", identity="host-1_5f1c",
        callbacks=LeaderCallbacks(on_started_leading=run_controllers,    # async (stop) -> None
                                  on_stopped_leading=lambda: log.info("lost the lease"))),
        clock=clock)
    await le.run()      # returns when leadership is lost; cancel it to step down

How it works (upstream's algorithm, timings in seconds with the defaults 15/10/2):

* A candidate reads the Lease every retry_period (jittered up to x2.2: 2 s .. 4.4 s). It
  takes over only if the holder is empty, or the record has not changed for a whole
  leaseDurationSeconds *as measured on the candidate's own clock* since it first saw
  this record: the Lease's timestamps are never compared with local time, so clock
  skew between machines does not matter.
* The leader rewrites the Lease (renewTime) every retry_period. If it cannot for
  renew_deadline (10 s: tries at 0, 2, 4, 6, 8), it stops leading. Example: last good
  renewal at 100, failures from 102, the leader gives up at 112, while a candidate that
  saw the 100 renewal (at 100 at the latest) cannot take over before 115: at most one
  leader as long as clocks run at similar rates.
* Taking over a lease held by someone else increments leaseTransitions; renewing keeps
  acquireTime and leaseTransitions.
* Writes are PUTs of the last Lease read, so two candidates racing for one lease get a
  409 for the loser, who tries again next period.

This does not fence: a paused leader may act after losing the lease. Stop work when
on_started_leading's stop event is set (its task is cancelled right after).

Upstream: client-go tools/leaderelection/leaderelection.go
"""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....api import errors
from ....utils.clock import REAL_CLOCK, Clock
from . import metrics
from .resourcelock import Interface, LeaderElectionRecord, LeaseLock
from .resourcelock.interface import EventRecorderLike

if TYPE_CHECKING:
    from ...clientset import Clientset

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2


@dataclass
class LeaderCallbacks:
    """What to do as leadership comes and goes. Upstream: LeaderCallbacks

    on_started_leading(stop) runs as its own task once the lease is acquired; when
    leadership ends, `stop` is set and the task is cancelled and awaited.
    on_stopped_leading() is called (and awaited if it returns an awaitable) whenever
    run() ends, whether or not it ever led, as upstream.
    on_new_leader(identity) is called each time a different holder is observed,
    including the first one and this candidate itself.
    """

    on_started_leading: Callable[[asyncio.Event], Awaitable[None]] | None = None
    on_stopped_leading: Callable[[], Any] | None = None
    on_new_leader: Callable[[str], Any] | None = None


@dataclass
class LeaderElectionConfig:
    """Upstream: LeaderElectionConfig (durations in float seconds)."""

    lock_namespace: str
    lock_name: str
    identity: str
    # how long a candidate waits, from its last observed change of the record, to take over
    lease_duration: float = 15.0
    # how long the leader keeps retrying a renewal before it gives up leading
    renew_deadline: float = 10.0
    # the wait between tries (acquire: jittered by up to JITTER_FACTOR x)
    retry_period: float = 2.0
    callbacks: LeaderCallbacks = field(default_factory=LeaderCallbacks)
    # give the lease up (holder "", duration 1 s) when run() ends; only safe if all work
    # guarded by the lease has stopped, which run() ensures before releasing
    release_on_cancel: bool = False
    # for logs; defaults to "<namespace>/<name>"
    name: str = ""
    # if set, "<identity> became leader" / "stopped leading" events are recorded on the Lease
    event_recorder: EventRecorderLike | None = None


def validate_config(c: LeaderElectionConfig) -> None:
    """Raise ValueError for a config upstream's NewLeaderElector rejects.

    renew_deadline must exceed retry_period x 1.2 so that at least one jittered retry
    fits in it, and lease_duration must exceed renew_deadline so that a leader gives up
    before candidates may take over.
    Upstream: NewLeaderElector, leaderelection.go
    """
    if c.lease_duration <= c.renew_deadline:
        raise ValueError("leaseDuration must be greater than renewDeadline")
    if c.renew_deadline <= JITTER_FACTOR * c.retry_period:
        raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if c.lease_duration <= 0 or c.renew_deadline <= 0 or c.retry_period <= 0:
        raise ValueError("leaseDuration, renewDeadline and retryPeriod must be greater than zero")
    if c.callbacks.on_started_leading is None:
        raise ValueError("OnStartedLeading callback must not be nil")
    if c.callbacks.on_stopped_leading is None:
        raise ValueError("OnStoppedLeading callback must not be nil")
    if not c.identity:
        raise ValueError("Lock identity is empty")


class LeaderElector:
    """A leader election client. Upstream: LeaderElector, leaderelection.go"""

    def __init__(self, clientset: Clientset | None, config: LeaderElectionConfig, *,
                 clock: Clock = REAL_CLOCK, rng: random.Random | None = None,
                 lock: Interface | None = None) -> None:
        validate_config(config)
        self.config = config
        self.clock = clock
        self._rng = rng or random.Random()
        if lock is None:
            if clientset is None:
                raise ValueError("LeaderElector needs a clientset or a lock")
            lock = LeaseLock(config.lock_namespace, config.lock_name, clientset, config.identity,
                             config.event_recorder)
        self.lock = lock
        self.name = config.name or lock.describe()
        self.metric_name = config.name or config.lock_name    # the `name` label; upstream: config.Name
        metrics.leader_off(self.metric_name)
        # What this candidate last saw in (or wrote to) the lock, and when on its own
        # monotonic clock; lease expiry is judged from observed_time only.
        self.observed_record = LeaderElectionRecord()
        self.observed_raw_record = b""
        self.observed_time = float("-inf")
        # the leader last reported to on_new_leader; may lag observed_record
        self.reported_leader = ""
        self._callback_tasks: set[asyncio.Task[Any]] = set()

    # --- public ---------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire the lease, lead until the lease is lost, then return.

        Cancel the task running run() to step down (the lease is released if
        release_on_cancel). on_stopped_leading is called on every exit.
        Upstream: LeaderElector.Run
        """
        try:
            await self.acquire()
            await self._lead()
        finally:
            await _call(self.config.callbacks.on_stopped_leading)

    def is_leader(self) -> bool:
        """Whether the last observed holder is this candidate.

        As upstream this stays True after a failed renewal until another holder is
        observed; use check() for health, the callbacks for control.
        Upstream: LeaderElector.IsLeader
        """
        return self.observed_record.holder_identity == self.lock.identity()

    def get_leader(self) -> str:
        """The last observed holder, "" if none yet. Upstream: LeaderElector.GetLeader"""
        return self.observed_record.holder_identity

    def check(self, max_tolerable_expired_lease: float) -> Exception | None:
        """An error if we think we lead but have not renewed for lease_duration + max.

        Upstream: LeaderElector.Check (the healthz adaptor)
        """
        if not self.is_leader():
            return None
        if self.clock.monotonic() - self.observed_time > self.config.lease_duration + max_tolerable_expired_lease:
            return RuntimeError(f"failed election to renew leadership on lease {self.name}")
        return None

    # --- the loops ------------------------------------------------------------------

    async def acquire(self) -> bool:
        """Try every retry_period (jittered) until the lease is ours; cancel to abandon.

        Upstream: LeaderElector.acquire (wait.JitterUntil, sliding)
        """
        log.info("attempting to acquire leader lease", extra={"lease": self.name})
        while True:
            succeeded = await self.try_acquire_or_renew()
            self.maybe_report_transition()
            if succeeded:
                self.lock.record_event("became leader")
                metrics.leader_on(self.metric_name)
                log.info("successfully acquired lease", extra={"lease": self.name})
                return True
            log.debug("failed to acquire lease", extra={"lease": self.name})
            await self.clock.sleep(_jitter(self.config.retry_period, JITTER_FACTOR, self._rng))

    async def _lead(self) -> None:
        """Run on_started_leading beside renew(); stop it when renewal ends or we are cancelled.

        Upstream releases the lease before cancelling the leading context; here the
        leading task is stopped first, so released work never overlaps a new leader.
        """
        stop = asyncio.Event()
        start = self.config.callbacks.on_started_leading
        assert start is not None
        leading = asyncio.ensure_future(start(stop))
        try:
            await self.renew()
        finally:
            stop.set()
            leading.cancel()
            for r in await asyncio.gather(leading, return_exceptions=True):
                if isinstance(r, Exception):
                    log.error("OnStartedLeading failed", extra={"lease": self.name, "err": repr(r)})
            if self.config.release_on_cancel:
                await self.release()
            metrics.leader_off(self.metric_name)
            self.lock.record_event("stopped leading")

    async def renew(self) -> None:
        """Renew every retry_period; return once renew_deadline passes without success.

        Upstream: LeaderElector.renew (wait.Until around wait.PollUntilContextTimeout)
        """
        while True:
            ok = await self._poll_renew()
            self.maybe_report_transition()
            if not ok:
                metrics.leader_off(self.metric_name)
                log.info("failed to renew lease", extra={"lease": self.name,
                                                         "err": "timed out waiting for the condition"})
                return
            log.debug("successfully renewed lease", extra={"lease": self.name})
            await self.clock.sleep(self.config.retry_period)

    async def _poll_renew(self) -> bool:
        """Try now and every retry_period until one succeeds or renew_deadline passes.

        Example (10 s deadline, 2 s period): tries at +0, +2, +4, +6, +8; at +10 the
        deadline wins, so a try in flight at +10 is abandoned.
        """
        deadline = self.clock.monotonic() + self.config.renew_deadline
        while True:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            if await self._before_deadline(self.try_acquire_or_renew(), remaining):
                return True
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            await self.clock.sleep(min(self.config.retry_period, remaining))

    async def _before_deadline(self, coro: Coroutine[Any, Any, bool], remaining: float) -> bool:
        """coro's result, or False if `remaining` seconds of the clock pass first."""
        attempt = asyncio.ensure_future(coro)
        timer = asyncio.ensure_future(self.clock.sleep(remaining))
        try:
            await asyncio.wait({attempt, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not attempt.done():
                attempt.cancel()
                await asyncio.gather(attempt, return_exceptions=True)
        return attempt.done() and not attempt.cancelled() and attempt.result()

    # --- one step -------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """Acquire the lease if free or expired, renew it if ours; True on success.

        Upstream: LeaderElector.tryAcquireOrRenew
        """
        now = self.clock.now()
        record = LeaderElectionRecord(holder_identity=self.lock.identity(),
                                      lease_duration_seconds=int(self.config.lease_duration),
                                      renew_time=now, acquire_time=now)
        # 1. fast path: the leader updates optimistically, assuming the record it wrote
        # last is still the current one (one PUT instead of GET + PUT)
        if self.is_leader() and self.is_lease_valid(self.clock.monotonic()):
            old = self.observed_record
            renewed = dataclasses.replace(record, acquire_time=old.acquire_time,
                                          leader_transitions=old.leader_transitions)
            try:
                await self.lock.update(renewed)
                self.set_observed_record(renewed)
                return True
            except Exception as e:
                log.error("Failed to update lock optimistically, falling back to slow path",
                          extra={"lease": self.name, "err": str(e)})
        # 2. obtain or create the record
        try:
            old, old_raw = await self.lock.get()
        except errors.NotFound:
            try:
                await self.lock.create(record)
            except Exception as e:
                log.error("error initially creating leader election record",
                          extra={"lease": self.name, "err": str(e)})
                return False
            self.set_observed_record(record)
            return True
        except Exception as e:
            log.error("error retrieving resource lock", extra={"lease": self.name, "err": str(e)})
            return False
        return await self._take_or_renew(record, old, old_raw)

    async def _take_or_renew(self, record: LeaderElectionRecord, old: LeaderElectionRecord,
                             old_raw: bytes) -> bool:
        """Steps 3 and 4 of tryAcquireOrRenew: judge the record read, then write ours."""
        # 3. a changed record restarts the expiry countdown
        if self.observed_raw_record != old_raw:
            self.set_observed_record(old)
            self.observed_raw_record = old_raw
        if old.holder_identity and self.is_lease_valid(self.clock.monotonic()) and not self.is_leader():
            log.debug("lock is held and has not yet expired",
                      extra={"lease": self.name, "holder": old.holder_identity})
            return False
        # 4. renewing keeps acquireTime and the transition count; taking over bumps it
        if self.is_leader():
            record = dataclasses.replace(record, acquire_time=old.acquire_time,
                                         leader_transitions=old.leader_transitions)
            metrics.slowpath_exercised(self.metric_name)
        else:
            record = dataclasses.replace(record, leader_transitions=old.leader_transitions + 1)
        try:
            await self.lock.update(record)
        except Exception as e:
            log.error("Failed to update lock", extra={"lease": self.name, "err": str(e)})
            return False
        self.set_observed_record(record)
        return True

    async def release(self) -> bool:
        """Give the lease up if we hold it: holder "", leaseDurationSeconds 1.

        Upstream: LeaderElector.release
        """
        if not self.is_leader():
            return True
        now = self.clock.now()
        record = LeaderElectionRecord(leader_transitions=self.observed_record.leader_transitions,
                                      lease_duration_seconds=1, renew_time=now, acquire_time=now)
        try:
            if not await self._before_deadline(self._update(record), self.config.renew_deadline):
                raise TimeoutError("timed out releasing the lease")
        except Exception as e:
            log.error("Failed to release lock", extra={"lease": self.name, "err": str(e)})
            return False
        self.set_observed_record(record)
        return True

    async def _update(self, record: LeaderElectionRecord) -> bool:
        await self.lock.update(record)
        return True

    def is_lease_valid(self, now: float) -> bool:
        """Whether the observed record is younger than its leaseDurationSeconds (monotonic now).

        Upstream: LeaderElector.isLeaseValid
        """
        return self.observed_time + self.observed_record.lease_duration_seconds > now

    def set_observed_record(self, record: LeaderElectionRecord) -> None:
        """Upstream: LeaderElector.setObservedRecord"""
        self.observed_record = record
        self.observed_time = self.clock.monotonic()

    def maybe_report_transition(self) -> None:
        """Call on_new_leader once per change of observed holder. Upstream: maybeReportTransition"""
        if self.observed_record.holder_identity == self.reported_leader:
            return
        self.reported_leader = self.observed_record.holder_identity
        cb = self.config.callbacks.on_new_leader
        if cb is None:
            return
        result = cb(self.reported_leader)
        if inspect.isawaitable(result):     # upstream runs it in a goroutine: don't wait
            task = asyncio.ensure_future(result)
            self._callback_tasks.add(task)
            task.add_done_callback(self._callback_tasks.discard)


def _jitter(duration: float, max_factor: float, rng: random.Random) -> float:
    """duration plus up to max_factor x duration: 2 s, 1.2 -> 2 s .. 4.4 s.

    Upstream: wait.Jitter
    """
    return duration + rng.random() * max_factor * duration


async def _call(fn: Callable[[], Any] | None) -> None:
    if fn is None:
        return
    result = fn()
    if inspect.isawaitable(result):
        await result
