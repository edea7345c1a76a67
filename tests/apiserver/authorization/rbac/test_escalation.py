"""Escalation prevention with upstream's messages (pkg/registry/rbac/*/policybased): a role
grants only what its writer holds, a binding binds only a role whose permissions its writer
holds, unless the writer may `escalate` / `bind`; system:masters may do anything."""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.server import APIServer

from .helpers import ADMIN, JANE, call

RBAC = "/apis/rbac.authorization.k8s.io/v1"
G = "rbac.authorization.k8s.io"


def role(name: str, *rules: dict[str, Any], ns: str = "default") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{G}/v1", "kind": "Role" if ns else "ClusterRole", "metadata": meta, "rules": list(rules)}


def binding(name: str, kind: str, ref: str, user: str = "bob", ns: str = "default") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{G}/v1", "kind": "RoleBinding" if ns else "ClusterRoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": G, "kind": kind, "name": ref},
            "subjects": [{"kind": "User", "apiGroup": G, "name": user}]}


async def make_jane_admin_of_default(api: APIServer) -> None:
    assert (await call(api, ADMIN, "POST", f"{RBAC}/namespaces/default/rolebindings",
                       binding("jane-admin", "ClusterRole", "admin", "jane")))[0] == 201


NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}
PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}


async def test_a_role_grants_only_what_its_writer_holds(api: APIServer) -> None:
    await make_jane_admin_of_default(api)
    assert (await call(api, JANE, "POST", f"{RBAC}/namespaces/default/roles", role("pods", PODS)))[0] == 201
    status, body = await call(api, JANE, "POST", f"{RBAC}/namespaces/default/roles", role("nodes", NODES, PODS))
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'roles.rbac.authorization.k8s.io "nodes" is forbidden: user "jane" (groups=["system:authenticated"]) is '
        'attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["nodes"], '
        'Verbs:["get"]}')
    assert body["details"] == {"name": "nodes", "group": G, "kind": "roles"}
    # nor may an update add it
    r = (await call(api, JANE, "GET", f"{RBAC}/namespaces/default/roles/pods"))[1]
    r["rules"].append(NODES)
    assert (await call(api, JANE, "PUT", f"{RBAC}/namespaces/default/roles/pods", r))[0] == 403
    # the escalate verb lifts the check
    escalate = role("escalate", {"apiGroups": [G], "resources": ["roles"], "verbs": ["escalate"]}, ns="")
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterroles", escalate))[0] == 201
    assert (await call(api, ADMIN, "POST", f"{RBAC}/namespaces/default/rolebindings",
                       binding("jane-escalate", "ClusterRole", "escalate", "jane")))[0] == 201
    assert (await call(api, JANE, "POST", f"{RBAC}/namespaces/default/roles", role("nodes", NODES)))[0] == 201


async def test_a_binding_needs_the_roles_permissions_or_bind(api: APIServer) -> None:
    await make_jane_admin_of_default(api)
    assert (await call(api, JANE, "POST", f"{RBAC}/namespaces/default/rolebindings",
                       binding("bob-view", "ClusterRole", "view")))[0] == 201
    status, body = await call(api, JANE, "POST", f"{RBAC}/namespaces/default/rolebindings",
                              binding("bob-root", "ClusterRole", "cluster-admin"))
    assert status == 403
    assert body["message"].startswith(
        'rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "jane" (groups=["system:authenticated"]) '
        'is attempting to grant RBAC permissions not currently held:\n')
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in body["message"]
    status, body = await call(api, JANE, "POST", f"{RBAC}/namespaces/default/rolebindings",
                              binding("bob-x", "Role", "missing"))
    assert (status, body["message"]) == (404, 'role.rbac.authorization.k8s.io "missing" not found')
    bind = role("bind-root", {"apiGroups": [G], "resources": ["clusterroles"], "verbs": ["bind"],
                              "resourceNames": ["cluster-admin"]}, ns="")
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterroles", bind))[0] == 201
    assert (await call(api, ADMIN, "POST", f"{RBAC}/namespaces/default/rolebindings",
                       binding("jane-bind", "ClusterRole", "bind-root", "jane")))[0] == 201
    assert (await call(api, JANE, "POST", f"{RBAC}/namespaces/default/rolebindings",
                       binding("bob-root", "ClusterRole", "cluster-admin")))[0] == 201


async def test_aggregation_rules_need_cluster_admin(api: APIServer) -> None:
    writer = role("cr-writer", {"apiGroups": [G], "resources": ["clusterroles"], "verbs": ["create"]}, ns="")
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterroles", writer))[0] == 201
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterrolebindings",
                       binding("jane-cr", "ClusterRole", "cr-writer", "jane", ns="")))[0] == 201
    agg = {**role("agg", ns=""), "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}
    status, body = await call(api, JANE, "POST", f"{RBAC}/clusterroles", agg)
    assert (status, body["message"]) == (403, 'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have '
                                              'cluster-admin privileges to use the aggregationRule')
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterroles", agg))[0] == 201
