"""Escalation prevention: a Role or ClusterRole may only be written by someone who holds
every permission it grants (or may `escalate` it), a binding only by someone who holds the
referenced role's permissions in the binding's namespace (or may `bind` it); system:masters
may do anything.

Upstream: the policybased storages of pkg/registry/rbac/{role,clusterrole,rolebinding,
clusterrolebinding}/policybased/storage.go, EscalationAllowed, RoleEscalationAuthorized,
BindingAuthorized (pkg/registry/rbac/escalation_check.go), IsOnlyMutatingGCFields
(helpers.go) and ConfirmNoEscalation (validation/rule.go). They wrap each kind's Store, so the
check comes after mutating admission and before validation and validating admission (a
request both invalid and escalating is a 403, not a 422); an update is checked inside its
updated-object function. Here they are the four kinds' StorageWrapper (registry/wrapper.py),
which the generic store calls at the same two points.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....api import errors
from ...admission.interface import status_forbidden
from ...authentication.user import UserInfo
from ...authorization.authorizer import Attributes, Decision
from ...authorization.rbac.resolver import STORE_RESOURCES, DefaultRuleResolver
from ...authorization.rbac.rules import Rule, rules_of
from ...authorization.rbac.validation import confirm_no_escalation, escalation_allowed
from ..wrapper import StorageWrapper

if TYPE_CHECKING:
    from ....api.resources import ResourceInfo
    from ...server import APIServer
    from ..store import WriteOptions

Obj = dict[str, Any]
FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))
ROLE_RESOURCES = {"ClusterRole": "clusterroles", "Role": "roles"}
GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")


def _semantic(v: Any) -> Any:
    """A JSON value as Go's typed object compares it (Semantic.DeepEqual): an absent field,
    null, "" and an empty list or map are the same zero value."""
    if isinstance(v, dict):
        return {k: x for k, x in ((k, _semantic(x)) for k, x in v.items()) if x not in (None, "", [], {})}
    if isinstance(v, list):
        return [_semantic(x) for x in v]
    return v


def only_mutating_gc_fields(new: Obj, old: Obj) -> bool:
    """Upstream: IsOnlyMutatingGCFields — new differs from old at most in ownerReferences,
    finalizers, selfLink and managedFields (what the garbage collector writes)."""
    meta, old_meta = dict(new.get("metadata") or {}), old.get("metadata") or {}
    for k in GC_FIELDS:
        meta.pop(k, None)
        if k in old_meta:
            meta[k] = old_meta[k]
    return _semantic({**new, "metadata": meta}) == _semantic(old)


def _allowed(api: APIServer, user: UserInfo, verb: str, namespace: str, group: str, version: str,
             resource: str, name: str) -> bool:
    z = Attributes(user, verb, True, namespace, group, version, resource, "", name)
    return api.authorizer.authorize(z)[0] is Decision.ALLOW


def role_escalation_authorized(api: APIServer, user: UserInfo, ri: ResourceInfo, ns: str, name: str) -> bool:
    """Upstream: RoleEscalationAuthorized — the `escalate` verb on the request's resource, by
    the request's name (none on a create: the URL names no object, so a rule limited to
    resourceNames lets its holder escalate existing roles only)."""
    return _allowed(api, user, "escalate", ns, ri.group, "*", ri.plural, name)


def binding_authorized(api: APIServer, user: UserInfo, ref: Obj, ns: str) -> bool:
    """Upstream: BindingAuthorized — the `bind` verb on the referenced role, in the binding's
    namespace ("" for a ClusterRoleBinding)."""
    kind = ref.get("kind")
    resource = ROLE_RESOURCES.get(kind) if isinstance(kind, str) else None
    if resource is None:
        return False
    return _allowed(api, user, "bind", ns, ref.get("apiGroup") or "", "", resource, ref.get("name") or "")


async def rule_resolver(api: APIServer) -> DefaultRuleResolver:
    """Upstream: the registry's rule resolver (NewDefaultRuleResolver over the four stores,
    pkg/registry/rbac/rest/storage_rbac.go), whichever authorizers run: here over the server's
    RBAC index, listed on first use when no RBAC authorizer started it."""
    from ...authorization.modes import rbac_index
    index = rbac_index(api)
    if not index.started:
        await index.start()
    return DefaultRuleResolver(index, STORE_RESOURCES)


def _name(obj: Obj) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else ""
    return name if isinstance(name, str) else ""


def _has_aggregation_rule(role: Obj | None) -> bool:
    """Upstream: hasAggregationRule — an aggregationRule with at least one selector."""
    rule = role.get("aggregationRule") if role is not None else None
    return isinstance(rule, dict) and bool(rule.get("clusterRoleSelectors"))


class RolePolicy(StorageWrapper):
    """Roles and ClusterRoles. Upstream: role and clusterrole policybased Storage."""

    async def before_create(self, api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                            obj: Obj) -> None:
        if escalation_allowed(opts.user) or role_escalation_authorized(api, opts.user, ri, ns, name):
            return
        await self.confirm(api, opts.user, ri, ns, obj, None)

    async def before_update(self, api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                            new: Obj, old: Obj) -> None:
        if escalation_allowed(opts.user) or role_escalation_authorized(api, opts.user, ri, ns, name):
            return
        if only_mutating_gc_fields(new, old):
            return
        await self.confirm(api, opts.user, ri, ns, new, old)

    @staticmethod
    async def confirm(api: APIServer, user: UserInfo, ri: ResourceInfo, ns: str, obj: Obj, old: Obj | None) -> None:
        resolver = await rule_resolver(api)
        msg = confirm_no_escalation(resolver, user, ns, rules_of(obj))
        if msg is not None:
            raise status_forbidden(ri.group, ri.plural, _name(obj), msg)
        # An aggregationRule can gather anything (and, changed, stop a tightening): it needs * on *.*
        if ri.plural == "clusterroles" and (_has_aggregation_rule(obj) or _has_aggregation_rule(old)):
            if confirm_no_escalation(resolver, user, ns, FULL_AUTHORITY) is not None:
                raise status_forbidden(ri.group, ri.plural, _name(obj),
                                       "must have cluster-admin privileges to use the aggregationRule")


class BindingPolicy(StorageWrapper):
    """RoleBindings and ClusterRoleBindings. Upstream: rolebinding and clusterrolebinding
    policybased Storage."""

    async def before_create(self, api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                            obj: Obj) -> None:
        if escalation_allowed(opts.user):
            return
        await self.confirm(api, opts.user, ri, ns, obj)

    async def before_update(self, api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                            new: Obj, old: Obj) -> None:
        if escalation_allowed(opts.user) or only_mutating_gc_fields(new, old):
            return
        await self.confirm(api, opts.user, ri, ns, new)

    @staticmethod
    async def confirm(api: APIServer, user: UserInfo, ri: ResourceInfo, ns: str, obj: Obj) -> None:
        ref = obj.get("roleRef")
        ref = ref if isinstance(ref, dict) else {}
        if binding_authorized(api, user, ref, ns):
            return
        resolver = await rule_resolver(api)
        rules, err = resolver.get_role_reference_rules(ref, ns)
        if err is not None:
            kind = ref.get("kind")
            if isinstance(kind, str) and kind in STORE_RESOURCES:      # the role getter's NotFound
                raise errors.NotFound(ri.group, STORE_RESOURCES[kind], ref.get("name") or "")
            # Upstream returns this plain error (not an API status): a 500 with no reason. A
            # client's bad input never gets a 500 here: the same message as a 400.
            raise errors.BadRequest(err)
        msg = confirm_no_escalation(resolver, user, ns, rules)
        if msg is not None:
            raise status_forbidden(ri.group, ri.plural, _name(obj), msg)


ROLES = RolePolicy()
BINDINGS = BindingPolicy()
