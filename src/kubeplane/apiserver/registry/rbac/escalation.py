"""Escalation prevention: a Role or ClusterRole may only be written by someone who holds
every permission it grants (or may `escalate` it), a binding only by someone who holds the
referenced role's permissions in the binding's namespace (or may `bind` it); system:masters
may do anything.

Upstream: the policybased storages of pkg/registry/rbac/{role,clusterrole,rolebinding,
clusterrolebinding}/policybased/storage.go, EscalationAllowed, RoleEscalationAuthorized,
BindingAuthorized and IsOnlyMutatingGCFields (pkg/registry/rbac/escalation_check.go,
helpers.go), ConfirmNoEscalation (validation/rule.go). Upstream checks in the storage, after
mutating admission; here the same check is the last validating step of the chain (added by
the authorization set-up when the RBAC authorizer runs), with upstream's 403 messages.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....api import errors
from ...admission.interface import Attributes, Operation, Plugin, status_forbidden
from ...authorization.authorizer import Attributes as AuthzAttributes, Decision
from ...authorization.rbac.rules import Rule, rules_of
from ...authorization.rbac.validation import confirm_no_escalation, escalation_allowed

if TYPE_CHECKING:
    from ...authorization.rbac import RBACAuthorizer
    from ...server import APIServer

G = "rbac.authorization.k8s.io"
FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))
ROLE_KINDS = {"ClusterRole": "clusterroles", "Role": "roles"}


def only_mutating_gc_fields(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Upstream: IsOnlyMutatingGCFields — new differs from old at most in ownerReferences,
    finalizers, selfLink and managedFields."""
    meta, old_meta = dict(new.get("metadata") or {}), old.get("metadata") or {}
    for k in ("ownerReferences", "finalizers", "selfLink", "managedFields"):
        meta.pop(k, None)
        if k in old_meta:
            meta[k] = old_meta[k]
    return {**new, "metadata": meta} == old


class EscalationCheck(Plugin):
    NAME = "kubeplane:rbac-escalation"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    RESOURCES = frozenset({(G, "roles"), (G, "clusterroles"), (G, "rolebindings"), (G, "clusterrolebindings")})
    SUBRESOURCES = frozenset({""})
    VALIDATING = True

    def __init__(self, api: APIServer, rbac: RBACAuthorizer) -> None:
        super().__init__(api)
        self.rbac = rbac

    async def validate(self, a: Attributes) -> None:
        obj = a.obj
        if not isinstance(obj, dict) or escalation_allowed(a.user):
            return
        if a.operation is Operation.UPDATE and isinstance(a.old_obj, dict) and only_mutating_gc_fields(obj, a.old_obj):
            return
        name = (obj.get("metadata") or {}).get("name") or a.name
        if a.resource in ("roles", "clusterroles"):
            self.check_role(a, obj, name)
        else:
            self.check_binding(a, obj, name)

    def allowed(self, a: Attributes, verb: str, resource: str, name: str, group: str) -> bool:
        z = AuthzAttributes(a.user, verb, True, a.namespace, group, "*", resource, "", name)
        return self.api.authorizer.authorize(z)[0] is Decision.ALLOW

    def check_role(self, a: Attributes, obj: dict[str, Any], name: str) -> None:
        """Upstream: role/clusterrole policybased Storage.Create / Update"""
        if self.allowed(a, "escalate", a.resource, a.name or name, a.group):     # RoleEscalationAuthorized
            return
        msg = confirm_no_escalation(self.rbac.resolver, a.user, a.namespace, rules_of(obj))
        if msg is not None:
            raise status_forbidden(a.group, a.resource, name, msg)
        if a.resource == "clusterroles" and obj.get("aggregationRule") is not None:
            if confirm_no_escalation(self.rbac.resolver, a.user, a.namespace, FULL_AUTHORITY) is not None:
                raise status_forbidden(a.group, a.resource, name,
                                       "must have cluster-admin privileges to use the aggregationRule")

    def check_binding(self, a: Attributes, obj: dict[str, Any], name: str) -> None:
        """Upstream: rolebinding/clusterrolebinding policybased Storage.Create / Update"""
        ref = obj.get("roleRef") or {}
        self.rbac.index.refresh()
        resource = ROLE_KINDS.get(ref.get("kind") or "")
        if resource is not None and self.allowed(a, "bind", resource, ref.get("name") or "",
                                                 ref.get("apiGroup") or ""):      # BindingAuthorized
            return
        rules, err = self.rbac.resolver.get_role_reference_rules(ref, a.namespace)
        if err is not None:
            kind = "role" if ref.get("kind") == "Role" else "clusterrole"
            if err.endswith("not found"):
                raise errors.NotFound(G, kind, ref.get("name") or "")
            raise errors.BadRequest(err)
        msg = confirm_no_escalation(self.rbac.resolver, a.user, a.namespace, rules)
        if msg is not None:
            raise status_forbidden(a.group, a.resource, name, msg)
