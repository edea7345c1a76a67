"""The Job's pod-failure back-off: replacement pods wait 10 s, 20 s, 40 s ... (at most 10 min)
after the last failure, counting failures since the last success.

Upstream: pkg/controller/job/backoff_utils.go
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...api.types import core_v1
from .indexed_job_utils import get_index_absolute_failure_count
from .util import parse_time as _time

DEFAULT_JOB_POD_FAILURE_BACK_OFF = 10.0     # seconds. Upstream: DefaultJobPodFailureBackOff
MAX_JOB_POD_FAILURE_BACK_OFF = 600.0        # Upstream: MaxJobPodFailureBackOff


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    key: str
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def get_remaining_time(self, now: float, default: float = DEFAULT_JOB_POD_FAILURE_BACK_OFF,
                           maximum: float = MAX_JOB_POD_FAILURE_BACK_OFF) -> float:
        """Upstream: backoffRecord.getRemainingTime"""
        return get_remaining_time_for_failures_count(now, default, maximum, self.failures_after_last_success,
                                                     self.last_failure_time)


class BackoffStore:
    """Job key -> its BackoffRecord, kept between syncs. Upstream: backoffStore"""

    def __init__(self) -> None:
        self.records: dict[str, BackoffRecord] = {}

    def update_backoff_record(self, record: BackoffRecord) -> None:
        self.records[record.key] = record

    def remove_backoff_record(self, key: str) -> None:
        self.records.pop(key, None)

    def new_backoff_record(self, key: str, new_succeeded: Sequence[core_v1.Pod],
                           new_failed: Sequence[core_v1.Pod]) -> BackoffRecord:
        """The record after the pods that finished since the last sync.

        Only failures after the newest success count: 2 failures before it and 1 after -> 1.
        Upstream: newBackoffRecord
        """
        rec = self.records.get(key) or BackoffRecord(key)
        failed = sorted(get_finished_time(p) for p in new_failed)
        if not new_succeeded:
            if not failed:
                return rec
            return BackoffRecord(key, rec.failures_after_last_success + len(failed), failed[-1])
        last_success = max(get_finished_time(p) for p in new_succeeded)
        after = [t for t in failed if t > last_success]
        return BackoffRecord(key, len(after), after[-1] if after else None)


def get_remaining_time_per_index(now: float, last_failed_pod: core_v1.Pod | None,
                                 default: float = DEFAULT_JOB_POD_FAILURE_BACK_OFF,
                                 maximum: float = MAX_JOB_POD_FAILURE_BACK_OFF) -> float:
    """Upstream: getRemainingTimePerIndex"""
    if last_failed_pod is None:
        return 0.0
    count = get_index_absolute_failure_count(last_failed_pod) + 1
    return get_remaining_time_for_failures_count(now, default, maximum, count, get_finished_time(last_failed_pod))


def get_remaining_time_for_failures_count(now: float, default: float, maximum: float, failures: int,
                                          last_failure_time: float | None) -> float:
    """default * 2^(failures-1), capped at maximum, minus the time since the last failure.

    Example: 3 failures, the last 15 s ago -> 40 - 15 = 25 s. Upstream: getRemainingTimeForFailuresCount
    """
    if failures == 0 or last_failure_time is None:
        return 0.0
    backoff = default
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= maximum:
            backoff = maximum
            break
    elapsed = now - last_failure_time
    return 0.0 if backoff < elapsed else backoff - elapsed


def get_finished_time(p: core_v1.Pod) -> float:
    """When the pod finished: its containers' latest finishedAt, else when Ready turned False,
    else its deletionTimestamp, else its creation. Upstream: getFinishedTime
    """
    t = _finish_time_from_containers(p)
    if t is None:
        t = _finish_time_from_ready_false(p)
    if t is None:
        t = _time(p.metadata.deletion_timestamp)
    if t is None:
        t = _time(p.metadata.creation_timestamp)
    return t if t is not None else 0.0



def _finish_time_from_containers(p: core_v1.Pod) -> float | None:
    st = p.status
    latest: float | None = None
    for cs in [*((st.container_statuses or ()) if st else ()), *((st.init_container_statuses or ()) if st else ())]:
        term = cs.state.terminated if cs.state is not None else None
        t = _time(term.finished_at) if term is not None else None
        if t is None:
            continue
        if latest is None or t > latest:
            latest = t
    return latest


def _finish_time_from_ready_false(p: core_v1.Pod) -> float | None:
    for c in (p.status.conditions if p.status else None) or ():
        if c.type == "Ready" and c.status == "False" and (t := _time(c.last_transition_time)) is not None:
            return t
    return None
