"""The RBAC authorizer, with a decision cache in front of upstream's rule walk.

Upstream: RBACAuthorizer.Authorize and authorizingVisitor (plugin/pkg/auth/authorizer/rbac/
rbac.go): walk the rules that apply to the user in the namespace, allow on the first that
allows (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`), otherwise
no opinion, with the resolution errors met (`RBAC: role.rbac... "r" not found`) as the reason,
or "" when there were none. The super-user group is upstream's privilegedGroupAuthorizer
(authorizerfactory.NewPrivilegedGroups), which kube-apiserver puts before every mode.

Every request passes here (the in-process components' pod creates, bindings, status patches
and Events too), so a decision seen before must cost about a microsecond: decisions are cached
per user object (by identity, so no hashing of the UserInfo) and per (verb, namespace, group,
resource, subresource) — or (verb, path) — and dropped whenever an RBAC object changes
(the index's generation). A decision is name-independent unless the first rule matching the
request ignoring names lists resourceNames; only then are decisions cached per name.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ...authentication.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from ..authorizer import Attributes, Decision
from .index import PolicyIndex
from .resolver import DefaultRuleResolver, aggregate
from .rules import (Rule, api_group_matches, non_resource_url_matches, resource_matches, resource_name_matches,
                    verb_matches)

MAX_KEYS_PER_USER = 4096     # a user's cached decisions; past it that user's cache starts over
MAX_USERS = 4096             # users with cached decisions; past it every cache starts over
Result = tuple[Decision, str]


class PrivilegedGroups:
    """Upstream: privilegedGroupAuthorizer — system:masters may do anything (no reason)."""

    def __init__(self, *groups: str) -> None:
        self.groups = frozenset(groups or (SYSTEM_PRIVILEGED_GROUP,))

    def authorize(self, a: Attributes) -> Result:
        if not self.groups.isdisjoint(a.user.groups):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


class _PerName(NamedTuple):
    """A request whose decision depends on the name: the rules matching it ignoring names
    (with their sources), the resolution errors, and the decisions by name so far."""
    matches: list[tuple[str, Rule]]
    errors: list[str]
    by_name: dict[str, Result]


class RBACAuthorizer:
    def __init__(self, index: PolicyIndex) -> None:
        self.index = index
        self.resolver = DefaultRuleResolver(index)
        self._generation = -1
        self._by_id: dict[int, tuple[UserInfo, dict[tuple[str, ...], Any]]] = {}
        self._by_principal: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], Any]] = {}

    def authorize(self, a: Attributes) -> Result:
        index = self.index
        index.refresh()
        if index.generation != self._generation:
            self._by_id.clear()
            self._by_principal.clear()
            self._generation = index.generation
        user = a.user
        entry = self._by_id.get(id(user))
        cache = entry[1] if entry is not None and entry[0] is user else self._cache_of(user)
        if a.resource_request:
            key: tuple[str, ...] = (a.verb, a.namespace, a.api_group, a.resource, a.subresource)
        else:
            key = (a.verb, a.path)
        hit: Any = cache.get(key)          # a Result, or a _PerName (a NamedTuple: not `tuple` itself)
        if hit is None:
            if len(cache) >= MAX_KEYS_PER_USER:
                cache.clear()
            hit = cache[key] = self._decide(a)
        if hit.__class__ is tuple:
            return hit
        by_name = hit.by_name
        result = by_name.get(a.name)
        if result is None:
            if len(by_name) >= MAX_KEYS_PER_USER:
                by_name.clear()
            result = by_name[a.name] = _decide_by_name(hit, a.name)
        return result

    def _cache_of(self, user: UserInfo) -> dict[tuple[str, ...], Any]:
        if len(self._by_id) >= MAX_USERS:
            self._by_id.clear()
            self._by_principal.clear()
        cache = self._by_principal.setdefault((user.name, user.groups), {})
        self._by_id[id(user)] = (user, cache)      # holding the user keeps its id unique
        return cache

    def _decide(self, a: Attributes) -> Result | _PerName:
        """Upstream's walk (VisitRulesFor), recording every rule that matches ignoring names."""
        matches: list[tuple[str, Rule]] = []
        errors: list[str] = []
        if a.resource_request:
            combined = a.resource + "/" + a.subresource if a.subresource else a.resource

            def visit(source: str, rule: Rule | None, err: str | None) -> bool:
                if rule is not None and verb_matches(rule, a.verb) and api_group_matches(rule, a.api_group) \
                        and resource_matches(rule, combined, a.subresource):
                    matches.append((source, rule))
                    return bool(rule.resource_names)       # the first without names decides
                if err is not None:
                    errors.append(err)
                return True
        else:
            def visit(source: str, rule: Rule | None, err: str | None) -> bool:
                if rule is not None and verb_matches(rule, a.verb) and non_resource_url_matches(rule, a.path):
                    matches.append((source, rule))
                    return False
                if err is not None:
                    errors.append(err)
                return True
        self.resolver.visit_rules_for(a.user, a.namespace, visit)
        if not matches:
            return Decision.NO_OPINION, ("RBAC: " + aggregate(errors)) if errors else ""
        if not matches[0][1].resource_names:
            return Decision.ALLOW, "RBAC: allowed by " + matches[0][0]
        return _PerName(matches, errors, {})

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """Upstream: RBACAuthorizer.RulesFor (SelfSubjectRulesReview)."""
        return self.resolver.rules_for(user, namespace)


def _decide_by_name(p: _PerName, name: str) -> Result:
    for source, rule in p.matches:
        if resource_name_matches(rule, name):
            return Decision.ALLOW, "RBAC: allowed by " + source
    # the walk stopped at a rule without names only if one matched, which allowed
    return Decision.NO_OPINION, ("RBAC: " + aggregate(p.errors)) if p.errors else ""
