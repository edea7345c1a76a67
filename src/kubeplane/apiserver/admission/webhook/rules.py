"""Whether a webhook's rule matches a request. Upstream: Matcher (predicates/rules/rules.go).

A rule (RuleWithOperations) matches when its scope, operations, apiGroups, apiVersions and
resources all do: `*` is a wildcard in each list, a resource entry `pods/status` names a
subresource, `*/status` any resource's, `pods/*` any subresource of pods, `*/*` everything.
"""
from __future__ import annotations

from typing import Any

from ..equivalent import GVK, GVR, EquivalentResourceRegistry, UnknownKindError, match_resource_rules
from ..interface import Attributes
from .predicates import internal_error
from .request import Invocation, request_kind

Obj = dict[str, Any]

ADMISSION_GROUP = "admissionregistration.k8s.io"
# Upstream: IsExemptAdmissionConfigurationResource — webhooks are never called for the
# objects that configure admission, so a bad webhook cannot lock itself in.
EXEMPT_KINDS = frozenset({
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
})

# Virtual resources, answered and never stored (the access and token reviews): no webhook sees
# them, so admission cannot lock a cluster out of its own authentication and authorization.
# Upstream: the ExcludeAdmissionWebhookVirtualResources feature (beta, on by default in 1.37)
# and kube-apiserver's excluded admission resources (isExcludedFromAllHooks).
EXCLUDED_VIRTUAL_RESOURCES = frozenset({
    ("authentication.k8s.io", "tokenreviews"), ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"), ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"), ("authorization.k8s.io", "selfsubjectrulesreviews"),
})


def _exact_or_wildcard(items: Any, requested: str) -> bool:
    """Upstream: exactOrWildcard."""
    return any(i == "*" or i == requested for i in items or ())


def _scope(rule: Obj, a: Attributes, group: str, resource: str, version: str) -> bool:
    """Upstream: Matcher.scope. A request for a namespace object is cluster-scoped (its
    attributes carry the namespace's own name as namespace)."""
    scope = rule.get("scope")
    if scope is None or scope == "*":
        return True
    is_namespace = group == "" and version == "v1" and resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and a.namespace != ""
    if scope == "Cluster":
        return is_namespace or a.namespace == ""
    return False


def _operation(rule: Obj, a: Attributes) -> bool:
    """Upstream: Matcher.operation."""
    op = a.operation.value
    return any(o == "*" or o == op for o in rule.get("operations") or ())


def split_resource(res_sub: str) -> tuple[str, str]:
    """Upstream: splitResource — "pods/status" -> ("pods", "status")."""
    res, _, sub = res_sub.partition("/")
    return res, sub


def _resource(rule: Obj, resource: str, subresource: str) -> bool:
    """Upstream: Matcher.resource."""
    for entry in rule.get("resources") or ():
        res, sub = split_resource(entry)
        if (res == "*" or res == resource) and (sub == "*" or sub == subresource):
            return True
    return False


def matches(rule: Obj, a: Attributes, gvr: GVR | None = None) -> bool:
    """Upstream: Matcher.Matches. gvr overrides the request's resource (an equivalent resource
    under matchPolicy Equivalent: attrWithResourceOverride)."""
    g, v, r = gvr if gvr is not None else (a.group, a.version, a.resource)
    return (_scope(rule, a, g, r, v) and _operation(rule, a) and _exact_or_wildcard(rule.get("apiGroups"), g)
            and _exact_or_wildcard(rule.get("apiVersions"), v) and _resource(rule, r, a.subresource))


def match_rules(rules: tuple[Obj, ...], a: Attributes, equivalent: bool,
                mapper: EquivalentResourceRegistry | None = None) -> Invocation | None:
    """The invocation of a webhook with these rules for a, or None. Upstream: ShouldCallHook's
    rule loops (an equivalent of unknown kind: an internal error)."""
    try:
        m = match_resource_rules(rules, a, equivalent, mapper, matches, GVK(*request_kind(a)))
    except UnknownKindError as e:
        raise internal_error(str(e)) from None
    if m is None:
        return None
    return Invocation(*m.resource, a.subresource, *m.kind)


def is_exempt_admission_configuration_resource(a: Attributes, kind_group: str) -> bool:
    """Upstream: IsExemptAdmissionConfigurationResource (by the request's kind)."""
    return kind_group == ADMISSION_GROUP and a.kind in EXEMPT_KINDS


def is_excluded(a: Attributes, kind_group: str) -> bool:
    """Whether no webhook may see a: upstream's isExcludedFromAllHooks and isExcludedFromAPIHooks."""
    return ((a.group, a.resource) in EXCLUDED_VIRTUAL_RESOURCES
            or is_exempt_admission_configuration_resource(a, kind_group))
