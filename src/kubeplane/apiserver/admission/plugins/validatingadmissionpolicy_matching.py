"""Which requests a ValidatingAdmissionPolicy's matchConstraints, or a binding's matchResources,
select: resource rules, exclusions, namespace and object selectors.

Upstream: pkg/admission/plugin/policy/matching/matching.go (Matcher.Matches), pkg/admission/
plugin/webhook/predicates/rules (Matcher: operation, group, version, resource and scope),
predicates/namespace and predicates/object (the selectors). matchPolicy Equivalent is kept as
Exact: kubeplane serves each resource under one group and version.
"""
from __future__ import annotations

from typing import Any

from ....api.validation.meta import selector_matches
from ..interface import Attributes, Operation

Obj = dict[str, Any]


def _in(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def _resource_matches(resources: list[str], resource: str, subresource: str) -> bool:
    """Upstream: rules.Matcher.resource — "*", "*/*", "pods", "pods/*", "*/status", "pods/status"."""
    for r in resources:
        if r == "*/*":
            return True
        if r == "*":
            if not subresource:
                return True
            continue
        res, _, sub = r.partition("/")
        if res not in ("*", resource):
            continue
        if (not sub and not subresource) or sub == "*" or (sub and sub == subresource):
            return True
    return False


def rule_matches(rule: Obj, a: Attributes, namespaced: bool) -> bool:
    """Upstream: rules.Matcher.Matches (and NamedRuleWithOperations' resourceNames)."""
    op = a.operation.value
    if not _in(rule.get("operations"), op):
        return False
    if not _in(rule.get("apiGroups"), a.group) or not _in(rule.get("apiVersions"), a.version):
        return False
    if not _resource_matches(rule.get("resources") or [], a.resource, a.subresource):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and namespaced or scope == "Namespaced" and not namespaced:
        return False
    names = rule.get("resourceNames")
    return not names or (a.name or ((a.obj or {}).get("metadata") or {}).get("name", "")) in names


def _labels(obj: Obj | None) -> dict[str, str] | None:
    if not isinstance(obj, dict):
        return None
    return (obj.get("metadata") or {}).get("labels") or {}


def object_selector_matches(selector: Obj | None, a: Attributes) -> bool:
    """Upstream: object.Matcher.MatchObjectSelector — the new or the old object's labels."""
    if not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions")):
        return True
    new, old = _labels(a.obj), _labels(a.old_obj)
    return ((new is not None and selector_matches(selector, new))
            or (old is not None and selector_matches(selector, old)))


def needs_namespace(selector: Obj | None, a: Attributes) -> bool:
    """Whether the namespace selector must read the request's namespace's labels."""
    if not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions")):
        return False
    return bool(a.namespace) or (a.group == "" and a.resource == "namespaces")


def namespace_selector_matches(selector: Obj | None, a: Attributes, namespace: Obj | None) -> bool:
    """Upstream: namespace.Matcher.MatchNamespaceSelector — a cluster-scoped request (not a
    Namespace itself) always matches; a Namespace is matched by its own labels."""
    if not needs_namespace(selector, a):
        return True
    if a.group == "" and a.resource == "namespaces" and not a.namespace:
        namespace = a.obj if a.operation is not Operation.DELETE else a.old_obj
    return selector_matches(selector, _labels(namespace) or {})


def rules_match(constraints: Obj, a: Attributes, namespaced: bool, require_rules: bool) -> bool:
    """resourceRules (any; none given: all, for a binding) and excludeResourceRules (none)."""
    rules = constraints.get("resourceRules") or []
    if rules or require_rules:
        if not any(rule_matches(r, a, namespaced) for r in rules):
            return False
    return not any(rule_matches(r, a, namespaced) for r in constraints.get("excludeResourceRules") or [])
