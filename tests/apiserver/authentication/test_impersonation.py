"""Impersonation as upstream's impersonation_test.go: each header authorized with the
`impersonate` verb, the user replaced (system:authenticated added), the original kept, and
upstream's 400 and 403 answers."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.authentication.user import UserInfo, authenticated
from kubeplane.apiserver.authorization.authorizer import Attributes, Decision
from kubeplane.apiserver.request import Request

ADMIN = authenticated("admin", "system:masters")


class Recording:
    """Allows what `allow` says, and records every question."""

    def __init__(self, allow: Any = lambda a: True) -> None:
        self.allow = allow
        self.asked: list[Attributes] = []

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        self.asked.append(a)
        return (Decision.ALLOW, "") if self.allow(a) else (Decision.NO_OPINION, "")


def request(*headers: tuple[str, str]) -> Request:
    """A request authenticated by the token file as admin, with headers (repeats kept)."""
    raw = [(b"authorization", b"Bearer tok"), *((k.encode(), v.encode()) for k, v in headers)]
    req = Request.build("GET", "/api/v1/namespaces/default/pods", headers={k.lower(): v for k, v in headers})
    req.headers["authorization"] = "Bearer tok"
    req.raw_headers = raw
    return req


@pytest.fixture
def server(api: Any) -> Any:
    api.server.authenticator.token_file.tokens["tok"] = ADMIN
    api.server.authorizer = Recording()
    return api.server


async def test_a_user_and_groups(server: Any) -> None:
    req = request(("Impersonate-User", "jane"), ("Impersonate-Group", "g1"), ("Impersonate-Group", "g2"))
    await server.authenticate(req)
    assert req.user == UserInfo("jane", "", ("g1", "g2", "system:authenticated"))
    assert req.impersonated_by == ADMIN
    assert [(a.user, a.verb, a.api_group, a.resource, a.name) for a in server.authorizer.asked] == [
        (ADMIN, "impersonate", "", "users", "jane"), (ADMIN, "impersonate", "", "groups", "g1"),
        (ADMIN, "impersonate", "", "groups", "g2")]


async def test_a_service_account_gets_its_groups_and_is_checked_in_its_namespace(server: Any) -> None:
    req = request(("Impersonate-User", "system:serviceaccount:ns1:bot"))
    await server.authenticate(req)
    assert req.user == UserInfo("system:serviceaccount:ns1:bot", "",
                                ("system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"))
    a = server.authorizer.asked[0]
    assert (a.namespace, a.resource, a.name) == ("ns1", "serviceaccounts", "bot")


async def test_uid_and_extras_are_checked_in_authentication_k8s_io(server: Any) -> None:
    req = request(("Impersonate-User", "jane"), ("Impersonate-Uid", "1234"),
                  ("Impersonate-Extra-Scopes", "view"), ("Impersonate-Extra-Scopes", "edit"),
                  ("Impersonate-Extra-example.com%2fteam", "blue"))
    await server.authenticate(req)
    assert req.user == UserInfo("jane", "1234", ("system:authenticated",),
                                (("example.com/team", ("blue",)), ("scopes", ("view", "edit"))))
    assert [(a.api_group, a.api_version, a.resource, a.subresource, a.name) for a in server.authorizer.asked] == [
        ("", "", "users", "", "jane"),
        ("authentication.k8s.io", "v1", "userextras", "scopes", "view"),
        ("authentication.k8s.io", "v1", "userextras", "scopes", "edit"),
        ("authentication.k8s.io", "v1", "userextras", "example.com/team", "blue"),
        ("authentication.k8s.io", "v1", "uids", "", "1234")]


@pytest.mark.parametrize("groups,want", [
    ((), ("system:unauthenticated",)),
    (("system:unauthenticated",), ("system:unauthenticated",)),
    (("g",), ("g", "system:unauthenticated")),
])
async def test_impersonating_anonymous(server: Any, groups: tuple[str, ...], want: tuple[str, ...]) -> None:
    req = request(("Impersonate-User", "system:anonymous"), *(("Impersonate-Group", g) for g in groups))
    await server.authenticate(req)
    assert req.user == UserInfo("system:anonymous", "", want)


async def test_system_authenticated_is_not_added_twice(server: Any) -> None:
    req = request(("Impersonate-User", "jane"), ("Impersonate-Group", "system:authenticated"))
    await server.authenticate(req)
    assert req.user.groups == ("system:authenticated",)


async def test_groups_without_a_user_are_a_400(server: Any) -> None:
    with pytest.raises(errors.StatusError) as e:
        await server.authenticate(request(("Impersonate-Group", "g1"), ("Impersonate-Uid", "u")))
    assert (e.value.code, e.value.message) == (
        400, "requested [{Group  g1    } {UID  u  authentication.k8s.io/v1  }] without impersonating a user")


@pytest.mark.parametrize("headers,message", [
    ((("Impersonate-User", "jane"),),
     'users "jane" is forbidden: User "admin" cannot impersonate resource "users" in API group "" at the cluster scope'),
    ((("Impersonate-User", "system:serviceaccount:ns1:bot"),),
     'serviceaccounts "bot" is forbidden: User "admin" cannot impersonate resource "serviceaccounts" in API group "" '
     'in the namespace "ns1"'),
])
async def test_a_refusal_is_upstreams_403(server: Any, headers: Any, message: str) -> None:
    server.authorizer = Recording(lambda a: False)
    with pytest.raises(errors.StatusError) as e:
        await server.authenticate(request(*headers))
    assert (e.value.code, e.value.reason, e.value.message) == (403, "Forbidden", message)


async def test_the_first_refused_part_is_named(server: Any) -> None:
    server.authorizer = Recording(lambda a: a.resource != "userextras")
    with pytest.raises(errors.StatusError) as e:
        await server.authenticate(request(("Impersonate-User", "jane"), ("Impersonate-Extra-Scopes", "view")))
    assert e.value.message == ('userextras.authentication.k8s.io "view" is forbidden: User "admin" cannot impersonate '
                               'resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope')


async def test_no_headers_no_impersonation(server: Any) -> None:
    req = request()
    await server.authenticate(req)
    assert req.user == ADMIN and req.impersonated_by is None and server.authorizer.asked == []
