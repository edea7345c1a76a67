"""The rbac/bootstrap-roles post-start hook: create the bootstrap policy that is missing and
reconcile what exists (add missing rules, aggregation selectors and subjects; keep labels and
annotations a user added), except objects annotated `rbac.authorization.kubernetes.io/autoupdate:
"false"`. Then the aggregated ClusterRoles (admin, edit, view) get their rules at once (the
clusterrole-aggregation controller keeps them current afterwards).

Upstream: PolicyData.EnsureRBACPolicy (pkg/registry/rbac/rest/storage_rbac.go),
computeReconciledRole and computeReconciledRoleBinding (pkg/registry/rbac/reconciliation).
"""
from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from ...authentication.user import APISERVER
from . import bootstrappolicy as policy
from .rules import rules_of
from .validation import covers

if TYPE_CHECKING:
    from ...server import APIServer

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PLURALS = {"ClusterRole": "clusterroles", "Role": "roles", "ClusterRoleBinding": "clusterrolebindings",
           "RoleBinding": "rolebindings"}


def compute_reconciled_role(existing: Obj, expected: Obj) -> Obj | None:
    """Upstream: computeReconciledRole (union: no permission removed) — the object to write,
    or None when nothing changes or the role is protected."""
    if (existing["metadata"].get("annotations") or {}).get(policy.AUTOUPDATE) == "false":
        return None
    role = copy.deepcopy(existing)
    meta = role["metadata"]
    meta["annotations"] = {**(expected["metadata"].get("annotations") or {}), **(meta.get("annotations") or {})}
    meta["labels"] = {**(expected["metadata"].get("labels") or {}), **(meta.get("labels") or {})}
    _, missing = covers(rules_of(existing), rules_of(expected))
    if missing:
        role["rules"] = list(role.get("rules") or []) + [r.to_dict() for r in missing]
    want, have = expected.get("aggregationRule"), existing.get("aggregationRule")
    if want is None and have is not None:
        del role["aggregationRule"]
    elif want is not None:
        selectors = list((have or {}).get("clusterRoleSelectors") or [])
        extra = [s for s in want.get("clusterRoleSelectors") or [] if s not in selectors]
        if extra or have is None:
            role["aggregationRule"] = {"clusterRoleSelectors": selectors + extra}
    return None if role == existing else role


def compute_reconciled_binding(existing: Obj, expected: Obj) -> tuple[Obj | None, bool]:
    """Upstream: computeReconciledRoleBinding — (the object to write, whether the roleRef
    changed so it must be deleted and created again)."""
    if (existing["metadata"].get("annotations") or {}).get(policy.AUTOUPDATE) == "false":
        return None, False
    if existing.get("roleRef") != expected.get("roleRef"):
        return copy.deepcopy(expected), True
    b = copy.deepcopy(existing)
    meta = b["metadata"]
    meta["annotations"] = {**(expected["metadata"].get("annotations") or {}), **(meta.get("annotations") or {})}
    meta["labels"] = {**(expected["metadata"].get("labels") or {}), **(meta.get("labels") or {})}
    subjects = list(b.get("subjects") or [])
    missing = [s for s in expected.get("subjects") or [] if s not in subjects]
    if missing:
        b["subjects"] = subjects + missing
    return (None if b == existing else b), False


def bootstrap_objects() -> list[Obj]:
    """Every object of the policy, in upstream's order of creation."""
    return [*policy.cluster_roles(), *policy.cluster_role_bindings(), *policy.controller_roles(),
            *policy.controller_role_bindings(), *policy.namespace_roles(), *policy.namespace_role_bindings()]


async def ensure_rbac_policy(api: APIServer) -> None:
    """Upstream: EnsureRBACPolicy"""
    await ensure_objects(api, bootstrap_objects())
    await aggregate_cluster_roles(api)


async def ensure_objects(api: APIServer, objs: list[Obj]) -> None:
    """Create or reconcile each object (also what a deployment tool adds the same way:
    kubeadm's cluster-admins binding)."""
    from ....api.resources import lookup
    from ...registry import store
    from ...registry.deletion import DeleteOptions, delete

    opts = store.WriteOptions(user=APISERVER, user_agent="kube-apiserver")
    for obj in objs:
        ri = lookup("rbac.authorization.k8s.io", "v1", PLURALS[obj["kind"]])
        assert ri is not None
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        kv = await api.storage.get(ri.key(ns, meta["name"]))
        try:
            if kv is None:
                await store.create(api, opts, ri, ns, copy.deepcopy(obj), [])
                continue
            if obj["kind"] in ("ClusterRole", "Role"):
                new, recreate = compute_reconciled_role(kv.obj, obj), False
            else:
                new, recreate = compute_reconciled_binding(kv.obj, obj)
            if new is None:
                continue
            if recreate:
                await delete(api, APISERVER, ri, kv, DeleteOptions())
                await store.create(api, opts, ri, ns, new, [])
            else:
                await store.update(api, opts, ri, new, kv.obj, kv.mod_revision, "", [])
        except Exception as e:           # upstream logs and goes on (the hook retries later)
            log.warning("unable to reconcile %s %s: %s", obj["kind"], meta["name"], e)


async def remove_cluster_role_binding(api: APIServer, name: str) -> None:
    """Delete a ClusterRoleBinding a deployment tool no longer wants (nothing if absent)."""
    from ....api.resources import lookup
    from ...registry.deletion import DeleteOptions, delete
    ri = lookup("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
    assert ri is not None
    kv = await api.storage.get(ri.key("", name))
    if kv is not None:
        await delete(api, APISERVER, ri, kv, DeleteOptions())


async def aggregate_cluster_roles(api: APIServer) -> None:
    """Fill the aggregated ClusterRoles once (view before edit before admin: until nothing moves)."""
    from ....api.resources import lookup
    from ...registry import store
    from ....api.rbac_aggregation import aggregated_rules, rules_equal
    ri = lookup("rbac.authorization.k8s.io", "v1", "clusterroles")
    assert ri is not None
    opts = store.WriteOptions(user=APISERVER, user_agent="kube-apiserver")
    for _ in range(8):
        kvs, _ = await api.storage.list(ri.prefix)
        roles = [kv.obj for kv in kvs]
        changed = False
        for kv in kvs:
            rules = aggregated_rules(kv.obj, roles)
            if rules is None or rules_equal(rules, kv.obj.get("rules") or ()):
                continue
            await store.update(api, opts, ri, {**copy.deepcopy(kv.obj), "rules": rules}, kv.obj, kv.mod_revision,
                               "", [])
            changed = True
        if not changed:
            return
