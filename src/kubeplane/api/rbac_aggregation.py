"""The rules an aggregated ClusterRole must hold (shared by the clusterrole-aggregation
controller and the API server's bootstrap-roles hook).

Upstream: ClusterRoleAggregationController.syncClusterRole
(pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go): the ClusterRoles
any selector picks, in name order, each rule added unless an equal one is already there.
"""
from __future__ import annotations

from typing import Any, Iterable

from . import labels

Obj = dict[str, Any]


def aggregated_rules(role: Obj, all_roles: Iterable[Obj]) -> list[Obj] | None:
    """The rules role must have (None: not an aggregated role)."""
    rule = role.get("aggregationRule")
    if rule is None:
        return None
    name = role["metadata"]["name"]
    picked: dict[str, Obj] = {}
    roles = list(all_roles)
    for ls in rule.get("clusterRoleSelectors") or ():
        try:
            sel = labels.from_label_selector(ls)
        except Exception:          # an invalid selector picks nothing (validation refuses it)
            continue
        if sel is None:
            continue
        for r in roles:
            if labels.matches(sel, r["metadata"].get("labels")):
                picked[r["metadata"]["name"]] = r
    rules: list[Obj] = []
    for n in sorted(picked):
        if n == name:
            continue
        for r in picked[n].get("rules") or ():
            if r not in rules:
                rules.append(r)
    return rules
