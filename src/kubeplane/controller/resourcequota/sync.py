"""The controller's decisions, as pure functions over quota dicts (table-tested).

Upstream: the bodies of addQuota, syncResourceQuota and replenishQuota
(pkg/controller/resourcequota/resource_quota_controller.go).
"""
from __future__ import annotations

from typing import Any

from ...quota import resources as q
from ...quota.evaluator.core import Registry
from ...quota.generic import Evaluator, Obj
from ...quota.resources import ResourceList


def _parse(rl: Any) -> ResourceList | None:
    try:
        return q.parse_list(rl)
    except ValueError:
        return None


def hard_equal(spec_hard: Any, status_hard: Any) -> bool:
    """Semantic equality of two resource lists: numeric, absent equals empty."""
    a, b = _parse(spec_hard), _parse(status_hard)
    return a is not None and b is not None and q.equals(a, b)


def needs_usage_calculation(rq: Obj, registry: Registry) -> bool:
    """Whether the quota goes to the priority queue: its status does not hold its spec's hard
    limits yet, or lacks usage for a resource some evaluator can measure (admission refuses
    what such a quota tracks until then). Upstream: addQuota."""
    status = rq.get("status") or {}
    if not hard_equal((rq.get("spec") or {}).get("hard"), status.get("hard")):
        return True
    used = status.get("used") or {}
    missing = [name for name in status.get("hard") or {} if name not in used]
    return bool(missing) and bool(registry.for_names(missing))


def quota_status(rq: Obj, hard: ResourceList, new_usage: ResourceList) -> tuple[Obj, bool]:
    """The status to write and whether it differs from the stored one.

    The observed usage replaces the previous one resource by resource (a resource whose
    objects could not be listed keeps its old value); names no longer hard are dropped; hard is
    copied from the spec. Upstream: syncResourceQuota.
    """
    status = rq.get("status") or {}
    old_used = _parse(status.get("used")) or {}
    dirty = (not hard_equal((rq.get("spec") or {}).get("hard"), status.get("hard"))
             or status.get("hard") is None or status.get("used") is None)
    used = q.mask({**old_used, **new_usage}, hard)
    dirty = dirty or not q.equals(used, old_used)
    return {"hard": q.to_json(hard), "used": q.to_json(used)}, dirty


def quotas_to_replenish(quotas: list[Obj], evaluator: Evaluator) -> list[Obj]:
    """The quotas tracking something the evaluator measures. Upstream: replenishQuota."""
    return [rq for rq in quotas if evaluator.matching_resources(list((rq.get("status") or {}).get("hard") or {}))]
