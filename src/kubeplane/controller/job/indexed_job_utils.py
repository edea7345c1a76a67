"""Indexed Jobs: completion indexes, the interval sets status.completedIndexes and
status.failedIndexes print as ("1,3-5,7"), and which indexes still need a pod.

Upstream: pkg/controller/job/indexed_job_utils.go
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterable, Sequence

from ...api.types import batch_v1, core_v1
from .. import controller_utils as cu
from .util import (
    INDEXED, JOB_COMPLETION_INDEX_ANNOTATION, JOB_COMPLETION_INDEX_ENV_NAME, JOB_INDEX_FAILURE_COUNT_ANNOTATION,
    JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, JOB_TRACKING_FINALIZER,
)

log = logging.getLogger(__name__)

UNKNOWN_COMPLETION_INDEX = -1
# The generated name is at most 63 - 5 (random suffix) characters. Upstream: names.MaxGeneratedNameLength
MAX_GENERATED_NAME_LENGTH = 58


@dataclass(frozen=True, slots=True)
class Interval:
    first: int
    last: int


class OrderedIntervals(tuple[Interval, ...]):
    """Disjoint, non-adjacent intervals in increasing order. Upstream: orderedIntervals"""

    def with_ordered_indexes(self, new_indexes: Iterable[int]) -> OrderedIntervals:
        """self plus the (sorted) indexes, merged. Upstream: withOrderedIndexes"""
        new = [Interval(ix, ix) for ix in new_indexes]
        return self.merge(OrderedIntervals(new))

    def merge(self, other: Sequence[Interval]) -> OrderedIntervals:
        """The union of two ordered interval lists. Upstream: merge

        Example: [0-2, 5] merged with [3, 7-8] -> [0-3, 5, 7-8].
        """
        out: list[Interval] = []
        for iv in sorted([*self, *other], key=lambda i: (i.first, i.last)):
            if out and iv.first <= out[-1].last + 1:
                if iv.last > out[-1].last:
                    out[-1] = Interval(out[-1].first, iv.last)
            else:
                out.append(iv)
        return OrderedIntervals(out)

    def total(self) -> int:
        """How many indexes the intervals hold. Upstream: total"""
        return sum(iv.last - iv.first + 1 for iv in self)

    def has(self, ix: int) -> bool:
        """Upstream: has (a binary search there; the lists are short)."""
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self[mid].last < ix:
                lo = mid + 1
            else:
                hi = mid
        return lo < len(self) and self[lo].first <= ix

    def __str__(self) -> str:
        """"1,3-5,7" as status.completedIndexes prints it. Upstream: String"""
        return ",".join(str(iv.first) if iv.first == iv.last else
                        (f"{iv.first},{iv.last}" if iv.last == iv.first + 1 else f"{iv.first}-{iv.last}")
                        for iv in self)


def parse_indexes_from_string(indexes: str | None, completions: int) -> OrderedIntervals:
    """The intervals of "1,3-5,7", keeping indexes below completions; a malformed part is
    logged and skipped. Upstream: parseIndexesFromString
    """
    out: list[Interval] = []
    if not indexes:
        return OrderedIntervals(out)
    for part in indexes.split(","):
        lo_s, sep, hi_s = part.partition("-")
        try:
            if len(lo_s) > 10 or len(hi_s) > 10:       # not an int32 (and int() of 5,000 digits raises)
                raise ValueError(part)
            lo = int(lo_s)
            hi = int(hi_s) if sep else lo
        except ValueError:
            log.info("Corrupted indexes interval, ignoring", extra={"interval": part})
            continue
        if lo < 0 or hi < lo:
            continue
        if lo >= completions:
            break
        hi = min(hi, completions - 1)
        if out and lo <= out[-1].last + 1:
            out[-1] = Interval(out[-1].first, max(hi, out[-1].last))
        else:
            out.append(Interval(lo, hi))
    return OrderedIntervals(out)


def is_indexed_job(job: batch_v1.Job) -> bool:
    """Upstream: isIndexedJob"""
    return job.spec is not None and job.spec.completion_mode == INDEXED


def has_backoff_limit_per_index(job: batch_v1.Job) -> bool:
    """Upstream: hasBackoffLimitPerIndex"""
    return job.spec is not None and job.spec.backoff_limit_per_index is not None


def has_job_tracking_finalizer(pod: core_v1.Pod) -> bool:
    """Upstream: hasJobTrackingFinalizer"""
    return JOB_TRACKING_FINALIZER in (pod.metadata.finalizers or ())


def get_completion_index(annotations: dict[str, str] | None) -> int:
    """The pod's completion index, or UNKNOWN_COMPLETION_INDEX. Upstream: getCompletionIndex"""
    v = (annotations or {}).get(JOB_COMPLETION_INDEX_ANNOTATION)
    if v is None or not v.isascii() or not v.isdigit() or len(v) > 10:     # an int32 has 10 digits
        return UNKNOWN_COMPLETION_INDEX
    i = int(v)
    return i if i <= 2**31 - 1 else UNKNOWN_COMPLETION_INDEX


def calculate_succeeded_indexes(job: batch_v1.Job, pods: Sequence[core_v1.Pod]
                                ) -> tuple[OrderedIntervals, OrderedIntervals]:
    """(indexes counted before, those plus the succeeded pods' indexes still to count).

    Upstream: calculateSucceededIndexes
    """
    completions = job.spec.completions or 0
    prev = parse_indexes_from_string(job.status.completed_indexes if job.status else None, completions)
    new = {ix for p in pods if p.status is not None and p.status.phase == cu.POD_SUCCEEDED
           and has_job_tracking_finalizer(p)
           and UNKNOWN_COMPLETION_INDEX < (ix := get_completion_index(p.metadata.annotations)) < completions}
    return prev, prev.with_ordered_indexes(sorted(new))


def get_indexes(pods: Iterable[core_v1.Pod]) -> set[int]:
    """Upstream: getIndexes"""
    return {ix for p in pods if (ix := get_completion_index(p.metadata.annotations)) != UNKNOWN_COMPLETION_INDEX}


def first_pending_indexes(succeeded: OrderedIntervals, failed: OrderedIntervals | None, active: Iterable[core_v1.Pod],
                          terminating: Iterable[core_v1.Pod] | None, count: int, completions: int) -> list[int]:
    """The first count indexes below completions that have no active (or, when terminating
    pods are not replaced, terminating) pod and have not succeeded or failed.

    Example: completions 6, succeeded 0-1, active pod at index 3 -> count 2 gives [2, 4].
    Upstream: firstPendingIndexes
    """
    if count == 0:
        return []
    non_pending = succeeded.with_ordered_indexes(sorted(get_indexes(active)))
    if failed is not None:
        non_pending = non_pending.merge(failed)
    if terminating is not None:
        non_pending = non_pending.with_ordered_indexes(sorted(get_indexes(terminating)))
    result: list[int] = []
    candidate = 0
    for iv in non_pending:
        while candidate < completions and len(result) < count and candidate < iv.first:
            result.append(candidate)
            candidate += 1
        candidate = max(candidate, iv.last + 1)
    while candidate < completions and len(result) < count:
        result.append(candidate)
        candidate += 1
    return result


def append_duplicated_index_pods_for_removal(pods: Sequence[core_v1.Pod], completions: int
                                             ) -> tuple[list[core_v1.Pod], list[core_v1.Pod]]:
    """(pods to remove: unknown or out-of-range indexes and all but one pod per index, the
    rest). Of several pods of one index the one kept is the last in ActivePods order (the
    most advanced: ready, scheduled, running). Upstream: appendDuplicatedIndexPodsForRemoval
    """
    rm: list[core_v1.Pod] = []
    by_index: dict[int, list[core_v1.Pod]] = {}
    for p in pods:
        ix = get_completion_index(p.metadata.annotations)
        if ix == UNKNOWN_COMPLETION_INDEX or ix >= completions:
            rm.append(p)
        else:
            by_index.setdefault(ix, []).append(p)
    left: list[core_v1.Pod] = []
    for ix in sorted(by_index):
        group = by_index[ix]
        if len(group) > 1:
            cu.sort_active_pods(group)
        rm.extend(group[:-1])
        left.append(group[-1])
    return rm, left


def add_completion_index_env_variables(template: core_v1.PodTemplateSpec) -> None:
    """JOB_COMPLETION_INDEX from the pod's index label in every container lacking it.

    Upstream: addCompletionIndexEnvVariables
    """
    spec = template.spec or core_v1.PodSpec()
    for c in [*(spec.init_containers or ()), *(spec.containers or ())]:
        if any(e.name == JOB_COMPLETION_INDEX_ENV_NAME for e in c.env or ()):
            continue
        ref = core_v1.ObjectFieldSelector(field_path=f"metadata.labels['{JOB_COMPLETION_INDEX_ANNOTATION}']")
        c.env = [*(c.env or ()), core_v1.EnvVar(name=JOB_COMPLETION_INDEX_ENV_NAME,
                                                value_from=core_v1.EnvVarSource(field_ref=ref))]


def add_completion_index_annotation(template: core_v1.PodTemplateSpec, index: int) -> None:
    """Upstream: addCompletionIndexAnnotation and addCompletionIndexLabel (PodIndexLabel, GA)."""
    meta = template.metadata
    meta.annotations = {**(meta.annotations or {}), JOB_COMPLETION_INDEX_ANNOTATION: str(index)}
    meta.labels = {**(meta.labels or {}), JOB_COMPLETION_INDEX_ANNOTATION: str(index)}


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """"<job>-<index>-", the job name cut so it fits a generated name. Upstream: podGenerateNameWithIndex"""
    append = f"-{index}-"
    prefix = job_name + append
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH - len(append)] + append
    return prefix


def get_index_failure_count(pod: core_v1.Pod) -> int:
    """Upstream: getIndexFailureCount (parseIndexFailureCountAnnotation)"""
    return _int_annotation(pod, JOB_INDEX_FAILURE_COUNT_ANNOTATION)


def get_index_absolute_failure_count(pod: core_v1.Pod) -> int:
    """Failures counted plus those ignored by the pod failure policy. Upstream: getIndexAbsoluteFailureCount"""
    return _int_annotation(pod, JOB_INDEX_FAILURE_COUNT_ANNOTATION) + \
        _int_annotation(pod, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)


def _int_annotation(pod: core_v1.Pod, key: str) -> int:
    v = (pod.metadata.annotations or {}).get(key)
    if v is None:
        return 0
    try:
        n = int(v)
    except ValueError:
        log.info("Failed to parse the annotation", extra={"pod": pod.metadata.name, "annotation": key})
        return 0
    return max(0, min(n, 2**31 - 1))
