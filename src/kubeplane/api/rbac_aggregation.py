"""The rules an aggregated ClusterRole must hold (shared by the clusterrole-aggregation
controller and the API server's bootstrap-roles hook).

Upstream: ClusterRoleAggregationController.syncClusterRole and ruleExists
(pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go): for each selector
in turn, the ClusterRoles it picks in name order (the aggregated role itself left out), each
rule added unless a semantically equal one is already there.
"""
from __future__ import annotations

from typing import Any, Iterable

from . import labels

Obj = dict[str, Any]
RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def semantic_rule(rule: Obj) -> tuple[tuple[str, ...], ...]:
    """A PolicyRule as Semantic.DeepEqual compares it: an absent list and an empty one are equal."""
    return tuple(tuple(rule.get(f) or ()) for f in RULE_FIELDS)


def rules_equal(a: Iterable[Obj], b: Iterable[Obj]) -> bool:
    """Upstream: equality.Semantic.DeepEqual of two []PolicyRule (nil equals empty)."""
    return [semantic_rule(r) for r in a] == [semantic_rule(r) for r in b]


def aggregated_rules(role: Obj, all_roles: Iterable[Obj]) -> list[Obj] | None:
    """The rules role must have (None: not an aggregated role). An invalid selector raises
    api.errors.BadRequest (upstream: LabelSelectorAsSelector's error fails the sync)."""
    rule = role.get("aggregationRule")
    if rule is None:
        return None
    name = role["metadata"]["name"]
    roles = sorted(all_roles, key=lambda r: r["metadata"]["name"])
    rules: list[Obj] = []
    seen: set[tuple[tuple[str, ...], ...]] = set()
    for ls in rule.get("clusterRoleSelectors") or ():
        sel = labels.from_label_selector(ls)
        if sel is None:
            continue
        for r in roles:
            if r["metadata"]["name"] == name or not labels.matches(sel, r["metadata"].get("labels")):
                continue
            for pr in r.get("rules") or ():
                key = semantic_rule(pr)
                if key not in seen:             # ruleExists
                    seen.add(key)
                    rules.append(pr)
    return rules
