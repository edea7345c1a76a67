"""Escalation prevention with upstream's messages (pkg/registry/rbac/*/policybased): a role
grants only what its writer holds, a binding binds only a role whose permissions its writer
holds, unless the writer may `escalate` / `bind`; system:masters may do anything. The check
wraps the store, as upstream's storages do: before validation and validating admission (an
invalid escalating write is a 403), inside an update's updated-object function."""
from __future__ import annotations

import json
from typing import Any

from kubeplane.apiserver.request import Request
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
    # the registry's role getter answers (the store's NotFound, plural), not the authorizer's lister
    assert (status, body["message"]) == (404, 'roles.rbac.authorization.k8s.io "missing" not found')
    assert body["details"] == {"name": "missing", "group": G, "kind": "roles"}
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


RB = f"{RBAC}/namespaces/default/rolebindings"
ROLES = f"{RBAC}/namespaces/default/roles"
JANE_NOT_HOLDING = ('user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
                    'currently held:\n')


async def grant_jane(api: APIServer, name: str, *rules: dict[str, Any], ns: str = "default") -> None:
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterroles", role(name, *rules, ns="")))[0] == 201
    path = f"{RBAC}/namespaces/{ns}/rolebindings" if ns else f"{RBAC}/clusterrolebindings"
    assert (await call(api, ADMIN, "POST", path, binding(f"jane-{name}", "ClusterRole", name, "jane", ns=ns)))[0] == 201


async def test_an_invalid_escalating_write_is_forbidden_before_it_is_invalid(api: APIServer) -> None:
    await make_jane_admin_of_default(api)
    bad = role("nodes", NODES)
    bad["metadata"]["labels"] = {"not a key!": "x"}
    status, body = await call(api, JANE, "POST", ROLES, bad)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == ('roles.rbac.authorization.k8s.io "nodes" is forbidden: ' + JANE_NOT_HOLDING +
                               '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}')
    # invalid but granting nothing jane lacks: validation answers
    bad = role("pods", PODS)
    bad["metadata"]["labels"] = {"not a key!": "x"}
    status, body = await call(api, JANE, "POST", ROLES, bad)
    assert (status, body["reason"]) == (422, "Invalid")
    # the same for a binding, and on update
    bad = binding("bob-root", "ClusterRole", "cluster-admin")
    bad["subjects"][0]["kind"] = "Nobody"
    assert (await call(api, JANE, "POST", RB, bad))[0] == 403
    assert (await call(api, JANE, "POST", ROLES, role("pods", PODS)))[0] == 201
    r = (await call(api, JANE, "GET", f"{ROLES}/pods"))[1]
    r["rules"].append(NODES)
    r["metadata"]["labels"] = {"not a key!": "x"}
    status, body = await call(api, JANE, "PUT", f"{ROLES}/pods", r)
    assert (status, body["message"]) == (403, 'roles.rbac.authorization.k8s.io "pods" is forbidden: ' + JANE_NOT_HOLDING +
                                         '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}')


async def test_updates_and_patches_are_checked_except_garbage_collector_fields(api: APIServer) -> None:
    await make_jane_admin_of_default(api)
    assert (await call(api, ADMIN, "POST", ROLES, role("nodes", NODES)))[0] == 201
    r = (await call(api, JANE, "GET", f"{ROLES}/nodes"))[1]
    # ownerReferences and finalizers (what the garbage collector writes) need nothing held
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "7b6c3e0a-0000-4000-8000-000000000001"}
    r["metadata"]["ownerReferences"] = [owner]
    r["metadata"]["finalizers"] = ["example.com/keep"]
    status, r = await call(api, JANE, "PUT", f"{ROLES}/nodes", r)
    assert status == 200 and r["metadata"]["finalizers"] == ["example.com/keep"]
    # anything else re-checks every rule the role grants
    r["metadata"]["labels"] = {"a": "b"}
    status, body = await call(api, JANE, "PUT", f"{ROLES}/nodes", r)
    assert (status, body["reason"]) == (403, "Forbidden")
    for patch_type, patch in (("merge", {"metadata": {"labels": {"a": "b"}}}),
                              ("json", [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])):
        raw = json.dumps(patch).encode()
        req = Request.build("PATCH", f"{ROLES}/nodes", "", {"content-type": f"application/{patch_type}-patch+json"}, raw)
        req.user = JANE
        assert (await api.route_trusted(req)).status == 403
    # a binding: same rule
    assert (await call(api, ADMIN, "POST", RB, binding("bob-root", "ClusterRole", "cluster-admin")))[0] == 201
    b = (await call(api, JANE, "GET", f"{RB}/bob-root"))[1]
    b["metadata"]["finalizers"] = ["example.com/keep"]
    status, b = await call(api, JANE, "PUT", f"{RB}/bob-root", b)
    assert status == 200
    b["subjects"].append({"kind": "User", "apiGroup": G, "name": "eve"})
    status, body = await call(api, JANE, "PUT", f"{RB}/bob-root", b)
    assert status == 403 and body["message"].startswith(
        'rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: ' + JANE_NOT_HOLDING)


async def test_a_put_creates_and_is_checked_as_a_create(api: APIServer) -> None:
    """The RBAC strategies allow create on update (AllowCreateOnUpdate)."""
    await make_jane_admin_of_default(api)
    status, body = await call(api, JANE, "PUT", f"{ROLES}/nodes", role("nodes", NODES))
    assert (status, body["reason"]) == (403, "Forbidden")
    assert (await call(api, JANE, "PUT", f"{ROLES}/pods", role("pods", PODS)))[0] == 201
    assert (await call(api, JANE, "PUT", f"{RB}/bob-view", binding("bob-view", "ClusterRole", "view")))[0] == 201


async def test_escalate_is_asked_by_the_requests_name(api: APIServer) -> None:
    """RoleEscalationAuthorized asks with the URL's name: a create names none, so `escalate`
    limited to resourceNames covers updates of those roles only."""
    await make_jane_admin_of_default(api)
    await grant_jane(api, "escalate-nodes", {"apiGroups": [G], "resources": ["roles"], "verbs": ["escalate"],
                                             "resourceNames": ["nodes"]})
    assert (await call(api, JANE, "POST", ROLES, role("nodes", NODES)))[0] == 403
    assert (await call(api, ADMIN, "POST", ROLES, role("nodes", PODS)))[0] == 201
    r = (await call(api, JANE, "GET", f"{ROLES}/nodes"))[1]
    r["rules"].append(NODES)
    assert (await call(api, JANE, "PUT", f"{ROLES}/nodes", r))[0] == 200
    r = role("other", PODS, NODES)
    assert (await call(api, ADMIN, "POST", ROLES, r))[0] == 201
    r = (await call(api, JANE, "GET", f"{ROLES}/other"))[1]
    r["metadata"]["labels"] = {"a": "b"}
    assert (await call(api, JANE, "PUT", f"{ROLES}/other", r))[0] == 403
    # escalate on clusterroles is its own resource
    assert (await call(api, JANE, "POST", f"{RBAC}/clusterroles", role("cr", NODES, ns="")))[0] == 403


async def test_bind_is_asked_of_the_referenced_role_in_the_bindings_namespace(api: APIServer) -> None:
    await make_jane_admin_of_default(api)
    await grant_jane(api, "bind-edit", {"apiGroups": [G], "resources": ["clusterroles"], "verbs": ["bind"],
                                        "resourceNames": ["cluster-admin"]})
    # bind on one ClusterRole name: that role only, and only as the apiGroup it names
    assert (await call(api, JANE, "POST", RB, binding("a", "ClusterRole", "cluster-admin")))[0] == 201
    bad_group = binding("b", "ClusterRole", "cluster-admin")
    bad_group["roleRef"]["apiGroup"] = "example.com"
    assert (await call(api, JANE, "POST", RB, bad_group))[0] == 403
    assert (await call(api, JANE, "POST", RB, binding("c", "ClusterRole", "system:node")))[0] == 403
    # a Role reference asks bind on roles, in the binding's namespace
    assert (await call(api, ADMIN, "POST", ROLES, role("nodes", NODES)))[0] == 201
    assert (await call(api, JANE, "POST", RB, binding("d", "Role", "nodes")))[0] == 403
    await grant_jane(api, "bind-roles", {"apiGroups": [G], "resources": ["roles"], "verbs": ["bind"]})
    assert (await call(api, JANE, "POST", RB, binding("d", "Role", "nodes")))[0] == 201
    # a ClusterRoleBinding asks bind cluster-wide: the namespaced grant does not reach it
    crb = binding("e", "ClusterRole", "cluster-admin", ns="")
    status, body = await call(api, JANE, "POST", f"{RBAC}/clusterrolebindings", crb)
    assert (status, body["reason"]) == (403, "Forbidden")


async def test_an_unsupported_role_reference_kind_is_a_bad_request(api: APIServer) -> None:
    """GetRoleReferenceRules' error, with upstream's message; upstream's handler renders it as a
    500 (a non-status error), ours as a 400: bad input never gets a 500 (validation, which
    would say 422, comes after)."""
    await make_jane_admin_of_default(api)
    b = binding("x", "Role", "r")
    b["roleRef"]["kind"] = "Widget"
    status, body = await call(api, JANE, "POST", RB, b)
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", 'unsupported role reference kind: "Widget"')
    assert (await call(api, ADMIN, "POST", RB, b))[0] == 422


async def test_an_aggregation_rule_without_selectors_needs_nothing_more(api: APIServer) -> None:
    """hasAggregationRule: at least one selector; changing a role's aggregationRule away needs
    cluster-admin too (it would stop a tightening)."""
    await grant_jane(api, "cr-writer", {"apiGroups": [G], "resources": ["clusterroles"],
                                        "verbs": ["create", "get", "update"]}, ns="")
    # no selector: not refused as an aggregation (validation then wants one)
    empty = {**role("agg", ns=""), "aggregationRule": {"clusterRoleSelectors": []}}
    status, body = await call(api, JANE, "POST", f"{RBAC}/clusterroles", empty)
    assert (status, body["reason"]) == (422, "Invalid")
    agg = {**role("agg2", ns=""), "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}
    assert (await call(api, ADMIN, "POST", f"{RBAC}/clusterroles", agg))[0] == 201
    r = (await call(api, JANE, "GET", f"{RBAC}/clusterroles/agg2"))[1]
    del r["aggregationRule"]
    status, body = await call(api, JANE, "PUT", f"{RBAC}/clusterroles/agg2", r)
    assert (status, body["message"]) == (403, 'clusterroles.rbac.authorization.k8s.io "agg2" is forbidden: must have '
                                              'cluster-admin privileges to use the aggregationRule')


async def test_resolution_errors_end_the_message_as_upstreams(api: APIServer) -> None:
    """ConfirmNoEscalation appends `; resolution errors: %v` of its one-element []error (the
    rules' aggregate), the registry resolver naming missing roles by their store (plural)."""
    await make_jane_admin_of_default(api)
    for name in ("ghost", "phantom"):
        assert (await call(api, ADMIN, "POST", RB, binding(f"jane-{name}", "Role", name, "jane")))[0] == 201
        status, body = await call(api, JANE, "POST", ROLES, role(f"nodes-{name}", NODES))
        assert status == 403
    assert body["message"] == (
        'roles.rbac.authorization.k8s.io "nodes-phantom" is forbidden: ' + JANE_NOT_HOLDING +
        '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}; resolution errors: '
        '[[roles.rbac.authorization.k8s.io "ghost" not found, roles.rbac.authorization.k8s.io "phantom" not found]]')


async def test_a_stale_escalating_update_is_forbidden_not_a_conflict(api: APIServer) -> None:
    """Upstream's policybased Update checks inside the updated-object function, which
    Store.Update calls before it compares resourceVersions: 403, not 409 (a stale update that
    escalates nothing is still the usual 409)."""
    await make_jane_admin_of_default(api)
    assert (await call(api, JANE, "POST", ROLES, role("pods", PODS)))[0] == 201
    stale = (await call(api, JANE, "GET", f"{ROLES}/pods"))[1]
    fresh = {**stale, "metadata": {**stale["metadata"], "labels": {"v": "2"}}}
    assert (await call(api, JANE, "PUT", f"{ROLES}/pods", fresh))[0] == 200
    escalating = {**stale, "rules": [PODS, NODES]}
    status, body = await call(api, JANE, "PUT", f"{ROLES}/pods", escalating)
    assert (status, body["reason"]) == (403, "Forbidden")
    status, body = await call(api, JANE, "PUT", f"{ROLES}/pods", {**stale, "metadata": {**stale["metadata"],
                                                                                        "labels": {"v": "3"}}})
    assert (status, body["reason"]) == (409, "Conflict")
