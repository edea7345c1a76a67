"""Whether one set of rules covers another, and escalation checks.

Upstream: Covers, BreakdownRule, ruleCovers and their helpers
(k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go), CompactRules
(pkg/registry/rbac/validation/policy_compact.go), ConfirmNoEscalation
(pkg/registry/rbac/validation/rule.go) and EscalationAllowed (pkg/registry/rbac/escalation_check.go).
"""
from __future__ import annotations

from ....api.errors import go_quote, go_quote_list
from ...authentication.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from .resolver import DefaultRuleResolver, aggregate
from .rules import ALL, Rule, compact_string


def breakdown_rule(r: Rule) -> list[Rule]:
    """Upstream: BreakdownRule — one verb, one resource (or URL) and at most one name each."""
    out = []
    for g in r.api_groups:
        for res in r.resources:
            for v in r.verbs:
                if r.resource_names:
                    out += [Rule((v,), (g,), (res,), (n,)) for n in r.resource_names]
                else:
                    out.append(Rule((v,), (g,), (res,)))
    for u in r.non_resource_urls:
        out += [Rule((v,), non_resource_urls=(u,)) for v in r.verbs]
    return out


def _resource_covers_all(owner: tuple[str, ...], covers: tuple[str, ...]) -> bool:
    if ALL in owner or set(covers) <= set(owner):
        return True
    for path in covers:
        if path in owner:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """Upstream: ruleCovers (sub has at most one verb, resource and name)."""
    if not (ALL in owner.verbs or set(sub.verbs) <= set(owner.verbs)):
        return False
    if not (ALL in owner.api_groups or set(sub.api_groups) <= set(owner.api_groups)):
        return False
    if not _resource_covers_all(owner.resources, sub.resources):
        return False
    if not all(any(_url_covers(o, u) for o in owner.non_resource_urls) for u in sub.non_resource_urls):
        return False
    if not sub.resource_names:
        return not owner.resource_names
    return not owner.resource_names or set(sub.resource_names) <= set(owner.resource_names)


def covers(owner_rules: list[Rule] | tuple[Rule, ...], servant_rules: list[Rule] | tuple[Rule, ...]
           ) -> tuple[bool, list[Rule]]:
    """Upstream: Covers — whether the owner's rules cover the servant's, and the broken-down
    servant rules they do not."""
    uncovered = [sub for s in servant_rules for sub in breakdown_rule(s)
                 if not any(rule_covers(o, sub) for o in owner_rules)]
    return not uncovered, uncovered


def compact_rules(rules: list[Rule]) -> list[Rule]:
    """Upstream: CompactRules — simple rules (one group, one resource, at most one name) that
    differ only in verbs become one."""
    compacted: list[Rule] = []
    simple: dict[tuple[str, str, tuple[str, ...]], Rule] = {}
    for r in rules:
        if len(r.resource_names) > 1 or r.non_resource_urls or len(r.api_groups) != 1 or len(r.resources) != 1:
            compacted.append(r)
            continue
        key = (r.api_groups[0], r.resources[0], r.resource_names)
        have = simple.get(key)
        simple[key] = r if have is None else have._replace(verbs=have.verbs + r.verbs)
    return compacted + list(simple.values())


def escalation_allowed(user: UserInfo) -> bool:
    """Upstream: EscalationAllowed — the super-user group may grant anything."""
    return SYSTEM_PRIVILEGED_GROUP in user.groups


def confirm_no_escalation(resolver: DefaultRuleResolver, user: UserInfo, namespace: str,
                          rules: list[Rule] | tuple[Rule, ...]) -> str | None:
    """Upstream: ConfirmNoEscalation — None if the user holds every permission in rules,
    otherwise upstream's message naming what is missing."""
    owner_rules, errs = resolver.rules_for(user, namespace)
    ok, missing = covers(owner_rules, rules)
    if ok:
        return None
    descriptions = sorted({compact_string(r) for r in compact_rules(missing)})
    msg = (f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
           "permissions not currently held:\n" + "\n".join(descriptions))
    if errs:      # %v of the one-element []error holding RulesFor's aggregate
        msg += "; resolution errors: [" + aggregate(errs) + "]"
    return msg
