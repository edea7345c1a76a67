"""Pure helpers of the Deployment controller: annotations, revisions, conditions, replica maths.

Upstream: pkg/controller/deployment/util/deployment_util.go. Nothing here talks to the API
server or reads a clock: callers pass `now` (epoch seconds). Functions named set_* modify the
object they are given, which must therefore be a copy, never a cache object; every other
function leaves its arguments alone (find_active_or_latest sorts the list it is given, as
upstream does, but never touches the ReplicaSets in it).

Go's `append(oldRSs, newRS)` with a nil newRS is mirrored literally: lists may hold None for a
missing new ReplicaSet, and the counting and filtering helpers skip it.
"""
from __future__ import annotations

import logging
import math
import re
from functools import cmp_to_key
from typing import Any, Callable, Iterable, Sequence

from ....api import errors
from ....api.types import apps_v1, core_v1, to_dict
from ....utils.clock import parse_rfc3339, rfc3339
from .replicaset_util import creation_key, filter_active_replica_sets, spec_replicas

log = logging.getLogger(__name__)

Deployment = apps_v1.Deployment
ReplicaSet = apps_v1.ReplicaSet

# --- annotations ------------------------------------------------------------------------------

# The revision annotation of a deployment's replica sets which records its rollout sequence.
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
# The history of all old revisions that a replica set has served for a deployment.
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
# The desired replicas for a deployment recorded on its replica sets: separates scaling events
# from the rollout process and tells whether the new replica set is really saturated.
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
# spec.replicas + maxSurge at the time of the last scale, used to estimate each replica set's
# proportion when a deployment with surge pods is scaled.
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
# The annotation that round-trips the deprecated spec.rollbackTo field. Upstream: apps.DeprecatedRollbackTo
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
# Upstream: v1.LastAppliedConfigAnnotation
LAST_APPLIED_CONFIG_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
# The label that tells the replica sets of one deployment apart. Upstream: apps.DefaultDeploymentUniqueLabelKey
DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY = "pod-template-hash"

# --- event reasons ------------------------------------------------------------------------------

ROLLBACK_REVISION_NOT_FOUND = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED = "DeploymentRollbackTemplateUnchanged"
ROLLBACK_DONE = "DeploymentRollback"

# --- condition types and reasons ------------------------------------------------------------------

DEPLOYMENT_AVAILABLE = "Available"
DEPLOYMENT_PROGRESSING = "Progressing"
DEPLOYMENT_REPLICA_FAILURE = "ReplicaFailure"
REPLICA_SET_REPLICA_FAILURE = "ReplicaFailure"
CONDITION_TRUE, CONDITION_FALSE, CONDITION_UNKNOWN = "True", "False", "Unknown"

# Progressing:
REPLICA_SET_UPDATED_REASON = "ReplicaSetUpdated"      # a replica set was scaled as part of the rollout
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"     # the new replica set could not be created
NEW_REPLICA_SET_REASON = "NewReplicaSetCreated"       # the controller created the new replica set
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"            # an existing replica set was found to be the new one
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"    # the rollout is complete
TIMED_OUT_REASON = "ProgressDeadlineExceeded"         # no progress within progressDeadlineSeconds
PAUSED_DEPLOY_REASON = "DeploymentPaused"             # progress is not estimated while paused
RESUMED_DEPLOY_REASON = "DeploymentResumed"           # resumed: the deadline restarts
# Available:
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"

ROLLING_UPDATE_DEPLOYMENT_STRATEGY_TYPE = "RollingUpdate"
RECREATE_DEPLOYMENT_STRATEGY_TYPE = "Recreate"

MAX_INT32 = 2**31 - 1


# --- conditions -----------------------------------------------------------------------------------

def new_deployment_condition(cond_type: str, status: str, reason: str, message: str,
                             now: float) -> apps_v1.DeploymentCondition:
    """Upstream: NewDeploymentCondition (both times are now)."""
    t = rfc3339(now)
    return apps_v1.DeploymentCondition(type=cond_type, status=status, last_update_time=t, last_transition_time=t,
                                       reason=reason, message=message)


def get_deployment_condition(status: apps_v1.DeploymentStatus | None,
                             cond_type: str) -> apps_v1.DeploymentCondition | None:
    """The condition of that type, or None. Upstream: GetDeploymentCondition (which returns a copy)."""
    for c in (status.conditions if status is not None else None) or ():
        if c.type == cond_type:
            return c
    return None


def set_deployment_condition(status: apps_v1.DeploymentStatus, condition: apps_v1.DeploymentCondition) -> None:
    """Put condition into status, replacing the one of its type. Upstream: SetDeploymentCondition

    Same status and reason as the current one: nothing changes (times and message are kept).
    Same status, other reason: the new condition keeps the old lastTransitionTime. The new
    condition always goes to the end of the list.
    """
    current = get_deployment_condition(status, condition.type or "")
    if current is not None and current.status == condition.status and current.reason == condition.reason:
        return
    if current is not None and current.status == condition.status:
        condition.last_transition_time = current.last_transition_time
    status.conditions = filter_out_condition(status.conditions, condition.type or "") + [condition]


def remove_deployment_condition(status: apps_v1.DeploymentStatus, cond_type: str) -> None:
    """Upstream: RemoveDeploymentCondition (an empty list becomes None, as Go's nil slice)."""
    status.conditions = filter_out_condition(status.conditions, cond_type) or None


def filter_out_condition(conditions: Sequence[apps_v1.DeploymentCondition] | None,
                         cond_type: str) -> list[apps_v1.DeploymentCondition]:
    """Upstream: filterOutCondition"""
    return [c for c in conditions or () if c.type != cond_type]


def replica_set_to_deployment_condition(cond: apps_v1.ReplicaSetCondition) -> apps_v1.DeploymentCondition:
    """A ReplicaSet condition as a Deployment condition; both times are its lastTransitionTime.

    Upstream: ReplicaSetToDeploymentCondition
    """
    return apps_v1.DeploymentCondition(type=cond.type, status=cond.status,
                                       last_transition_time=cond.last_transition_time,
                                       last_update_time=cond.last_transition_time,
                                       reason=cond.reason, message=cond.message)


# --- revisions --------------------------------------------------------------------------------------

_INT64 = re.compile(r"[+-]?[0-9]+\Z")
_UINT = re.compile(r"[0-9]+\Z")


def parse_int64(s: str) -> int:
    """strconv.ParseInt(s, 10, 64): ValueError with Go's message on bad syntax or range."""
    if not _INT64.match(s):
        raise ValueError(f'strconv.ParseInt: parsing "{s}": invalid syntax')
    v = int(s)
    if not -(2**63) <= v < 2**63:
        raise ValueError(f'strconv.ParseInt: parsing "{s}": value out of range')
    return v


def annotations_of(obj: Any) -> dict[str, str]:
    """The object's annotations (an empty dict for none); read-only use."""
    return (obj.metadata.annotations if obj.metadata is not None else None) or {}


def _mutable_annotations(obj: Any) -> dict[str, str]:
    if obj.metadata.annotations is None:
        obj.metadata.annotations = {}
    return obj.metadata.annotations


def revision(obj: Any) -> int:
    """The revision annotation as a number; 0 when absent; ValueError if unparsable. Upstream: Revision"""
    v = annotations_of(obj).get(REVISION_ANNOTATION)
    if v is None:
        return 0
    return parse_int64(v)


def max_revision(all_rss: Iterable[ReplicaSet | None]) -> int:
    """The highest revision; unparsable revisions are skipped. Upstream: MaxRevision"""
    highest = 0
    for rs in all_rss:
        if rs is None:
            continue
        try:
            v = revision(rs)
        except ValueError as err:
            log.debug("Couldn't parse revision for replica set", extra={"rs": rs.metadata.name, "err": str(err)})
            continue
        highest = max(highest, v)
    return highest


def last_revision(all_rss: Iterable[ReplicaSet | None]) -> int:
    """The second-highest revision (the one before the current). Upstream: LastRevision

    Example: revisions 1, 3, 2 -> 2; a single revision 5 -> 0; 4, 4 -> 4 (ties count twice).
    """
    highest = second = 0
    for rs in all_rss:
        if rs is None:
            continue
        try:
            v = revision(rs)
        except ValueError:
            continue
        if v >= highest:
            highest, second = v, highest
        elif v > second:
            second = v
    return second


def set_deployment_revision(d: Deployment, rev: str) -> bool:
    """Set d's revision annotation; whether it changed. Upstream: SetDeploymentRevision"""
    ann = _mutable_annotations(d)
    if ann.get(REVISION_ANNOTATION, "") != rev:
        ann[REVISION_ANNOTATION] = rev
        return True
    return False


def sort_by_revision(rss: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    """Lowest revision first; ties and unparsable revisions by creation time, then name.

    Upstream: sort.Sort(ReplicaSetsByRevision)
    """
    def less(a: ReplicaSet, b: ReplicaSet) -> bool:
        try:
            r1, r2 = revision(a), revision(b)
        except ValueError:
            return creation_key(a) < creation_key(b)
        if r1 == r2:
            return creation_key(a) < creation_key(b)
        return r1 < r2

    return sorted(rss, key=cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0)))


# --- copying annotations -------------------------------------------------------------------------------

# Annotations the controller manages itself, or that describe the Deployment object only:
# never copied from a Deployment to its ReplicaSets, nor back on rollback.
ANNOTATIONS_TO_SKIP = frozenset({
    LAST_APPLIED_CONFIG_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, DEPRECATED_ROLLBACK_TO,
})


def skip_copy_annotation(key: str) -> bool:
    """Upstream: skipCopyAnnotation"""
    return key in ANNOTATIONS_TO_SKIP


def copy_deployment_annotations_to_replica_set(d: Deployment, rs: ReplicaSet) -> bool:
    """Copy d's annotations (but the skip list) onto rs; whether rs changed.

    As upstream, an empty value is not copied onto an RS that lacks the key (Go's map lookup
    yields "" for both). Removals on the Deployment are not propagated.
    Upstream: copyDeploymentAnnotationsToReplicaSet
    """
    changed = False
    rs_ann = _mutable_annotations(rs)
    for k, v in annotations_of(d).items():
        if skip_copy_annotation(k) or rs_ann.get(k, "") == v:
            continue
        rs_ann[k] = v
        changed = True
    return changed


def set_new_replica_set_annotations(d: Deployment, new_rs: ReplicaSet, new_revision: str, exists: bool,
                                    rev_history_limit_in_chars: int) -> bool:
    """Copy d's annotations onto new_rs and raise its revision to new_revision; whether it changed.

    1. Copy the Deployment's annotations (but the skip list).
    2. Set the revision if the RS's is lower: old RSs may have been deleted since it was
       set, so new_revision can be smaller than the RS's own, and then it is kept.
    3. When an RS that already had a revision is raised (a rollback to it), append the old
       revision to revision-history, dropping the oldest entries beyond the length limit.
       Example, limit 5: history "11", revision 12 raised to 13 -> "11,12"; raised again to
       14 -> "11,12,13" is 8 chars, so "11" is dropped -> "12,13".
    4. A new RS (exists False) also gets the desired- and max-replicas annotations.
    Upstream: SetNewReplicaSetAnnotations
    """
    changed = copy_deployment_annotations_to_replica_set(d, new_rs)
    ann = _mutable_annotations(new_rs)
    had_revision = REVISION_ANNOTATION in ann
    old_revision = ann.get(REVISION_ANNOTATION, "")
    try:
        old_revision_int = parse_int64(old_revision)
    except ValueError as err:
        if old_revision != "":
            log.warning("Updating replica set revision OldRevision not int", extra={"err": str(err)})
            return False
        old_revision_int = 0
    try:
        new_revision_int = parse_int64(new_revision)
    except ValueError as err:
        log.warning("Updating replica set revision NewRevision not int", extra={"err": str(err)})
        return False
    if old_revision_int < new_revision_int:
        ann[REVISION_ANNOTATION] = new_revision
        changed = True
        if had_revision:
            _append_revision_history(ann, old_revision, rev_history_limit_in_chars)
    if not exists and set_replicas_annotations(new_rs, spec_replicas_of(d), spec_replicas_of(d) + max_surge(d)):
        changed = True
    return changed


def _append_revision_history(ann: dict[str, str], old_revision: str, limit: int) -> None:
    history = ann.get(REVISION_HISTORY_ANNOTATION, "")
    old_revisions = history.split(",")
    if not old_revisions[0]:
        ann[REVISION_HISTORY_ANNOTATION] = old_revision
        return
    total_len = len(history) + len(old_revision) + 1
    start = 0
    while total_len > limit and start < len(old_revisions):
        total_len -= len(old_revisions[start]) + 1
        start += 1
    if total_len <= limit:
        ann[REVISION_HISTORY_ANNOTATION] = ",".join(old_revisions[start:] + [old_revision])
    else:
        log.warning("Not appending revision due to length limit reached", extra={"limit": limit})


def set_deployment_annotations_to(d: Deployment, rollback_to_rs: ReplicaSet) -> None:
    """Replace d's annotations by the RS's (skip-list keys keep d's values). Upstream: SetDeploymentAnnotationsTo"""
    new = get_skipped_annotations(annotations_of(d))
    for k, v in annotations_of(rollback_to_rs).items():
        if not skip_copy_annotation(k):
            new[k] = v
    d.metadata.annotations = new


def get_skipped_annotations(annotations: dict[str, str]) -> dict[str, str]:
    """Upstream: getSkippedAnnotations"""
    return {k: v for k, v in annotations.items() if skip_copy_annotation(k)}


# --- replica annotations ---------------------------------------------------------------------------

def get_non_negative_int32_from_annotation(rs: ReplicaSet, key: str) -> tuple[int, bool, str | None]:
    """(value, valid, error): a missing key is (0, False, None); "-1", "x" or values above
    MaxInt32 are errors. Upstream: getNonNegativeInt32FromAnnotation (strconv.ParseUint, 32 bits)
    """
    value = annotations_of(rs).get(key)
    if value is None:
        return 0, False, None
    if not _UINT.match(value):
        return 0, False, f'strconv.ParseUint: parsing "{value}": invalid syntax'
    v = int(value)
    if v > 0xFFFFFFFF:
        return 0, False, f'strconv.ParseUint: parsing "{value}": value out of range'
    if v > MAX_INT32:
        return 0, False, f"value {v} is out of range (higher than {MAX_INT32})"
    return v, True, None


def get_non_negative_int32_from_annotation_verbose(rs: ReplicaSet, key: str) -> tuple[int, bool]:
    """The same, logging the error. Upstream: getNonNegativeInt32FromAnnotationVerbose"""
    value, valid, err = get_non_negative_int32_from_annotation(rs, key)
    if err is not None:
        log.info("Cannot convert the value with annotation key for the replica set",
                 extra={"annotationKey": key, "replicaSet": rs.metadata.name, "err": err})
    return value, valid


def get_desired_replicas_annotation(rs: ReplicaSet) -> tuple[int, bool]:
    """Upstream: GetDesiredReplicasAnnotation"""
    return get_non_negative_int32_from_annotation_verbose(rs, DESIRED_REPLICAS_ANNOTATION)


def get_max_replicas_annotation(rs: ReplicaSet) -> tuple[int, bool]:
    """Upstream: getMaxReplicasAnnotation"""
    return get_non_negative_int32_from_annotation_verbose(rs, MAX_REPLICAS_ANNOTATION)


def set_replicas_annotations(rs: ReplicaSet, desired_replicas: int, max_replicas: int) -> bool:
    """Set the desired- and max-replicas annotations; whether anything changed. Upstream: SetReplicasAnnotations"""
    ann = _mutable_annotations(rs)
    updated = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired_replicas)), (MAX_REPLICAS_ANNOTATION, str(max_replicas))):
        if ann.get(key, "") != value:
            ann[key] = value
            updated = True
    return updated


def replicas_annotations_need_update(rs: ReplicaSet, desired_replicas: int, max_replicas: int) -> bool:
    """Upstream: ReplicasAnnotationsNeedUpdate"""
    if rs.metadata.annotations is None:
        return True
    ann = rs.metadata.annotations
    return ann.get(DESIRED_REPLICAS_ANNOTATION, "") != str(desired_replicas) or \
        ann.get(MAX_REPLICAS_ANNOTATION, "") != str(max_replicas)


# --- surge and unavailability ---------------------------------------------------------------------

def spec_replicas_of(d: Deployment) -> int:
    """*(d.Spec.Replicas) (defaulted to 1 by the API server)."""
    return (d.spec.replicas if d.spec is not None else None) or 0


def is_rolling_update(d: Deployment) -> bool:
    """Upstream: IsRollingUpdate"""
    strategy = d.spec.strategy if d.spec is not None else None
    return strategy is not None and strategy.type == ROLLING_UPDATE_DEPLOYMENT_STRATEGY_TYPE


def get_scaled_value_from_int_or_percent(value: int | str | None, total: int, round_up: bool) -> int:
    """An int as is; "P%" as P% of total, rounded up or down. Upstream: intstr.GetScaledValueFromIntOrPercent

    Example: "25%" of 10 -> 3 rounded up (surge), 2 rounded down (unavailable).
    ValueError (upstream's messages) for None or a string that is not a percentage.
    """
    if value is None:
        raise ValueError("nil value for IntOrString")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    digits = value[:-1]
    if not _INT64.match(digits):
        raise ValueError(f'invalid value for IntOrString: invalid value "{value}": '
                         f'strconv.Atoi: parsing "{digits}": invalid syntax')
    pct = int(digits)
    # Integer arithmetic is exact where Go's float ceil/floor of pct*total/100 is exact.
    return -(-pct * total // 100) if round_up else pct * total // 100


def resolve_fenceposts(max_surge_v: int | str | None, max_unavailable_v: int | str | None,
                       desired: int) -> tuple[int, int]:
    """(surge, unavailable) for desired replicas; both resolving to 0 makes unavailable 1.

    Surge rounds up, unavailable rounds down, a missing value counts as 0. Validation
    forbids an explicit 0/0, but rounding can produce it ("1%"/"1%" of 10 -> 1/0 is fine,
    "0%"/"1%" of 10 -> 0/0 -> 0/1): then one pod may go down, on the theory that surge
    pods may not fit (quota). Examples: "39%"/"39%" of 10 -> 4/3; nil/nil -> 0/1.
    ValueError for malformed values. Upstream: ResolveFenceposts
    """
    surge = get_scaled_value_from_int_or_percent(0 if max_surge_v is None else max_surge_v, desired, True)
    unavailable = get_scaled_value_from_int_or_percent(0 if max_unavailable_v is None else max_unavailable_v,
                                                       desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _rolling_params(d: Deployment) -> tuple[int | str | None, int | str | None]:
    ru = d.spec.strategy.rolling_update if d.spec is not None and d.spec.strategy is not None else None
    return (ru.max_surge, ru.max_unavailable) if ru is not None else (None, None)


def max_unavailable(d: Deployment) -> int:
    """Pods a rolling deployment may have unavailable, capped at replicas (0 for Recreate or 0 replicas).

    Example: 10 replicas, "25%" -> 2; 5 replicas, maxUnavailable 10 -> 5. Upstream: MaxUnavailable
    """
    replicas = spec_replicas_of(d)
    if not is_rolling_update(d) or replicas == 0:
        return 0
    try:
        _, unavailable = resolve_fenceposts(*_rolling_params(d), replicas)
    except ValueError:                   # caught by validation; Go ignores the error and gets 0
        return 0
    return min(unavailable, replicas)


def min_available(d: Deployment) -> int:
    """replicas - maxUnavailable (0 for Recreate). Upstream: MinAvailable"""
    if not is_rolling_update(d):
        return 0
    return spec_replicas_of(d) - max_unavailable(d)


def max_surge(d: Deployment) -> int:
    """Pods a rolling deployment may run above replicas (0 for Recreate). Upstream: MaxSurge"""
    if not is_rolling_update(d):
        return 0
    try:
        surge, _ = resolve_fenceposts(*_rolling_params(d), spec_replicas_of(d))
    except ValueError:
        return 0
    return surge


# --- proportional scaling ------------------------------------------------------------------------------

def round_to_int32(a: float) -> int:
    """Round half away from zero. Upstream: integer.RoundToInt32 (not Python's banker's round)"""
    return int(a - 0.5) if a < 0 else int(a + 0.5)


def get_proportion(rs: ReplicaSet | None, d: Deployment, deployment_replicas_to_add: int,
                   deployment_replicas_added: int) -> int:
    """How many replicas rs gets of the deployment_replicas_to_add, never overshooting what is left.

    Upstream: GetProportion
    """
    if rs is None or spec_replicas(rs) == 0 or deployment_replicas_to_add == 0 or \
            deployment_replicas_to_add == deployment_replicas_added:
        return 0
    rs_fraction = get_replica_set_fraction(rs, d)
    allowed = deployment_replicas_to_add - deployment_replicas_added
    if deployment_replicas_to_add > 0:
        return min(rs_fraction, allowed)          # scaling up: do not add more than allowed
    return max(rs_fraction, allowed)              # scaling down: do not remove more than allowed


def get_replica_set_fraction(rs: ReplicaSet, d: Deployment) -> int:
    """rs's share of a scaling event: round(size * (replicas + maxSurge) / max-replicas) - size.

    Example (e2e proportional scaling): old RS 8 and new RS 5 with max-replicas 13; the
    Deployment goes 10 -> 30 with surge 3: old round(8*33/13) = 20 (+12), new round(5*33/13)
    = 13 (+8). Scaling to 0 removes the whole RS. A missing or zero max-replicas annotation
    falls back to status.replicas; if that is 0 too the RS is not scaled (no basis).
    Upstream: getReplicaSetFraction
    """
    replicas = spec_replicas_of(d)
    if replicas == 0:
        return -spec_replicas(rs)
    deployment_replicas = replicas + max_surge(d)
    annotated_replicas, valid = get_max_replicas_annotation(rs)
    if not valid or annotated_replicas == 0:
        # Removed or zeroed by a third party: the current deployment size is the best guess;
        # get_proportion's min/max keep us within limits anyway.
        annotated_replicas = (d.status.replicas if d.status is not None else None) or 0
    if annotated_replicas == 0:
        return 0
    new_rs_size = spec_replicas(rs) * deployment_replicas / annotated_replicas
    return round_to_int32(new_rs_size) - spec_replicas(rs)


def find_active_or_latest(new_rs: ReplicaSet | None, old_rss: list[ReplicaSet]) -> ReplicaSet | None:
    """The only active RS; with none active the new RS, else the newest old one; None if several are active.

    Sorts old_rss in place, newest first, as upstream does. Upstream: FindActiveOrLatest
    """
    if new_rs is None and not old_rss:
        return None
    old_rss.sort(key=creation_key, reverse=True)
    all_rss = filter_active_replica_sets(old_rss + [new_rs])
    if not all_rss:
        return new_rs if new_rs is not None else old_rss[0]
    if len(all_rss) == 1:
        return all_rss[0]
    return None


def is_saturated(d: Deployment, rs: ReplicaSet | None) -> bool:
    """The RS runs all of d's replicas, believes so (desired annotation), and all are available.

    Upstream: IsSaturated
    """
    if rs is None:
        return False
    desired = annotations_of(rs).get(DESIRED_REPLICAS_ANNOTATION, "")
    if not _INT64.match(desired):          # strconv.Atoi fails: not saturated
        return False
    desired_int = int(desired)
    replicas = spec_replicas_of(d)
    available = (rs.status.available_replicas if rs.status is not None else None) or 0
    return spec_replicas(rs) == replicas and desired_int == replicas and available == replicas


def new_rs_new_replicas(d: Deployment, all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet) -> int:
    """The size the new RS should have now.

    RollingUpdate: grow by what the surge budget allows, never beyond replicas:
    maxTotal = replicas + maxSurge; current = Σ spec.replicas of all RSs;
    current >= maxTotal -> unchanged, else new + min(maxTotal - current, replicas - new).
    Example: 10 replicas, surge 3, old RS 10, new 0 -> 0 + min(13 - 10, 10) = 3.
    Recreate: replicas. ValueError for other strategies or a nil maxSurge.
    Upstream: NewRSNewReplicas
    """
    strategy_type = d.spec.strategy.type if d.spec is not None and d.spec.strategy is not None else None
    replicas = spec_replicas_of(d)
    if strategy_type == ROLLING_UPDATE_DEPLOYMENT_STRATEGY_TYPE:
        surge = get_scaled_value_from_int_or_percent(_rolling_params(d)[0], replicas, True)
        current_pod_count = get_replica_count_for_replica_sets(all_rss)
        max_total_pods = replicas + surge
        if current_pod_count >= max_total_pods:
            return spec_replicas(new_rs)          # cannot scale up
        scale_up_count = min(max_total_pods - current_pod_count, replicas - spec_replicas(new_rs))
        return spec_replicas(new_rs) + scale_up_count
    if strategy_type == RECREATE_DEPLOYMENT_STRATEGY_TYPE:
        return replicas
    raise ValueError(f"deployment type {strategy_type} isn't supported")


# --- finding replica sets -------------------------------------------------------------------------------

def _drop_empty(value: Any) -> Any:
    """Semantic equality treats nil and empty maps/slices alike: drop empty ones."""
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v != {} and v != []}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


def _template_without_hash(template: core_v1.PodTemplateSpec | None) -> Any:
    t = to_dict(template) if template is not None else {}
    labels = (t.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
    return _drop_empty(t)


# _template_without_hash of templates of objects the server returned, by the template object:
# id -> (template, its normalised form). The entry holds the template, so its id is not reused
# while cached. Such templates are never modified in place (informer objects are read-only; the
# controller's copies get new templates, e.g. set_from_replica_set_template), so a template seen
# before has the same normalised form. A no-op Deployment sync compared every ReplicaSet's
# template with the Deployment's four times over, each a to_dict and a walk: 55 % of its CPU.
_NORMALISED: dict[int, tuple[core_v1.PodTemplateSpec, Any]] = {}
_NORMALISED_MAX = 256        # each Deployment sync adds its copy's template: cleared when full


def normalised_template(obj: Any) -> Any:
    """obj's (a Deployment's or ReplicaSet's) template as equal_ignore_hash compares it,
    cached for objects with a resourceVersion (hand-built ones are normalised every time)."""
    template = _template(obj)
    if template is None or not obj.metadata.resource_version:
        return _template_without_hash(template)
    hit = _NORMALISED.get(id(template))
    if hit is not None and hit[0] is template:
        return hit[1]
    norm = _template_without_hash(template)
    _cache_normalised(template, norm)
    return norm


def share_normalised_template(copy: Any, original: Any) -> None:
    """copy is a fresh deep copy of original (a server object): give copy's template the cached
    normalised form of original's, so that a sync's copy of a Deployment is not normalised anew."""
    template = _template(copy)
    if template is not None and original.metadata.resource_version:
        _cache_normalised(template, normalised_template(original))


def _cache_normalised(template: core_v1.PodTemplateSpec, norm: Any) -> None:
    if len(_NORMALISED) >= _NORMALISED_MAX:
        _NORMALISED.clear()
    _NORMALISED[id(template)] = (template, norm)


def equal_ignore_hash(template1: core_v1.PodTemplateSpec | None, template2: core_v1.PodTemplateSpec | None) -> bool:
    """Templates equal apart from the pod-template-hash label (neither argument is modified).

    The hash is ignored because a Deployment's template never has it and because it would
    change whenever the PodTemplateSpec API gains a field. Upstream: EqualIgnoreHash
    (apiequality.Semantic.DeepEqual: nil and empty maps and lists are equal)
    """
    return _template_without_hash(template1) == _template_without_hash(template2)


def _template(obj: Any) -> core_v1.PodTemplateSpec | None:
    return obj.spec.template if obj.spec is not None else None


def find_new_replica_set(d: Deployment, rs_list: Sequence[ReplicaSet]) -> ReplicaSet | None:
    """The oldest RS whose template equals d's (ignoring the hash), or None.

    Several can match after cluster upgrades (#40415); the oldest wins, deterministically.
    Upstream: FindNewReplicaSet (EqualIgnoreHash of each; here of normalised_template's)
    """
    d_template = normalised_template(d)
    for rs in sorted(rs_list, key=creation_key):
        if normalised_template(rs) == d_template:
            return rs
    return None


def find_old_replica_sets(d: Deployment, rs_list: Sequence[ReplicaSet]) -> tuple[list[ReplicaSet], list[ReplicaSet]]:
    """(old RSs with pods, all old RSs): every RS but the new one. Upstream: FindOldReplicaSets"""
    new_rs = find_new_replica_set(d, rs_list)
    required_rss: list[ReplicaSet] = []
    all_rss: list[ReplicaSet] = []
    for rs in rs_list:
        if new_rs is not None and rs.metadata.uid == new_rs.metadata.uid:
            continue
        all_rss.append(rs)
        if spec_replicas(rs) != 0:
            required_rss.append(rs)
    return required_rss, all_rss


def set_from_replica_set_template(d: Deployment, template: core_v1.PodTemplateSpec) -> Deployment:
    """d's template := template without the hash label (d is modified). Upstream: SetFromReplicaSetTemplate"""
    t = template.deep_copy()
    if t.metadata is not None and t.metadata.labels is not None:
        t.metadata.labels = {k: v for k, v in t.metadata.labels.items() if k != DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY}
    d.spec.template = t
    return d


def list_replica_sets(d: Deployment, get_rs_list: Callable[[str, Any], list[ReplicaSet]]) -> list[ReplicaSet]:
    """RSs matching d's selector and controlled by d (no adoption or release). Upstream: ListReplicaSets

    get_rs_list(namespace, selector) lists candidates (upstream: a client LIST; the
    controller passes its lister).
    """
    from ...controller_utils import is_controlled_by, selector_from
    selector = selector_from(d.spec.selector)
    return [rs for rs in get_rs_list(d.metadata.namespace or "", selector) if is_controlled_by(rs, d)]


def get_deployments_for_replica_set(d_lister: Any, rs: ReplicaSet) -> list[Deployment]:
    """Deployments in rs's namespace whose non-empty, valid selector matches rs's labels.

    Only the one in rs's ControllerRef manages it; several matches are a user error.
    Upstream: GetDeploymentsForReplicaSet (which returns an error instead of an empty list)
    """
    from ....api import labels
    from ...controller_utils import selector_from
    if not rs.metadata.labels:
        return []
    out = []
    for d in d_lister.deployments(rs.metadata.namespace or "").list():
        try:
            selector = selector_from(d.spec.selector)
        except errors.StatusError:
            continue                       # an invalid selector matches no replica set
        # A nil or empty selector must match nothing, not everything.
        if not selector or not labels.matches(selector, rs.metadata.labels):
            continue
        out.append(d)
    return out


# --- counting -----------------------------------------------------------------------------------------

def _status(rs: ReplicaSet) -> apps_v1.ReplicaSetStatus:
    return rs.status if rs.status is not None else _EMPTY_RS_STATUS


_EMPTY_RS_STATUS = apps_v1.ReplicaSetStatus()


def get_replica_count_for_replica_sets(rss: Iterable[ReplicaSet | None]) -> int:
    """Σ spec.replicas. Upstream: GetReplicaCountForReplicaSets"""
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def get_actual_replica_count_for_replica_sets(rss: Iterable[ReplicaSet | None]) -> int:
    """Σ status.replicas. Upstream: GetActualReplicaCountForReplicaSets"""
    return sum(_status(rs).replicas or 0 for rs in rss if rs is not None)


def get_ready_replica_count_for_replica_sets(rss: Iterable[ReplicaSet | None]) -> int:
    """Σ status.readyReplicas. Upstream: GetReadyReplicaCountForReplicaSets"""
    return sum(_status(rs).ready_replicas or 0 for rs in rss if rs is not None)


def get_available_replica_count_for_replica_sets(rss: Iterable[ReplicaSet | None]) -> int:
    """Σ status.availableReplicas. Upstream: GetAvailableReplicaCountForReplicaSets"""
    return sum(_status(rs).available_replicas or 0 for rs in rss if rs is not None)


def get_terminating_replica_count_for_replica_sets(rss: Iterable[ReplicaSet | None]) -> int | None:
    """Σ status.terminatingReplicas, or None when one RS's count is unknown.

    An RS never synced (observedGeneration 0) without the field counts 0; a synced one
    without it means its controller does not report it, so the total is unknown.
    Upstream: GetTerminatingReplicaCountForReplicaSets
    """
    total = 0
    for rs in rss:
        if rs is None:
            continue
        st = _status(rs)
        if not st.observed_generation and st.terminating_replicas is None:
            continue
        if st.terminating_replicas is None:
            return None
        total += st.terminating_replicas
    return total


# --- rollout state ------------------------------------------------------------------------------------------

def _st(status: apps_v1.DeploymentStatus | None) -> apps_v1.DeploymentStatus:
    return status if status is not None else apps_v1.DeploymentStatus()


def deployment_complete(d: Deployment, new_status: apps_v1.DeploymentStatus | None) -> bool:
    """All replicas updated and available, no old pods left, and this generation observed.

    Upstream: DeploymentComplete
    """
    s, replicas = _st(new_status), spec_replicas_of(d)
    return (s.updated_replicas or 0) == replicas and (s.replicas or 0) == replicas and \
        (s.available_replicas or 0) == replicas and (s.observed_generation or 0) >= (d.metadata.generation or 0)


def deployment_progressing(d: Deployment, new_status: apps_v1.DeploymentStatus | None) -> bool:
    """Compared to d's stored status: more updated, fewer old, more ready or more available pods.

    Example: 10 pods, 4 updated -> 8 pods, 4 updated: old pods went 6 -> 4, progressing.
    Upstream: DeploymentProgressing
    """
    old, new = _st(d.status), _st(new_status)
    old_old_replicas = (old.replicas or 0) - (old.updated_replicas or 0)
    new_old_replicas = (new.replicas or 0) - (new.updated_replicas or 0)
    return (new.updated_replicas or 0) > (old.updated_replicas or 0) or new_old_replicas < old_old_replicas or \
        (new.ready_replicas or 0) > (old.ready_replicas or 0) or \
        (new.available_replicas or 0) > (old.available_replicas or 0)


def deployment_timed_out(d: Deployment, new_status: apps_v1.DeploymentStatus | None, now: float) -> bool:
    """The Progressing condition was last updated more than progressDeadlineSeconds before now.

    Never for a completed rollout (NewReplicaSetAvailable); always once timed out.
    Example: deadline 10 s, last update 00:01:09, now 00:01:20 -> 11 s > 10 s -> True.
    Upstream: DeploymentTimedOut
    """
    if not has_progress_deadline(d):
        return False
    condition = get_deployment_condition(new_status, DEPLOYMENT_PROGRESSING)
    if condition is None:
        return False            # no base to estimate progress from
    # A resync may arrive before the cache shows the condition of a new rollout: a completed
    # one must not time out just because it finished long ago.
    if condition.reason == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.reason == TIMED_OUT_REASON:
        return True
    last = parse_rfc3339(condition.last_update_time) if condition.last_update_time else -math.inf
    return last + (d.spec.progress_deadline_seconds or 0) < now


def has_progress_deadline(d: Deployment) -> bool:
    """Upstream: HasProgressDeadline (nil or MaxInt32 means none)"""
    pds = d.spec.progress_deadline_seconds if d.spec is not None else None
    return pds is not None and pds != MAX_INT32


def has_revision_history_limit(d: Deployment) -> bool:
    """Upstream: HasRevisionHistoryLimit (nil or MaxInt32 keeps every revision)"""
    rhl = d.spec.revision_history_limit if d.spec is not None else None
    return rhl is not None and rhl != MAX_INT32
