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
