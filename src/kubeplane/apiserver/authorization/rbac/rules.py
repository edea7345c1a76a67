"""Policy rules and whether one allows a request.

Upstream: RuleAllows (plugin/pkg/auth/authorizer/rbac/rbac.go), VerbMatches, APIGroupMatches,
ResourceMatches, ResourceNameMatches, NonResourceURLMatches and CompactString
(pkg/apis/rbac/v1/evaluation_helpers.go). Note that upstream matches `*` and `*/subresource`
in resources, and a trailing `*` in non-resource URLs; a `resource/*` rule matches only the
literal resource "resource/*" (no subresource wildcard), as upstream.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ....api.errors import go_quote_list
from ..authorizer import Attributes

ALL = "*"


class Rule(NamedTuple):
    """A PolicyRule, its lists as tuples (hashable, read by the matchers below)."""
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def of(cls, d: dict[str, Any]) -> Rule:
        """From a stored rbac.authorization.k8s.io/v1 PolicyRule."""
        return cls(tuple(d.get("verbs") or ()), tuple(d.get("apiGroups") or ()), tuple(d.get("resources") or ()),
                   tuple(d.get("resourceNames") or ()), tuple(d.get("nonResourceURLs") or ()))

    def to_dict(self) -> dict[str, Any]:
        """The v1 PolicyRule (empty lists left out, as the API omits them)."""
        d: dict[str, Any] = {"verbs": list(self.verbs)}
        for key, value in (("apiGroups", self.api_groups), ("resources", self.resources),
                           ("resourceNames", self.resource_names), ("nonResourceURLs", self.non_resource_urls)):
            if value:
                d[key] = list(value)
        return d


def rules_of(role: dict[str, Any]) -> tuple[Rule, ...]:
    return tuple(Rule.of(r) for r in role.get("rules") or () if isinstance(r, dict))


def verb_matches(rule: Rule, verb: str) -> bool:
    """Upstream: VerbMatches"""
    return ALL in rule.verbs or verb in rule.verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    """Upstream: APIGroupMatches"""
    return ALL in rule.api_groups or group in rule.api_groups


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    """Upstream: ResourceMatches — `*`, the exact resource[/subresource], or `*/subresource`."""
    for r in rule.resources:
        if r == ALL or r == combined:
            return True
        if subresource and len(r) == len(subresource) + 2 and r.startswith("*/") and r.endswith(subresource):
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    """Upstream: ResourceNameMatches — no names means every name."""
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    """Upstream: NonResourceURLMatches — `*`, the exact path, or a prefix ending in `*`."""
    for u in rule.non_resource_urls:
        if u == ALL or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(a: Attributes, rule: Rule) -> bool:
    """Upstream: RuleAllows"""
    if a.resource_request:
        combined = a.resource + "/" + a.subresource if a.subresource else a.resource
        return (verb_matches(rule, a.verb) and api_group_matches(rule, a.api_group)
                and resource_matches(rule, combined, a.subresource) and resource_name_matches(rule, a.name))
    return verb_matches(rule, a.verb) and non_resource_url_matches(rule, a.path)


def compact_string(r: Rule) -> str:
    """Upstream: CompactString (the escalation message's form of a rule)."""
    parts = []
    for label, values in (("APIGroups", r.api_groups), ("Resources", r.resources),
                          ("NonResourceURLs", r.non_resource_urls), ("ResourceNames", r.resource_names),
                          ("Verbs", r.verbs)):
        if values:
            parts.append(f"{label}:{go_quote_list(values)}")
    return "{" + ", ".join(parts) + "}"
