"""Which requests a ValidatingAdmissionPolicy's matchConstraints, or a binding's matchResources,
select: resource rules, exclusions, namespace and object selectors.

Upstream: pkg/admission/plugin/policy/matching/matching.go (Matcher.Matches), pkg/admission/
plugin/webhook/predicates/rules (Matcher: operation, group, version, resource and scope),
predicates/namespace and predicates/object (the selectors). matchPolicy Equivalent (the
default) matches a request through an equivalent resource too (admission/equivalent.py:
matchesResourceRules); the policy then sees the request as the matched kind (versioned_attributes,
versioned_request: upstream's VersionedAttributes and CreateAdmissionRequest(attr, matchedResource,
matchedKind)).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ....api.validation.meta import selector_matches
from ..equivalent import GVK, GVR, EquivalentResourceRegistry, Match, UnknownKindError, match_resource_rules
from ..interface import Attributes, Operation
from ..webhook.request import convert, request_kind

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


def rule_matches(rule: Obj, a: Attributes, namespaced: bool, gvr: GVR | None = None) -> bool:
    """Upstream: rules.Matcher.Matches (and NamedRuleWithOperations' resourceNames). gvr: the
    request as an equivalent resource (whose match upstream does not check against resourceNames)."""
    op = a.operation.value
    if not _in(rule.get("operations"), op):
        return False
    group, version, resource = gvr if gvr is not None else (a.group, a.version, a.resource)
    if not _in(rule.get("apiGroups"), group) or not _in(rule.get("apiVersions"), version):
        return False
    if not _resource_matches(rule.get("resources") or [], resource, a.subresource):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and namespaced or scope == "Namespaced" and not namespaced:
        return False
    names = rule.get("resourceNames")
    return gvr is not None or not names or (a.name or ((a.obj or {}).get("metadata") or {}).get("name", "")) in names


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


def resource_rules_match(constraints: Obj, a: Attributes, namespaced: bool, require_rules: bool,
                         mapper: EquivalentResourceRegistry | None = None) -> Match | None:
    """Upstream: Matcher.Matches' rules — excludeResourceRules (none may match, under the
    matchPolicy too), then resourceRules (none given: all, for a binding): the resource and kind
    matched, or None. An equivalent of unknown kind matches nothing (upstream: an error)."""
    equivalent = constraints.get("matchPolicy", "Equivalent") == "Equivalent"
    own_kind = GVK(*request_kind(a))

    def matches(r: Obj, at: Attributes, gvr: GVR) -> bool:
        own = gvr.group == at.group and gvr.version == at.version and gvr.resource == at.resource
        return rule_matches(r, at, namespaced, None if own else gvr)

    try:
        if match_resource_rules(constraints.get("excludeResourceRules") or [], a, equivalent, mapper, matches,
                                own_kind):
            return None
        rules = constraints.get("resourceRules") or []
        if not rules and not require_rules:
            return Match(GVR(a.group, a.version, a.resource), own_kind)
        return match_resource_rules(rules, a, equivalent, mapper, matches, own_kind)
    except UnknownKindError:
        return None


def rules_match(constraints: Obj, a: Attributes, namespaced: bool, require_rules: bool) -> bool:
    """resourceRules (any; none given: all, for a binding) and excludeResourceRules (none)."""
    return resource_rules_match(constraints, a, namespaced, require_rules) is not None


def versioned_attributes(a: Attributes, m: Match) -> Attributes:
    """a with its objects converted to the matched kind (a itself when matched as it is).
    Upstream: VersionedAttributes (ConvertToGVK to the matched kind), which keeps the request's
    own resource (GetResource: what `authorizer.requestResource` checks); the matched resource
    and kind are the `request` variable's (versioned_request). Warnings and audit annotations
    stay shared with a."""
    if m.resource == (a.group, a.version, a.resource):
        return a
    api_version = f"{m.kind.group}/{m.kind.version}" if m.kind.group else m.kind.version
    return dataclasses.replace(a, obj=convert(a.obj, api_version), old_obj=convert(a.old_obj, api_version))


def versioned_request(request: Obj, a: Attributes, m: Match) -> Obj:
    """The `request` variable as the policy matched it: kind/resource the matched ones,
    requestKind/requestResource the request as it was made (a's). Upstream: CreateAdmissionRequest."""
    g, v, k = request_kind(a)
    return {**request, "kind": m.kind._asdict(), "resource": m.resource._asdict(),
            "requestKind": {"group": g, "version": v, "kind": k},
            "requestResource": {"group": a.group, "version": a.version, "resource": a.resource}}
