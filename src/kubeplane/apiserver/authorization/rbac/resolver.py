"""Which rules apply to a user in a namespace, and where they come from.

Upstream: DefaultRuleResolver, VisitRulesFor, RulesFor, GetRoleReferenceRules, appliesTo,
describeSubject and the binding describers (pkg/registry/rbac/validation/rule.go). The
bindings are found through the index's subjects (not a scan of every binding), then matched
with upstream's appliesTo to name the first subject that applies.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from ....api.errors import go_quote
from ....serviceaccount.claims import make_username
from ...authentication.user import UserInfo
from .index import PolicyIndex
from .rules import Rule

Obj = dict[str, Any]
# visitor(source, rule, err) -> keep going?
Visitor = Callable[[str, Rule | None, str | None], bool]


def applies_to_user(user: UserInfo, subject: Obj, namespace: str) -> bool:
    """Upstream: appliesToUser"""
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or namespace
        return bool(ns) and user.name == make_username(ns, name)
    return False


def applies_to(user: UserInfo, subjects: list[Obj], namespace: str) -> int:
    """Upstream: appliesTo — the index of the first subject that applies, or -1."""
    for i, s in enumerate(subjects):
        if isinstance(s, dict) and applies_to_user(user, s, namespace):
            return i
    return -1


def _q(v: Any) -> str:
    """Go's %q of a string field (a malformed stored object's non-string shown as text)."""
    return go_quote(v if isinstance(v, str) else str(v))


def describe_subject(s: Obj, binding_namespace: str) -> str:
    """Upstream: describeSubject (Go's %q: printable non-ASCII stays as it is)"""
    kind, name = s.get("kind") or "", s.get("name") or ""
    if kind == "ServiceAccount":
        sa = f"{name}/{s.get('namespace') or binding_namespace}"
        return f"{kind} {_q(sa)}"
    return f"{kind} {_q(name)}"


def describe_binding(b: Obj, subject: Obj) -> str:
    """Upstream: clusterRoleBindingDescriber / roleBindingDescriber .String()"""
    meta, ref = b.get("metadata") or {}, b.get("roleRef") or {}
    ns = meta.get("namespace") or ""
    if ns:
        head = "RoleBinding " + _q(f"{meta.get('name', '')}/{ns}")
    else:
        head = f"ClusterRoleBinding {_q(meta.get('name', ''))}"
    return (f"{head} of {ref.get('kind', '')} {_q(ref.get('name', ''))} to "
            f"{describe_subject(subject, ns)}")


# What a missing role is called in a resolution error: the authorizer's resolver reads listers
# (their NotFound names the singular resource: `role.rbac.authorization.k8s.io "x" not found`),
# the registry's (escalation checks) reads the stores (`roles.rbac.authorization.k8s.io ...`).
# Upstream: the listers' errors.NewNotFound(rbac.Resource("role"), name) and Store.Get's.
LISTER_RESOURCES = {"Role": "role", "ClusterRole": "clusterrole"}
STORE_RESOURCES = {"Role": "roles", "ClusterRole": "clusterroles"}


class DefaultRuleResolver:
    def __init__(self, index: PolicyIndex, role_resources: dict[str, str] = LISTER_RESOURCES) -> None:
        self.index = index
        self.role_resources = role_resources

    def get_role_reference_rules(self, role_ref: Obj, namespace: str) -> tuple[tuple[Rule, ...], str | None]:
        """Upstream: GetRoleReferenceRules — the rules, or the getter's error."""
        kind, name = role_ref.get("kind"), role_ref.get("name") or ""
        if kind == "Role" or kind == "ClusterRole":
            rules = self.index.derived().rules(kind, namespace if kind == "Role" else "", name)
            if rules is None:
                return (), f'{self.role_resources[kind]}.rbac.authorization.k8s.io {go_quote(name)} not found'
            return rules, None
        return (), f"unsupported role reference kind: {go_quote(kind if isinstance(kind, str) else '')}"

    def bindings(self, user: UserInfo, namespace: str) -> Iterator[tuple[Obj, str]]:
        """Every binding that applies (cluster ones first), with its binding namespace."""
        d = self.index.derived()
        for b in d.bindings_for(d.cluster, user.name, user.groups):
            yield b, ""
        if namespace and (by_principal := d.namespaced.get(namespace)):
            for b in d.bindings_for(by_principal, user.name, user.groups):
                yield b, namespace

    def visit_rules_for(self, user: UserInfo, namespace: str, visitor: Visitor) -> None:
        """Upstream: VisitRulesFor"""
        self.index.refresh()
        for b, ns in self.bindings(user, namespace):
            subjects = b.get("subjects") or []
            i = applies_to(user, subjects, ns)
            if i < 0:
                continue
            ref = b.get("roleRef")
            rules, err = self.get_role_reference_rules(ref if isinstance(ref, dict) else {}, ns)
            if err is not None:
                if not visitor("", None, err):
                    return
                continue
            source = describe_binding(b, subjects[i])
            for r in rules:
                if not visitor(source, r, None):
                    return

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """Upstream: RulesFor — every rule that applies, and the errors met finding them."""
        rules: list[Rule] = []
        errs: list[str] = []

        def visit(source: str, rule: Rule | None, err: str | None) -> bool:
            if rule is not None:
                rules.append(rule)
            if err is not None:
                errs.append(err)
            return True
        self.visit_rules_for(user, namespace, visit)
        return rules, errs


def aggregate(errs: list[str]) -> str:
    """Upstream: utilerrors.NewAggregate(errs).Error() — one error as it is, more in brackets,
    each message once (a binding to a missing role met through two subjects says so once)."""
    if len(errs) == 1:
        return errs[0]
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
