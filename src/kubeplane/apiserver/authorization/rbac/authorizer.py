"""The RBAC authorizer, with a decision cache in front of upstream's rule walk.

Upstream: RBACAuthorizer.Authorize and authorizingVisitor (plugin/pkg/auth/authorizer/rbac/
rbac.go): walk the rules that apply to the user in the namespace, allow on the first that
allows (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`), otherwise
no opinion, with the resolution errors met (`RBAC: role.rbac... "r" not found`) as the reason,
or "" when there were none. The super-user group is upstream's privilegedGroupAuthorizer
(authorizerfactory.NewPrivilegedGroups), which kube-apiserver puts before every mode.

Every request passes here (the in-process components' pod creates, bindings, status patches
and Events too), so a decision seen before must cost about a microsecond: decisions are kept in
one bounded LRU (`DecisionCache`) keyed by what they depend on — the user's name and groups
(all RBAC looks at) and the (verb, namespace, group, resource, subresource) or (verb, path)
asked — and dropped whole whenever an RBAC object changes (the index's generation). A decision
is name-independent unless the first rule matching the request ignoring names lists
resourceNames; only then are decisions kept per name too. `decide` answers from the cache
straight from the request's RequestInfo, without building Attributes (APIServer.authorize).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, NamedTuple

from ...authentication.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from ...request import RequestInfo
from ..authorizer import Attributes, Decision, request_name
from .index import PolicyIndex
from .resolver import DefaultRuleResolver, aggregate
from .rules import (Rule, api_group_matches, non_resource_url_matches, resource_matches, resource_name_matches,
                    verb_matches)

# Decisions kept: ~250 bytes each (a key tuple and the LRU's link), so at most ~4 MB. `up`'s
# components use a few hundred; a flood of users or namespaces evicts the least recently used.
MAX_DECISIONS = 16384
Result = tuple[Decision, str]
ALLOW_PRIVILEGED: Result = (Decision.ALLOW, "")
NO_OPINION: Result = (Decision.NO_OPINION, "")


class PrivilegedGroups:
    """Upstream: privilegedGroupAuthorizer — system:masters may do anything (no reason)."""

    def __init__(self, *groups: str) -> None:
        self.groups = frozenset(groups or (SYSTEM_PRIVILEGED_GROUP,))

    def authorize(self, a: Attributes) -> Result:
        return ALLOW_PRIVILEGED if not self.groups.isdisjoint(a.user.groups) else NO_OPINION


class _PerName(NamedTuple):
    """A request whose decision depends on the name: the rules matching it ignoring names
    (with their sources) and the resolution errors. The decisions by name are cached under
    the request's key plus the name."""
    matches: list[tuple[str, Rule]]
    errors: list[str]


class DecisionCache:
    """The RBAC decisions made since the policy last changed: a bounded LRU.

    Exact: a key holds everything a decision depends on — the user's name and groups (all
    RBAC matches subjects on), then (verb, namespace, group, resource, subresource) for a
    resource request, (verb, path) for any other, and for a decision that depends on the name,
    a second entry per name (the key plus the name). Keys of the three shapes differ in length,
    so they never collide. `current(generation)` drops every decision when the policy's
    generation moved (any Role, ClusterRole or binding written, deleted, or listed again:
    aggregated ClusterRoles are written by their controller like any other).
    """

    def __init__(self, size: int = MAX_DECISIONS) -> None:
        self.size = size
        self.generation = -1
        self.entries: OrderedDict[tuple[Any, ...], Result | _PerName] = OrderedDict()

    def current(self, generation: int) -> OrderedDict[tuple[Any, ...], Result | _PerName]:
        """The entries, emptied first if they belong to another generation of the policy."""
        if generation != self.generation:
            self.entries.clear()
            self.generation = generation
        return self.entries

    def put(self, key: tuple[Any, ...], value: Any) -> Any:
        entries = self.entries
        if len(entries) >= self.size:
            entries.popitem(last=False)          # the least recently used
        entries[key] = value
        return value


class RBACAuthorizer:
    def __init__(self, index: PolicyIndex, cache_size: int = MAX_DECISIONS) -> None:
        self.index = index
        self.resolver = DefaultRuleResolver(index)
        self.cache = DecisionCache(cache_size)

    def authorize(self, a: Attributes) -> Result:
        cache = self.cache
        generation = self.index.refresh()
        entries = cache.entries if generation == cache.generation else cache.current(generation)
        user = a.user
        if a.resource_request:
            key: tuple[Any, ...] = (user.name, user.groups, a.verb, a.namespace, a.api_group, a.resource,
                                    a.subresource)
        else:
            key = (user.name, user.groups, a.verb, a.path)
        hit = entries.get(key)
        if hit is None:
            hit = cache.put(key, self._decide(a))
        else:
            entries.move_to_end(key)
        if hit.__class__ is tuple:               # a Result, not a _PerName (a NamedTuple)
            return hit                           # type: ignore[return-value]
        return self._by_name(entries, key, hit, a.name)      # type: ignore[arg-type]

    def decide(self, user: UserInfo, info: RequestInfo, path: str, field_selector: str) -> Result | None:
        """authorize()'s cached decision for the request, straight from its RequestInfo (the
        attributes attributes_of would build); None when there is none yet (then authorize())."""
        cache = self.cache
        generation = self.index.refresh()
        entries = cache.entries if generation == cache.generation else cache.current(generation)
        if info.is_resource_request:
            key: tuple[Any, ...] = (user.name, user.groups, info.verb, info.namespace, info.group, info.resource,
                                    info.subresource)
        else:
            key = (user.name, user.groups, info.verb or "get", path)
        hit = entries.get(key)
        if hit is None:
            return None
        entries.move_to_end(key)
        if hit.__class__ is tuple:
            return hit                           # type: ignore[return-value]
        return self._by_name(entries, key, hit, request_name(info, field_selector))   # type: ignore[arg-type]

    def _by_name(self, entries: OrderedDict[tuple[Any, ...], Any], key: tuple[Any, ...], p: _PerName,
                 name: str) -> Result:
        named = (*key, name)
        result = entries.get(named)
        if result is None:
            return self.cache.put(named, _decide_by_name(p, name))
        entries.move_to_end(named)
        return result

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
        return _PerName(matches, errors)

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """Upstream: RBACAuthorizer.RulesFor (SelfSubjectRulesReview)."""
        return self.resolver.rules_for(user, namespace)


def _decide_by_name(p: _PerName, name: str) -> Result:
    for source, rule in p.matches:
        if resource_name_matches(rule, name):
            return Decision.ALLOW, "RBAC: allowed by " + source
    # the walk stopped at a rule without names only if one matched, which allowed
    return Decision.NO_OPINION, ("RBAC: " + aggregate(p.errors)) if p.errors else ""
