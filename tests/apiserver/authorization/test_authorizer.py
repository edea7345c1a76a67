"""The authorization step every request passes (the in-process components' too), its union of
authorizers and upstream's 403 messages (responsewriters.forbiddenMessage + NewForbidden)."""
from __future__ import annotations

import json

import pytest

from kubeplane.apiserver.authentication.user import ANONYMOUS, component
from kubeplane.apiserver.authorization.authorizer import (
    AlwaysAllow, Attributes, Decision, Union, attributes_of, forbidden)
from kubeplane.apiserver.request import Request, parse_request_info
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

JANE = component("jane")


class Fixed:
    def __init__(self, decision: Decision, reason: str = "") -> None:
        self.decision, self.reason, self.seen = decision, reason, []

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        self.seen.append(a)
        return self.decision, self.reason


def attrs(method: str, path: str, query: str = "") -> Attributes:
    req = Request.build(method, path, query)
    return attributes_of(JANE, parse_request_info(req), req.path)


@pytest.mark.parametrize("method,path,query,message,details", [
    ("GET", "/api/v1/namespaces/ns/pods", "",
     'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "ns"',
     {"kind": "pods"}),
    ("GET", "/apis/apps/v1/namespaces/ns/deployments/d", "",
     'deployments.apps "d" is forbidden: User "jane" cannot get resource "deployments" in API group "apps" '
     'in the namespace "ns"', {"name": "d", "group": "apps", "kind": "deployments"}),
    ("PATCH", "/api/v1/namespaces/ns/pods/p/status", "",
     'pods "p" is forbidden: User "jane" cannot patch resource "pods/status" in API group "" in the namespace "ns"',
     {"name": "p", "kind": "pods"}),
    ("GET", "/api/v1/nodes", "watch=true",
     'nodes is forbidden: User "jane" cannot watch resource "nodes" in API group "" at the cluster scope',
     {"kind": "nodes"}),
    ("GET", "/metrics", "", 'forbidden: User "jane" cannot get path "/metrics"', None),
])
def test_forbidden_messages(method: str, path: str, query: str, message: str, details: dict | None) -> None:
    err = forbidden(attrs(method, path, query), "")
    assert (err.code, err.reason, err.message) == (403, "Forbidden", message)
    assert (err.details or None) == details
    assert err.status()["details"] == (details or {})     # NewForbidden's Details: {} when empty


def test_forbidden_appends_the_reason() -> None:
    err = forbidden(attrs("DELETE", "/api/v1/namespaces/ns/secrets/s"), "no RBAC policy matched")
    assert err.message.endswith('in the namespace "ns": no RBAC policy matched')


def test_union_first_opinion_decides_and_joins_reasons() -> None:
    a = attrs("GET", "/api/v1/pods")
    quiet, deny, allow = Fixed(Decision.NO_OPINION, "r1"), Fixed(Decision.DENY, "r2"), Fixed(Decision.ALLOW)
    assert Union(quiet, deny, allow).authorize(a) == (Decision.DENY, "r1\nr2")
    assert allow.seen == []
    assert Union(quiet).authorize(a) == (Decision.NO_OPINION, "r1")
    assert AlwaysAllow().authorize(a) == (Decision.ALLOW, "")


async def test_every_request_is_authorized_in_process_too() -> None:
    api = APIServer(new_storage("memory"), tokens={"tok": "jane"})
    await api.bootstrap()
    deny = Fixed(Decision.NO_OPINION)
    api.authorizer = deny
    # In process (a component's user), nothing written.
    resp = await api.route_trusted(Request("POST", "/api/v1/namespaces/default/configmaps", {}, {}, b"",
                                           component("system:kube-scheduler"),
                                           {"metadata": {"name": "c"}}))
    assert resp.status == 403
    assert isinstance(resp.body, bytes)
    assert json.loads(resp.body)["message"].startswith(
        'configmaps is forbidden: User "system:kube-scheduler" cannot create resource "configmaps"')
    assert await api.storage.get("/registry/configmaps/default/c") is None
    # Over the front end, with the token's user and its system:authenticated group.
    resp = await api.handle(Request.build("GET", "/api/v1/namespaces", "", {"authorization": "Bearer tok"}))
    assert resp.status == 403
    assert deny.seen[-1].user.name == "jane" and deny.seen[-1].user.groups == ("system:authenticated",)
    # Anonymous on a public path is still asked about (RBAC's public-info-viewer lets it in).
    api.authorizer = AlwaysAllow()
    assert (await api.handle(Request.build("GET", "/version"))).status == 200


def test_component_identities() -> None:
    node = component("system:node:n1")
    assert node.groups == ("system:nodes", "system:authenticated")
    assert component("system:kube-scheduler").groups == ("system:authenticated",)
    assert ANONYMOUS.to_dict() == {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
