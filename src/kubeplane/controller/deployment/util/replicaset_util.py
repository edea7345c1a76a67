"""ReplicaSet list helpers the Deployment controller needs: filters and sort orders.

Upstream keeps these in pkg/controller/controller_utils.go (FilterActiveReplicaSets,
FilterReplicaSets, ReplicaSetsByCreationTimestamp, ReplicaSetsBySizeOlder/Newer); they live
here because only the Deployment controller uses them. Every function returns a new list and
never modifies the ReplicaSets (they are usually cache objects).
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Iterable, Sequence

from ....api.types import apps_v1
from ....utils.clock import parse_rfc3339

ReplicaSet = apps_v1.ReplicaSet


def spec_replicas(rs: ReplicaSet) -> int:
    """*(rs.Spec.Replicas); the API server defaults it, so None only appears in hand-built objects."""
    return (rs.spec.replicas if rs.spec is not None else None) or 0


@functools.lru_cache(maxsize=4096)
def _time(ts: str | None) -> float:
    """A creationTimestamp as epoch seconds; Go's zero time (unset) sorts before everything."""
    return parse_rfc3339(ts) if ts else -math.inf


def creation_key(rs: ReplicaSet) -> tuple[float, str]:
    """Sort key of ReplicaSetsByCreationTimestamp: older first, then by name."""
    return _time(rs.metadata.creation_timestamp), rs.metadata.name or ""


def filter_active_replica_sets(replica_sets: Iterable[ReplicaSet | None]) -> list[ReplicaSet]:
    """The ReplicaSets with spec.replicas > 0 (None entries skipped). Upstream: FilterActiveReplicaSets"""
    return [rs for rs in replica_sets if rs is not None and spec_replicas(rs) > 0]


def filter_replica_sets(replica_sets: Iterable[ReplicaSet | None],
                        filter_fn: Callable[[ReplicaSet | None], bool]) -> list[ReplicaSet]:
    """Upstream: FilterReplicaSets"""
    return [rs for rs in replica_sets if filter_fn(rs)]


def sort_by_creation_timestamp(replica_sets: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    """Oldest first; equal timestamps by name. Upstream: sort.Sort(ReplicaSetsByCreationTimestamp)"""
    return sorted(replica_sets, key=creation_key)


def sort_by_size_older(replica_sets: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    """Largest first; equal sizes oldest first (scale-down order). Upstream: ReplicaSetsBySizeOlder"""
    return sorted(replica_sets, key=lambda rs: (-spec_replicas(rs), creation_key(rs)))


def sort_by_size_newer(replica_sets: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    """Largest first; equal sizes newest first (scale-up order). Upstream: ReplicaSetsBySizeNewer"""
    by_age = sorted(replica_sets, key=creation_key, reverse=True)     # newest (and last name) first
    return sorted(by_age, key=spec_replicas, reverse=True)            # stable: ties keep newest first
