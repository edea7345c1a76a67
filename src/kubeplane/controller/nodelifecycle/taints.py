"""Pure taint and toleration helpers: set arithmetic over taints, toleration matching.

Taints are identified by (key, effect): two taints with the same key and effect "match"
whatever their value or timeAdded, so a node never carries two of them.

Upstream: pkg/util/taints/taints.go, staging/src/k8s.io/api/core/v1/{taint,toleration}.go,
pkg/apis/core/v1/helper/helpers.go (GetMatchingTolerations)
"""
from __future__ import annotations

from typing import Callable, Sequence

from ...api.toleration import tolerates_taint
from ...api.types import core_v1

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"

# Well-known taint keys. Upstream: staging/src/k8s.io/api/core/v1/well_known_taints.go
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NODE_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def match_taint(a: core_v1.Taint, b: core_v1.Taint) -> bool:
    """Same key and effect (value and timeAdded do not matter). Upstream: Taint.MatchTaint"""
    return a.key == b.key and a.effect == b.effect


def taint_exists(taints: Sequence[core_v1.Taint] | None, taint_to_find: core_v1.Taint) -> bool:
    """Upstream: TaintExists"""
    return any(match_taint(t, taint_to_find) for t in taints or ())


def taint_set_filter(taints: Sequence[core_v1.Taint] | None,
                     fn: Callable[[core_v1.Taint], bool]) -> list[core_v1.Taint]:
    """Upstream: TaintSetFilter"""
    return [t for t in taints or () if fn(t)]


def taint_set_diff(taints_new: Sequence[core_v1.Taint], taints_old: Sequence[core_v1.Taint]
                   ) -> tuple[list[core_v1.Taint], list[core_v1.Taint]]:
    """(to add, to remove) to turn taints_old into taints_new, by key+effect. Upstream: TaintSetDiff"""
    to_add = [t for t in taints_new if not taint_exists(taints_old, t)]
    to_remove = [t for t in taints_old if not taint_exists(taints_new, t)]
    return to_add, to_remove


def add_or_update_taint(node: core_v1.Node, taint: core_v1.Taint) -> tuple[core_v1.Node, bool]:
    """A copy of node carrying taint, and whether anything changed.

    A matching taint that differs (value, timeAdded) is replaced in place; an identical one
    means no change. Upstream: AddOrUpdateTaint
    """
    new_node = node.deep_copy()
    spec = new_node.spec if new_node.spec is not None else core_v1.NodeSpec()
    new_taints: list[core_v1.Taint] = []
    updated = False
    for existing in spec.taints or ():
        if match_taint(taint, existing):
            if taint == existing:
                return new_node, False
            new_taints.append(taint)
            updated = True
            continue
        new_taints.append(existing)
    if not updated:
        new_taints.append(taint)
    spec.taints = new_taints
    new_node.spec = spec
    return new_node, True


def remove_taint(node: core_v1.Node, taint: core_v1.Taint) -> tuple[core_v1.Node, bool]:
    """A copy of node without taint (by key+effect), and whether it had it. Upstream: RemoveTaint"""
    new_node = node.deep_copy()
    taints = (new_node.spec.taints if new_node.spec else None) or []
    if not taint_exists(taints, taint):
        return new_node, False
    assert new_node.spec is not None
    new_node.spec.taints = [t for t in taints if not match_taint(t, taint)] or None
    return new_node, True


def get_no_execute_taints(taints: Sequence[core_v1.Taint] | None) -> list[core_v1.Taint]:
    """Upstream: getNoExecuteTaints (tainteviction/taint_eviction.go)"""
    return [t for t in taints or () if t.effect == TAINT_EFFECT_NO_EXECUTE]


def get_matching_tolerations(taints: Sequence[core_v1.Taint], tolerations: Sequence[core_v1.Toleration] | None
                             ) -> tuple[bool, list[core_v1.Toleration]]:
    """Whether every taint is tolerated, and the first toleration used for each.

    Upstream: GetMatchingTolerations (pkg/apis/core/v1/helper/helpers.go)
    """
    if not taints:
        return True, []
    used: list[core_v1.Toleration] = []
    for taint in taints:
        match = next((t for t in tolerations or () if tolerates_taint(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def get_min_toleration_time(tolerations: Sequence[core_v1.Toleration]) -> float:
    """Seconds until the first used toleration runs out: -1 means forever, 0 means now.

    Example: tolerationSeconds 300 and 60 -> 60; 300 and unset -> 300; unset only -> -1;
    any value <= 0 -> 0; no tolerations at all -> 0.
    Upstream: getMinTolerationTime (tainteviction/taint_eviction.go)
    """
    if not tolerations:
        return 0.0
    min_seconds: int | None = None
    for t in tolerations:
        if t.toleration_seconds is not None:
            if t.toleration_seconds <= 0:
                return 0.0
            if min_seconds is None or t.toleration_seconds < min_seconds:
                min_seconds = t.toleration_seconds
    return -1.0 if min_seconds is None else float(min_seconds)
