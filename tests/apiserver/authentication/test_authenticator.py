"""The authenticator union in upstream's order (x509, bearer tokens, anonymous), the TEMPORARY
rule that keeps anonymous requests on the public paths while every request is allowed, and the
reviews that answer with the same authenticators (TokenReview, SelfSubjectReview)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.authentication.user import ANONYMOUS, UserInfo, authenticated
from kubeplane.apiserver.authentication.x509 import X509Identity
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock

from .test_serviceaccount_tokens import mint

ALICE = authenticated("alice", "devs")
BOB_CERT = UserInfo("bob", "", ("ops", "system:authenticated"))
REVIEWS = "/apis/authentication.k8s.io/v1"


def request(path: str = "/api/v1/namespaces", authorization: str | None = None,
            x509: X509Identity | None = None) -> Request:
    req = Request.build("GET", path, headers={"authorization": authorization} if authorization is not None else {})
    req.x509 = x509
    return req


async def user_of(server: APIServer, req: Request) -> UserInfo:
    await server.authenticate(req)
    return req.user


async def status_of(server: APIServer, req: Request) -> int:
    try:
        await server.authenticate(req)
    except errors.StatusError as e:
        return e.code
    return 200


@pytest.fixture
def server(api: Any) -> APIServer:
    api.server.authenticator.token_file.tokens["alice-token"] = ALICE
    return api.server


async def test_a_client_certificate_comes_first(server: APIServer) -> None:
    cert = X509Identity(BOB_CERT, server.clock.now() + 10)
    assert await user_of(server, request(x509=cert, authorization="Bearer alice-token")) == BOB_CERT
    assert await user_of(server, request(x509=cert, authorization="Bearer wrong")) == BOB_CERT   # never looked at


async def test_a_certificate_without_a_common_name_leaves_it_to_the_token(server: APIServer) -> None:
    cert = X509Identity(None, server.clock.now() + 10)
    assert await user_of(server, request(x509=cert, authorization="Bearer alice-token")) == ALICE


@pytest.mark.parametrize("cert", [
    X509Identity(BOB_CERT, 0.0),                                          # expired since the handshake
    X509Identity(None, 1e12, "expected 1 UID, but found multiple: [1 2]"),
])
async def test_an_expired_or_unconvertible_certificate_is_401(server: APIServer, cert: X509Identity) -> None:
    assert await status_of(server, request(x509=cert)) == 401


@pytest.mark.parametrize("header,want", [
    ("Bearer alice-token", ALICE),
    ("bearer alice-token", ALICE),
    ("  Bearer alice-token  ", ALICE),
    ("Bearer alice-token extra", ALICE),      # upstream: SplitN(auth, " ", 3)[1]
    ("Bearer", ANONYMOUS),                 # no token: anonymous, as upstream
    ("Bearer ", ANONYMOUS),
    ("Bearer  alice-token", ANONYMOUS),    # the space before the token: empty, upstream warns
    ("Basic YWxpY2U6cHc=", ANONYMOUS),     # another scheme: not ours
])
async def test_bearer_tokens(server: APIServer, header: str, want: UserInfo) -> None:
    # the anonymous ones ask for a public path (see test_anonymous_requests_reach_only_public_paths)
    assert await user_of(server, request("/version", header)) == want


@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer " + "x" * 1_000_000,
                                    "Bearer a.b.c", "Bearer \u00e9"])
async def test_a_bad_bearer_token_is_401_even_where_anonymous_may_go(server: APIServer, header: str) -> None:
    assert await status_of(server, request("/healthz", header)) == 401


async def test_anonymous_requests_reach_only_public_paths(server: APIServer) -> None:
    """TEMPORARY (APIServer.anonymous_may_reach) until RBAC decides."""
    assert await user_of(server, request("/version")) == ANONYMOUS
    assert await status_of(server, request("/readyz/ping")) == 200
    assert await status_of(server, request("/api/v1/namespaces/default/secrets")) == 401


async def test_anonymous_cannot_impersonate_its_way_past_the_public_paths(server: APIServer) -> None:
    req = request("/api/v1/namespaces/default/secrets")
    req.headers["impersonate-user"] = "kubernetes-admin"
    assert await status_of(server, req) == 401


async def test_a_server_without_credentials_is_open_to_anonymous(api: Any) -> None:
    assert await user_of(api.server, request("/api/v1/secrets")) == ANONYMOUS


async def test_anonymous_auth_off_is_401_everywhere() -> None:
    server = APIServer(new_storage("memory"), clock=FakeClock(), options=ServerRunOptions(anonymous_auth=False))
    assert await status_of(server, request("/version")) == 401
    assert await status_of(server, request("/version", "Bearer ")) == 401


async def test_self_subject_review_answers_the_requests_user(api: Any) -> None:
    req = Request.build("POST", f"{REVIEWS}/selfsubjectreviews", headers={"content-type": "application/json"},
                        body=b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}')
    req.user = BOB_CERT
    resp = await api.server.route_trusted(req)
    import orjson
    assert resp.status == 201 and orjson.loads(resp.body)["status"] == {
        "userInfo": {"username": "bob", "groups": ["ops", "system:authenticated"]}}


def token_review(token: str, *audiences: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


async def test_token_review_of_every_kind_of_token(api: Any, server: APIServer) -> None:
    sa = (await api.create("/api/v1/namespaces/default/serviceaccounts",
                           {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})).json
    token = await mint(api, audiences=["vault"])
    r = await api.create(f"{REVIEWS}/tokenreviews", token_review(token, "vault", "other"))
    assert r.status == 201
    status = r.json["status"]
    assert status["authenticated"] is True and status["audiences"] == ["vault"]
    assert status["user"]["username"] == "system:serviceaccount:default:sa"
    assert status["user"]["uid"] == sa["metadata"]["uid"]
    assert status["user"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default",
                                        "system:authenticated"]
    r = await api.create(f"{REVIEWS}/tokenreviews", token_review(token))        # the API audiences
    assert r.json["status"] == {"user": {}, "error": '[invalid bearer token, token audiences ["vault"] is invalid for '
                                                      'the target audiences ["https://kubernetes.default.svc.cluster.local"]]'}
    r = await api.create(f"{REVIEWS}/tokenreviews", token_review("alice-token"))
    assert r.json["status"] == {"authenticated": True, "user": ALICE.to_dict(),
                                "audiences": ["https://kubernetes.default.svc.cluster.local"]}
    r = await api.create(f"{REVIEWS}/tokenreviews", token_review("alice-token", "vault"))   # not for vault
    assert r.json["status"] == {"user": {}, "error": "invalid bearer token"}
    r = await api.create(f"{REVIEWS}/tokenreviews", token_review("nope"))
    assert r.json["status"] == {"user": {}, "error": "invalid bearer token"}


async def test_token_review_needs_a_token(api: Any) -> None:
    r = await api.create(f"{REVIEWS}/tokenreviews", token_review(""))
    assert (r.status, r.json["message"]) == (400, "token is required for TokenReview in authentication")


@pytest.mark.parametrize("spec", [{"token": "alice-token", "audiences": [{}]}, {"token": ["x"]},
                                  {"token": "alice-token", "audiences": "vault"}, {"token": 1}])
async def test_a_malformed_token_review_is_a_400(api: Any, server: APIServer, spec: dict[str, Any]) -> None:
    r = await api.create(f"{REVIEWS}/tokenreviews", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                     "spec": spec})
    assert r.status == 400, r.json


WITHOUT_LOOK_UP = [      # (authorization header, client certificate): every shape of the fast path's edges
    ("Bearer alice-token", None), ("bearer alice-token", None), ("  Bearer alice-token  ", None),
    ("Bearer alice-token ", None), ("Bearer alice-token\t", None), ("Bearer alice-token extra", None),
    ("Bearer", None), ("Bearer ", None), ("Bearer  alice-token", None), ("Bearer wrong", None),
    ("Bearer \talice-token", None), ("Basic YWxpY2U6cHc=", None), (None, None),
    ("Bearer alice-token", X509Identity(BOB_CERT, 1e12)), ("Bearer wrong", X509Identity(None, 1e12)),
    ("Bearer alice-token", X509Identity(None, 1e12)), (None, X509Identity(BOB_CERT, 0.0)),
    ("Bearer alice-token", X509Identity(BOB_CERT, 0.0)), ("Bearer alice-token", X509Identity(None, 0.0)),
    ("Bearer alice-token", X509Identity(None, 1e12, "expected 1 UID, but found multiple: [1 2]")),
    ("Bearer with space", None), ("Bearer trailing\t", None), ("Bearer trailing", None),
]


@pytest.mark.parametrize("header,cert", WITHOUT_LOOK_UP)
async def test_the_shortcut_finds_the_user_authenticate_finds_or_leaves_it_to_it(
        server: APIServer, header: str | None, cert: X509Identity | None) -> None:
    """APIServer.handle asks authenticate_now first (no coroutine, no token parsing): when it
    answers, it is the user authenticate() finds; when it cannot, handle() runs authenticate(),
    401s included. The token file holds tokens bearer_token() can never return (a space
    inside, whitespace after): the shortcut must not find them either."""
    server.authenticator.token_file.tokens.update({"with space": BOB_CERT, "trailing\t": BOB_CERT})
    fast = server.authenticator.authenticate_now(request("/version", header, cert))
    try:
        slow: UserInfo | int = await user_of(server, request("/version", header, cert))
    except errors.StatusError as e:
        slow = e.code
    assert fast is None or fast == slow
    resp = await server.handle(request("/version", header, cert))
    assert resp.status == (slow if isinstance(slow, int) else 200)


async def test_the_shortcut_leaves_impersonation_to_authenticate(server: APIServer) -> None:
    req = request("/version", "Bearer alice-token")
    req.headers["impersonate-user"] = "jane"
    assert (await server.handle(req)).status == 200 and req.user.name == "jane"   # AlwaysAllow may impersonate
    assert req.impersonated_by == ALICE
