"""PodDisruptionBudget helpers shared by the eviction subresource and the disruption controller:
the DisruptionAllowed condition, kept from status.disruptionsAllowed, on the JSON form of a
budget's status.

Upstream: k8s.io/component-helpers/apps/poddisruptionbudget (helpers.go) and
apimeta.SetStatusCondition (apimachinery pkg/api/meta/conditions.go); the names are
policy/v1's (k8s.io/api/policy/v1/types.go).
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

DISRUPTION_ALLOWED_CONDITION = "DisruptionAllowed"
SYNC_FAILED_REASON = "SyncFailed"              # the controller could not compute the status
SUFFICIENT_PODS_REASON = "SufficientPods"      # disruptionsAllowed > 0
INSUFFICIENT_PODS_REASON = "InsufficientPods"  # disruptionsAllowed == 0
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"   # the StatusCause type of a refused eviction


def find_status_condition(conditions: list[Obj] | None, type_: str) -> Obj | None:
    """Upstream: apimeta.FindStatusCondition."""
    return next((c for c in conditions or () if c.get("type") == type_), None)


def set_status_condition(conditions: list[Obj], new: Obj, now: str) -> None:
    """Add or update the condition of new's type in place; lastTransitionTime moves only when
    the status changes. A zero observedGeneration is left out, as Go's omitempty does.
    Upstream: apimeta.SetStatusCondition."""
    new = {k: v for k, v in new.items() if k != "observedGeneration" or v}
    for i, c in enumerate(conditions):
        if c.get("type") == new["type"]:
            same = c.get("status") == new["status"] and c.get("lastTransitionTime")
            merged = {**{k: v for k, v in c.items() if k != "observedGeneration"}, **new}
            merged["lastTransitionTime"] = c["lastTransitionTime"] if same else now
            conditions[i] = merged
            return
    conditions.append({**new, "lastTransitionTime": now})


def update_disruption_allowed_condition(status: Obj, now: str) -> None:
    """Set the DisruptionAllowed condition from status.disruptionsAllowed (status["conditions"]
    is changed in place: pass a status whose list is the caller's own).
    Upstream: UpdateDisruptionAllowedCondition."""
    if status.get("conditions") is None:
        status["conditions"] = []
    if status.get("disruptionsAllowed", 0) > 0:
        cond = {"type": DISRUPTION_ALLOWED_CONDITION, "status": "True", "reason": SUFFICIENT_PODS_REASON}
    else:
        cond = {"type": DISRUPTION_ALLOWED_CONDITION, "status": "False", "reason": INSUFFICIENT_PODS_REASON}
    set_status_condition(status["conditions"], {
        **cond, "message": "", "observedGeneration": status.get("observedGeneration", 0)}, now)


def conditions_are_up_to_date(pdb: Obj) -> bool:
    """Whether the DisruptionAllowed condition agrees with disruptionsAllowed for the budget's
    current generation. Upstream: ConditionsAreUpToDate."""
    status = pdb.get("status") or {}
    cond = find_status_condition(status.get("conditions"), DISRUPTION_ALLOWED_CONDITION)
    if cond is None:
        return False
    if status.get("observedGeneration", 0) != pdb["metadata"].get("generation", 0):
        return False
    if status.get("disruptionsAllowed", 0) > 0:
        return cond.get("status") == "True" and cond.get("reason") == SUFFICIENT_PODS_REASON
    return cond.get("status") == "False" and cond.get("reason") == INSUFFICIENT_PODS_REASON
