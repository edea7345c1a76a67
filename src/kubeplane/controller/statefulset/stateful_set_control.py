"""The StatefulSet control loop: revisions, ordered (or parallel) scaling, rolling updates.

OrderedReady ("monotonic"): pods are created one at a time in ordinal order, each only once
every lower ordinal is Running, Ready and Available; scale-down removes the highest ordinal
first, one at a time, and only while everything else is healthy. Parallel: every missing pod
is created, every condemned pod deleted, in slow-start batches, without waiting.
Rolling updates delete the highest-ordinal pod not at the update revision (down to the
partition), at most maxUnavailable unhealthy at a time; OnDelete leaves that to the user.

Upstream: pkg/controller/statefulset/stateful_set_control.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable, Sequence, overload

from ...api import errors
from ...api.types import apps_v1, core_v1
from ...utils.clock import Clock
from .. import controller_utils as cu
from .. import history
from . import metrics
from . import stateful_set_utils as ssu

if TYPE_CHECKING:
    from .stateful_pod_control import StatefulPodControl
    from .stateful_set_status_updater import StatefulSetStatusUpdater

log = logging.getLogger(__name__)

# Realistic value for maximum in-flight requests when processing in parallel mode. Upstream: MaxBatchSize
MAX_BATCH_SIZE = 500

Revision = apps_v1.ControllerRevision
StepFn = Callable[[int], Awaitable[bool]]


@dataclass
class DefaultStatefulSetControl:
    """Upstream: defaultStatefulSetControl"""

    pod_control: StatefulPodControl
    status_updater: StatefulSetStatusUpdater
    controller_history: history.Interface
    clock: Clock
    # MaxUnavailableStatefulSet (beta, on by default): honour rollingUpdate.maxUnavailable.
    max_unavailable_stateful_set: bool = True
    # StatefulSetSemanticRevisionComparison (on by default): a revision equal as a typed
    # template counts as equal (no rollout for bytes-only differences).
    semantic_revision_comparison: bool = True

    async def update_stateful_set(self, s: apps_v1.StatefulSet,
                                  pods: Sequence[core_v1.Pod]) -> apps_v1.StatefulSetStatus | None:
        """Converge s (a cached object: copied here) and its pods one step, write status, then
        trim the history to revisionHistoryLimit. Upstream: UpdateStatefulSet"""
        s = s.deep_copy()
        revisions = history.sort_controller_revisions(await self.list_revisions(s))
        current = update = None
        try:
            current, update, status = await self.perform_update(s, pods, revisions)
        except _UpdateError as err:
            current, update = err.current, err.update
            await self._truncate_after_error(s, pods, revisions, current, update, err.cause)
            raise err.cause from None
        await self.truncate_history(s, pods, revisions, current, update)
        return status

    async def _truncate_after_error(self, s: apps_v1.StatefulSet, pods: Sequence[core_v1.Pod],
                                    revisions: list[Revision], current: Revision | None, update: Revision | None,
                                    cause: Exception) -> None:
        try:
            await self.truncate_history(s, pods, revisions, current, update)
        except Exception as err:
            raise cu.AggregateError([cause, err]) from None

    async def perform_update(self, s: apps_v1.StatefulSet, pods: Sequence[core_v1.Pod], revisions: list[Revision]
                             ) -> tuple[Revision, Revision, apps_v1.StatefulSetStatus]:
        """Revisions, then the pod step, then status (written even when the step failed).

        Upstream: performUpdate
        """
        try:
            current, update, collision_count = await self.get_stateful_set_revisions(s, revisions)
        except Exception as err:
            raise _UpdateError(None, None, err) from None
        status, pods_err = await self.update_stateful_set_pods(s, current, update, collision_count, pods)
        if status is None:
            raise _UpdateError(current, update, pods_err or RuntimeError("no status"))
        try:
            await self.update_stateful_set_status(s, status)
        except Exception as status_err:
            if pods_err is None:
                raise _UpdateError(current, update, status_err) from None
            log.error("Could not update status", extra={"statefulSet": s.metadata.name, "err": str(status_err)})
        if pods_err is not None:
            raise _UpdateError(current, update, pods_err)
        return current, update, status

    async def list_revisions(self, s: apps_v1.StatefulSet) -> list[Revision]:
        """Upstream: ListRevisions"""
        return await self.controller_history.list_controller_revisions(s, cu.selector_from(s.spec.selector))

    async def adopt_orphan_revisions(self, s: apps_v1.StatefulSet, revisions: list[Revision]) -> None:
        """Upstream: AdoptOrphanRevisions"""
        for i, rev in enumerate(revisions):
            revisions[i] = await self.controller_history.adopt_controller_revision(s, ssu.CONTROLLER_KIND, rev)

    async def truncate_history(self, s: apps_v1.StatefulSet, pods: Sequence[core_v1.Pod], revisions: list[Revision],
                               current: Revision | None, update: Revision | None) -> None:
        """Delete the oldest revisions that no pod, nor status, uses, down to revisionHistoryLimit.

        Example: limit 2, revisions 1..5, pods at 4 and 5 (current 4, update 5): history is 1, 2,
        3; one too many, so revision 1 goes. Upstream: truncateHistory
        """
        live = {r.metadata.name for r in (current, update) if r is not None}
        live |= {ssu.get_pod_revision(p) for p in pods}
        hist = [r for r in revisions if r.metadata.name not in live]
        limit = s.spec.revision_history_limit if s.spec.revision_history_limit is not None else 10
        for rev in hist[:max(len(hist) - limit, 0)]:
            await self.controller_history.delete_controller_revision(rev)

    async def get_stateful_set_revisions(self, s: apps_v1.StatefulSet,
                                         revisions: list[Revision]) -> tuple[Revision, Revision, int]:
        """(current, update, collisionCount). The update revision is the set's template: the last
        revision if equal, an older equal one renumbered (a rollback), else a new one.

        Upstream: getStatefulSetRevisions
        """
        history.sort_controller_revisions(revisions)
        collision_count = (s.status.collision_count or 0) if s.status else 0
        update = ssu.new_revision(s, history.next_revision(revisions), collision_count)
        equal = history.find_equal_revisions(revisions, update)
        same: Callable[[Revision, Revision], bool] = history.equal_revision
        if not equal and self.semantic_revision_comparison:
            equal = [r for r in revisions if ssu.revision_templates_semantically_equal(r, update)]
            same = ssu.revision_templates_semantically_equal
        if equal and same(revisions[-1], equal[-1]):
            update = revisions[-1]
        elif equal:
            update = await self.controller_history.update_controller_revision(equal[-1], update.revision or 0)
        else:
            update, collision_count = await self.controller_history.create_controller_revision(
                s, update, collision_count)
        want = s.status.current_revision if s.status else None
        current = next((r for r in revisions if r.metadata.name == want), None) or update
        return current, update, collision_count

    # --- status ----------------------------------------------------------------------------

    def update_status(self, status: apps_v1.StatefulSetStatus, min_ready_seconds: int, current: Revision,
                      update: Revision, *pod_lists: Sequence[core_v1.Pod | None]) -> None:
        """Count replicas, ready, available, current and updated over the pods. Upstream: updateStatus"""
        now = self.clock.now()
        replicas = ready = available = current_n = updated = 0
        for pods in pod_lists:
            for pod in pods:
                if pod is None:
                    continue
                created = ssu.is_created(pod)
                replicas += created
                if ssu.is_running_and_ready(pod):
                    ready += 1
                    available += ssu.is_running_and_available(pod, min_ready_seconds, now)
                if created and not ssu.is_terminating(pod):
                    rev = ssu.get_pod_revision(pod)
                    current_n += rev == current.metadata.name
                    updated += rev == update.metadata.name
        status.replicas, status.ready_replicas, status.available_replicas = replicas, ready, available
        status.current_replicas, status.updated_replicas = current_n, updated

    async def update_stateful_set_status(self, s: apps_v1.StatefulSet, status: apps_v1.StatefulSetStatus) -> None:
        """Complete a finished rolling update, then write status if it changed. Upstream: updateStatefulSetStatus"""
        ssu.complete_rolling_update(s, status)
        if not ssu.inconsistent_status(s, status):
            return
        await self.status_updater.update_stateful_set_status(s.deep_copy(), status)

    # --- the pod step ------------------------------------------------------------------------

    async def process_replica(self, s: apps_v1.StatefulSet, update_set: apps_v1.StatefulSet, monotonic: bool,
                              replicas: Sequence[core_v1.Pod], i: int) -> bool:
        """One replica: replace it if finished, create it (and its claims), wait for it in
        monotonic mode, or restore its identity and storage. True: stop this sync.

        Upstream: processReplica
        """
        pod = replicas[i]
        if ssu.is_failed(pod) or ssu.is_succeeded(pod):
            # A finished pod (evicted, node rebooted: the exit code decides the phase) is
            # replaced; the new one is made once the old one is gone from storage.
            if pod.metadata.deletion_timestamp is None:
                await self.pod_control.delete_stateful_pod(s, pod)
            return True
        if not ssu.is_created(pod):
            if self.pod_control.pod_claim_is_stale(s, pod):
                return True                 # a stale claim awaits garbage collection
            await self.pod_control.create_stateful_pod(s, pod)
            if monotonic:
                return True
        if ssu.is_pending(pod):
            await self.pod_control.create_missing_persistent_volume_claims(s, pod)
        if monotonic and (ssu.is_terminating(pod) or not ssu.is_running_and_ready(pod) or
                          not ssu.is_running_and_available(pod, s.spec.min_ready_seconds or 0, self.clock.now())):
            return True                     # each predecessor must be Running, Ready and Available
        try:
            retention_match = self.pod_control.claims_match_retention_policy(update_set, pod)
        except Exception:
            retention_match = True          # expected while the pod is being updated
        if ssu.identity_matches(s, pod) and ssu.storage_matches(s, pod) and retention_match:
            return False
        await self.pod_control.update_stateful_pod(update_set, pod.deep_copy())
        return False

    async def process_condemned(self, s: apps_v1.StatefulSet, first_unhealthy: core_v1.Pod | None, monotonic: bool,
                                condemned: list[core_v1.Pod], i: int) -> bool:
        """Delete one pod beyond the ordinal range; in monotonic mode only when every other pod
        is healthy (the first unhealthy pod itself may go). Upstream: processCondemned"""
        pod = condemned[i]
        if ssu.is_terminating(pod):
            return monotonic                # monotonic: wait for it to go
        if monotonic and pod is not first_unhealthy and (
                not ssu.is_running_and_ready(pod)
                or not ssu.is_running_and_available(pod, s.spec.min_ready_seconds or 0, self.clock.now())):
            return True
        log.info("Pod of StatefulSet is terminating for scale down",
                 extra={"statefulSet": s.metadata.name, "pod": pod.metadata.name})
        await self.pod_control.delete_stateful_pod(s, pod)
        return True

    async def update_stateful_set_pods(self, s: apps_v1.StatefulSet, current_revision: Revision,
                                       update_revision: Revision, collision_count: int,
                                       pods: Sequence[core_v1.Pod]) -> tuple[apps_v1.StatefulSetStatus | None,
                                                                             Exception | None]:
        """Create, fix and delete pods toward spec.replicas healthy pods at the right revisions;
        the status to record and the error (if any). Upstream: updateStatefulSet

        1. Split pods into replicas (ordinal in [start, start+replicas)) and condemned (beyond).
        2. Fill missing replicas with new pods at the revision their ordinal should have.
        3. Process every replica (monotonic: stop at the first one not yet healthy).
        4. Fix claim owner refs of condemned pods, then delete condemned pods (highest first).
        5. Roll: RollingUpdate deletes out-of-date pods from the highest ordinal down to the
           partition, at most maxUnavailable unhealthy at once; OnDelete stops here.
        """
        current_set = ssu.apply_revision(s, current_revision)
        update_set = ssu.apply_revision(s, update_revision)
        status = apps_v1.StatefulSetStatus(observed_generation=s.metadata.generation,
                                           current_revision=current_revision.metadata.name,
                                           update_revision=update_revision.metadata.name,
                                           collision_count=collision_count)
        min_ready = s.spec.min_ready_seconds or 0
        self.update_status(status, min_ready, current_revision, update_revision, pods)
        replicas, condemned = self._partition(s, pods, current_set, update_set, current_revision, update_revision)
        first_unhealthy = self._first_unhealthy(s, replicas, condemned)
        if s.metadata.deletion_timestamp is not None:
            return status, None
        monotonic = not ssu.allows_burst(s)

        def recount(err: Exception | None) -> tuple[apps_v1.StatefulSetStatus, Exception | None]:
            # A pod built in this sync has no phase and counts nothing: the existing ones suffice.
            self.update_status(status, min_ready, current_revision, update_revision, replicas.existing(), condemned)
            return status, err

        async def process_replica(i: int) -> bool:
            return await self.process_replica(s, update_set, monotonic, replicas, i)

        async def fix_pod_claim(i: int) -> bool:
            if not self.pod_control.claims_match_retention_policy(update_set, condemned[i]):
                await self.pod_control.update_pod_claim_for_retention_policy(update_set, condemned[i])
            return False

        async def process_condemned(i: int) -> bool:
            return await self.process_condemned(s, first_unhealthy, monotonic, condemned, i)

        for step, items in ((process_replica, replicas), (fix_pod_claim, condemned), (process_condemned, condemned)):
            try:
                if await run_for_all(items, step, monotonic):
                    return recount(None)
            except Exception as err:
                return recount(err)
        recount(None)
        strategy = s.spec.update_strategy or apps_v1.StatefulSetUpdateStrategy()
        if strategy.type == ssu.ON_DELETE:
            return status, None
        if self.max_unavailable_stateful_set:
            return await self.update_after_invariant_established(s, replicas, update_revision, status)
        return await self._legacy_rolling_update(s, replicas, update_revision, status)

    def _partition(self, s: apps_v1.StatefulSet, pods: Sequence[core_v1.Pod], current_set: apps_v1.StatefulSet,
                   update_set: apps_v1.StatefulSet, current_revision: Revision,
                   update_revision: Revision) -> tuple[Replicas, list[core_v1.Pod]]:
        """(replicas by ordinal, missing ones built on access; condemned by descending ordinal)."""
        existing: dict[int, core_v1.Pod] = {}
        condemned = []
        for pod in pods:
            if ssu.pod_in_ordinal_range(pod, s):
                existing[ssu.get_ordinal(pod)] = pod
            elif ssu.get_ordinal(pod) >= 0:
                condemned.append(pod)

        def build(ordinal: int) -> core_v1.Pod:
            return ssu.new_versioned_stateful_set_pod(current_set, update_set, current_revision.metadata.name,
                                                      update_revision.metadata.name, ordinal)
        return Replicas(ssu.get_start_ordinal(s), s.spec.replicas or 0, existing, build), \
            ssu.descending_ordinal(condemned)

    @staticmethod
    def _first_unhealthy(s: apps_v1.StatefulSet, replicas: Replicas,
                         condemned: list[core_v1.Pod]) -> core_v1.Pod | None:
        """The lowest unhealthy replica (a missing one is unhealthy), else the lowest-ordinal
        unhealthy condemned pod."""
        first = replicas.first_unhealthy()
        if first is None:
            first = next((p for p in reversed(condemned) if not ssu.is_healthy(p)), None)
        if first is not None:
            log.debug("StatefulSet has unhealthy Pods", extra={"statefulSet": s.metadata.name,
                                                               "pod": first.metadata.name})
        return first

    async def update_after_invariant_established(
            self, s: apps_v1.StatefulSet, replicas: Replicas, update_revision: Revision,
            status: apps_v1.StatefulSetStatus) -> tuple[apps_v1.StatefulSetStatus, Exception | None]:
        """Delete up to maxUnavailable - unavailable out-of-date pods, highest ordinal first,
        not below the partition.

        Example: 5 replicas, maxUnavailable 2, one pod not ready: one more may go, so pod 4
        (if out of date) is deleted; with two not ready, none. Upstream: updateStatefulSetAfterInvariantEstablished
        """
        ru = (s.spec.update_strategy.rolling_update if s.spec.update_strategy else None)
        update_min, max_unavailable = 0, 1
        if ru is not None:
            update_min = ru.partition or 0
            try:
                max_unavailable = ssu.get_stateful_set_max_unavailable(ru.max_unavailable, s.spec.replicas or 0)
            except Exception as err:
                return status, err
        unavailable = replicas.count_unhealthy()
        metrics.observe(s.metadata.namespace or "", s.metadata.name or "",
                        s.spec.pod_management_policy or "OrderedReady", max_unavailable, unavailable)
        if unavailable >= max_unavailable:
            log.info("StatefulSet found unavailablePods, more than or equal to allowed maxUnavailable",
                     extra={"statefulSet": s.metadata.name, "unavailablePods": unavailable,
                            "maxUnavailable": max_unavailable})
            return status, None
        to_delete = max_unavailable - unavailable
        deleted = 0
        # Missing ordinals would be built at the update revision: only existing pods can be out of date.
        for pod in replicas.existing_descending(update_min):
            if deleted >= to_delete:
                break
            if ssu.get_pod_revision(pod) != update_revision.metadata.name and not ssu.is_terminating(pod):
                log.info("StatefulSet terminating Pod for update",
                         extra={"statefulSet": s.metadata.name, "pod": pod.metadata.name})
                try:
                    await self.pod_control.delete_stateful_pod(s, pod)
                except errors.NotFound:
                    pass
                except Exception as err:
                    return status, err
                deleted += 1
                status.current_replicas = (status.current_replicas or 0) - 1
        return status, None

    async def _legacy_rolling_update(self, s: apps_v1.StatefulSet, replicas: Replicas,
                                     update_revision: Revision, status: apps_v1.StatefulSetStatus
                                     ) -> tuple[apps_v1.StatefulSetStatus, Exception | None]:
        """Without MaxUnavailableStatefulSet: one pod at a time, waiting on each. Upstream: updateStatefulSet's tail"""
        ru = s.spec.update_strategy.rolling_update if s.spec.update_strategy else None
        update_min = (ru.partition or 0) if ru is not None else 0
        for target in range(len(replicas) - 1, update_min - 1, -1):
            pod = replicas[target]
            if ssu.get_pod_revision(pod) != update_revision.metadata.name and not ssu.is_terminating(pod):
                try:
                    await self.pod_control.delete_stateful_pod(s, pod)
                except errors.NotFound:
                    pass
                except Exception as err:
                    return status, err
                status.current_replicas = (status.current_replicas or 0) - 1
                return status, None
            if not ssu.is_healthy(pod):
                return status, None
        return status, None


class Replicas(Sequence[core_v1.Pod]):
    """The pods of ordinals start .. start+count-1: the existing ones, and for a missing ordinal a
    new pod built on access (not kept).

    Upstream builds a slice with a new pod for every missing ordinal; with replicas at 2^31-1
    that is billions of pods before the first is created. Built on access, an OrderedReady
    sync touches only the ordinals up to the first one it waits on.
    """

    def __init__(self, start: int, count: int, existing: dict[int, core_v1.Pod],
                 build: Callable[[int], core_v1.Pod]) -> None:
        self.start, self.size, self._existing, self._build = start, count, existing, build

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> core_v1.Pod: ...

    @overload
    def __getitem__(self, i: slice) -> list[core_v1.Pod]: ...

    def __getitem__(self, i: int | slice) -> core_v1.Pod | list[core_v1.Pod]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.size))]
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError(i)
        pod = self._existing.get(self.start + i)
        return pod if pod is not None else self._build(self.start + i)

    def existing(self) -> list[core_v1.Pod]:
        return [self._existing[o] for o in sorted(self._existing)]

    def existing_descending(self, min_index: int) -> list[core_v1.Pod]:
        """Existing pods at index >= min_index, highest ordinal first."""
        return [self._existing[o] for o in sorted(self._existing, reverse=True) if o - self.start >= min_index]

    def first_unhealthy(self) -> core_v1.Pod | None:
        for i in range(self.size):
            pod = self._existing.get(self.start + i)
            if pod is None or not ssu.is_healthy(pod):
                return self[i]
        return None

    def count_unhealthy(self) -> int:
        """Missing ordinals count as unhealthy (not created)."""
        return self.size - len(self._existing) + sum(not ssu.is_healthy(p) for p in self._existing.values())


class _UpdateError(Exception):
    """A failed perform_update, carrying the revisions truncate_history still needs."""

    def __init__(self, current: Revision | None, update: Revision | None, cause: Exception) -> None:
        super().__init__(str(cause))
        self.current, self.update, self.cause = current, update, cause


async def run_for_all(items: Sequence[core_v1.Pod], fn: StepFn, monotonic: bool) -> bool:
    """Monotonic: in order, stopping at the first True. Parallel: all, in slow-start batches,
    raising the aggregated errors. Upstream: runForAll"""
    if monotonic:
        for i in range(len(items)):
            if await fn(i):
                return True
        return False
    await slow_start_batch(1, len(items), fn)
    return False


async def slow_start_batch(initial_batch_size: int, remaining: int, fn: StepFn) -> int:
    """Call fn(0..remaining-1) in batches of 1, 2, 4 ... (at most MAX_BATCH_SIZE) run
    concurrently; stop after a batch with errors and raise them. Upstream: slowStartBatch"""
    successes, j = 0, 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        results = await asyncio.gather(*(fn(k) for k in range(j, j + batch)), return_exceptions=True)
        j += batch
        errs = [r for r in results if isinstance(r, BaseException)]
        for r in errs:
            if not isinstance(r, Exception):
                raise r
        successes += batch - len(errs)
        if errs:
            raise cu.AggregateError(errs)
        remaining -= batch
        batch = min(2 * batch, remaining, MAX_BATCH_SIZE)
    return successes


__all__ = ["MAX_BATCH_SIZE", "DefaultStatefulSetControl", "run_for_all", "slow_start_batch"]
