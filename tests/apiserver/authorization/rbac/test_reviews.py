"""The access reviews answered by the RBAC chain (what `kubectl auth can-i` and
`kubectl auth can-i --list` read). Upstream: pkg/registry/authorization/*/rest.go."""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.authentication.user import ANONYMOUS, authenticated
from kubeplane.apiserver.server import APIServer

from .helpers import ADMIN, JANE, call

AZ = "/apis/authorization.k8s.io/v1"


def sar(user: str, verb: str, resource: str, ns: str = "default", groups: list[str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups or [],
                     "resourceAttributes": {"namespace": ns, "verb": verb, "resource": resource}}}


async def bind(api: APIServer, user: str, role: str, ns: str) -> None:
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": f"{user}-{role}", "namespace": ns},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
          "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}
    assert (await call(api, ADMIN, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                       rb))[0] == 201


async def test_subject_access_review(api: APIServer) -> None:
    status, body = await call(api, ADMIN, "POST", f"{AZ}/subjectaccessreviews", sar("jane", "list", "pods"))
    assert (status, body["status"]) == (201, {"allowed": False})
    await bind(api, "jane", "view", "default")
    status, body = await call(api, ADMIN, "POST", f"{AZ}/subjectaccessreviews", sar("jane", "list", "pods"))
    assert body["status"] == {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "jane-view/default" of '
                                                         'ClusterRole "view" to User "jane"'}
    status, body = await call(api, ADMIN, "POST", f"{AZ}/subjectaccessreviews",
                              sar("x", "delete", "secrets", groups=["system:masters"]))
    assert body["status"] == {"allowed": True}
    # only who may create subjectaccessreviews may ask about others
    assert (await call(api, JANE, "POST", f"{AZ}/subjectaccessreviews", sar("jane", "list", "pods")))[0] == 403


async def test_self_subject_access_review_is_of_the_requester(api: APIServer) -> None:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}}
    status, body = await call(api, JANE, "POST", f"{AZ}/selfsubjectaccessreviews", review)
    assert (status, body["status"]) == (201, {"allowed": False})
    status, body = await call(api, ADMIN, "POST", f"{AZ}/selfsubjectaccessreviews", review)
    assert body["status"] == {"allowed": True}
    # system:basic-user is for authenticated users only
    assert (await call(api, ANONYMOUS, "POST", f"{AZ}/selfsubjectaccessreviews", review))[0] == 403


async def test_local_subject_access_review(api: APIServer) -> None:
    await bind(api, "jane", "admin", "default")
    lsar = {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
            "metadata": {"namespace": "default"},
            "spec": {"user": "bob", "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}}
    status, body = await call(api, JANE, "POST", f"{AZ}/namespaces/default/localsubjectaccessreviews", lsar)
    assert (status, body["status"]) == (201, {"allowed": False})
    assert (await call(api, JANE, "POST", f"{AZ}/namespaces/kube-system/localsubjectaccessreviews",
                       {**lsar, "metadata": {"namespace": "kube-system"}}))[0] == 403


async def test_self_subject_rules_review(api: APIServer) -> None:
    await bind(api, "jane", "view", "default")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
              "spec": {"namespace": "default"}}
    status, body = await call(api, JANE, "POST", f"{AZ}/selfsubjectrulesreviews", review)
    assert status == 201 and body["status"]["incomplete"] is False
    rules = body["status"]["resourceRules"]
    assert {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in rules       # basic-user
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]} in rules  # view
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} in \
        body["status"]["nonResourceRules"]
    status, body = await call(api, JANE, "POST", f"{AZ}/selfsubjectrulesreviews",
                              {**review, "spec": {"namespace": "kube-system"}})
    assert not any("namespaces" in r["resources"] for r in body["status"]["resourceRules"])
    status, body = await call(api, authenticated("root", "system:masters"), "POST", f"{AZ}/selfsubjectrulesreviews",
                              review)
    assert body["status"]["resourceRules"][0] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert body["status"]["nonResourceRules"][0] == {"verbs": ["*"], "nonResourceURLs": ["*"]}


SSRR = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "metadata": {"name": "asked", "labels": {"a": "b"}}, "spec": {"namespace": "default"}}
# What every authenticated user holds: system:basic-user, system:discovery, system:public-info-viewer
# (their bootstrap ClusterRoleBindings, in name order).
BASIC_RESOURCE_RULES = [
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}]
BASIC_NON_RESOURCE_RULES = [
    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                           "/openapi/*", "/readyz", "/version", "/version/"]},
    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}]


async def test_self_subject_rules_review_answers_a_new_review_not_the_request(api: APIServer) -> None:
    """Upstream's REST.Create returns a fresh review with only its status: no metadata or spec
    of the request; resourceNames only where a rule has them."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cm", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"], "verbs": ["get"]}]}
    assert (await call(api, ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role))[0] == 201
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "jane-cm", "namespace": "default"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
          "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert (await call(api, ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                       rb))[0] == 201
    status, body = await call(api, JANE, "POST", f"{AZ}/selfsubjectrulesreviews", SSRR)
    assert status == 201
    assert body == {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "metadata": {},
                    "spec": {}, "status": {
                        "resourceRules": BASIC_RESOURCE_RULES + [
                            {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"]}],
                        "nonResourceRules": BASIC_NON_RESOURCE_RULES, "incomplete": False}}


async def test_a_super_user_gets_its_bindings_rules_once(api: APIServer) -> None:
    """system:masters' authorizer is no rule resolver: the rules are cluster-admin's, through the
    bootstrap binding, once (kubectl auth can-i --list prints one `*.*` row)."""
    status, body = await call(api, ADMIN, "POST", f"{AZ}/selfsubjectrulesreviews", SSRR)
    rules = body["status"]
    assert rules["resourceRules"] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}] + BASIC_RESOURCE_RULES
    assert rules["nonResourceRules"] == [{"verbs": ["*"], "nonResourceURLs": ["*"]}] + BASIC_NON_RESOURCE_RULES


async def test_rules_review_evaluation_error_is_the_aggregate_once_each(api: APIServer) -> None:
    for i in ("1", "2"):             # two bindings to the same missing role: one message
        rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "ghost" + i},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ghost"},
              "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]}
        assert (await call(api, ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rb))[0] == 201
    body = (await call(api, JANE, "POST", f"{AZ}/selfsubjectrulesreviews", SSRR))[1]
    assert body["status"]["incomplete"] is False
    assert body["status"]["evaluationError"] == 'clusterrole.rbac.authorization.k8s.io "ghost" not found'
    rb["metadata"]["name"], rb["roleRef"]["name"] = "phantom", "phantom"
    assert (await call(api, ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rb))[0] == 201
    body = (await call(api, JANE, "POST", f"{AZ}/selfsubjectrulesreviews", SSRR))[1]
    assert body["status"]["evaluationError"] == ('[clusterrole.rbac.authorization.k8s.io "ghost" not found, '
                                                 'clusterrole.rbac.authorization.k8s.io "phantom" not found]')


async def test_a_nodes_rules_review_is_incomplete() -> None:
    """The Node authorizer is a rule resolver that cannot list a node's rules."""
    from kubeplane.apiserver.options import ServerRunOptions
    from kubeplane.storage import new_storage
    server = APIServer(new_storage("memory"), options=ServerRunOptions(
        authorization_modes=("Node", "RBAC"), disable_admission_plugins=frozenset({"ServiceAccount", "TaintNodesByCondition"})))
    await server.bootstrap()
    try:
        node = authenticated("system:node:n1", "system:nodes")
        status, body = await call(server, node, "POST", f"{AZ}/selfsubjectrulesreviews", SSRR)
        assert status == 201
        assert body["status"]["incomplete"] is True
        assert body["status"]["evaluationError"] == "node authorizer does not support user rule resolution"
        body = (await call(server, JANE, "POST", f"{AZ}/selfsubjectrulesreviews", SSRR))[1]
        assert body["status"]["incomplete"] is False and "evaluationError" not in body["status"]
    finally:
        await server.storage.close()
