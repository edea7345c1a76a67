"""Bootstrap tokens (--enable-bootstrap-token-auth): upstream's TestTokenAuthenticator table
(plugin/pkg/auth/authenticator/token/bootstrap/bootstrap_test.go), the cluster-bootstrap
helpers' rules (expiration, groups, the detached JWS of jws_test.go), and the token in the
authenticator union: a real request, TokenReview, and revocation by deleting the Secret."""
from __future__ import annotations

import base64
import dataclasses
from typing import Any

import orjson
import pytest

from kubeplane.api import bootstraptoken as bt
from kubeplane.apiserver.authentication.bootstrap import BootstrapTokenAuthenticator
from kubeplane.apiserver.authentication.user import ALL_AUTHENTICATED, authenticated
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER
from kubeplane.utils.clock import FakeClock, parse_rfc3339

TOKEN_ID, TOKEN_SECRET = "foobar", "circumnavigation"
TOKEN = f"{TOKEN_ID}.{TOKEN_SECRET}"
SECRETS = "/api/v1/namespaces/kube-system/secrets"


def secret(name: str = bt.SECRET_PREFIX + TOKEN_ID, type_: str = bt.SECRET_TYPE, deleting: bool = False,
           **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "kube-system"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": type_,
            "data": {k.replace("_", "-"): base64.b64encode(v.encode()).decode() for k, v in data.items()}}


VALID = {"token_id": TOKEN_ID, "token_secret": TOKEN_SECRET, "usage_bootstrap_authentication": "true"}

# Upstream's table: (name, the Secret, the token, the groups of the user; None: not found)
TABLE = [
    ("valid token", secret(**VALID), TOKEN, ["system:bootstrappers"]),
    ("valid token with extra group", secret(**VALID, auth_extra_groups="system:bootstrappers:foo"), TOKEN,
     ["system:bootstrappers", "system:bootstrappers:foo"]),
    ("invalid group", secret(**VALID, auth_extra_groups="foo"), TOKEN, None),
    ("invalid secret name", secret("bad-name", **VALID), TOKEN, None),
    ("no usage", secret(token_id=TOKEN_ID, token_secret=TOKEN_SECRET), TOKEN, None),
    ("wrong token", secret(**VALID), "barfoo." + TOKEN_SECRET, None),
    ("deleted token", secret(deleting=True, **VALID), TOKEN, None),
    ("expired token", secret(**VALID, expiration="2009-11-10T23:00:00Z"), TOKEN, None),
    ("not expired token", secret(**VALID, expiration="2109-11-10T23:00:00Z"), TOKEN, ["system:bootstrappers"]),
    ("token id wrong length", secret(bt.SECRET_PREFIX + "foo", **{**VALID, "token_id": "foo"}), "foo." + TOKEN_SECRET,
     None),
    # beyond upstream's table: each check of AuthenticateToken on its own
    ("wrong type", secret(type_="Opaque", **VALID), TOKEN, None),
    ("wrong secret half", secret(**{**VALID, "token_secret": "circumnavigatioN"}), TOKEN, None),
    ("id key differs from the name", secret(**{**VALID, "token_id": "barfoo"}), TOKEN, None),
    ("unparseable expiration", secret(**VALID, expiration="2109-11-10 23:00:00"), TOKEN, None),
    ("usage not exactly true", secret(**{**VALID, "usage_bootstrap_authentication": "True"}), TOKEN, None),
    ("duplicate extra groups", secret(**VALID, auth_extra_groups="system:bootstrappers:b,system:bootstrappers:a,"
                                                                  "system:bootstrappers:b"), TOKEN,
     ["system:bootstrappers", "system:bootstrappers:a", "system:bootstrappers:b"]),
    ("not of the token form", secret(**VALID), TOKEN + "x", None),
]


@pytest.mark.parametrize("name, obj, token, groups", TABLE, ids=[t[0] for t in TABLE])
async def test_token_authenticator(name: str, obj: dict[str, Any], token: str, groups: list[str] | None) -> None:
    storage = new_storage("memory")
    await storage.create(f"/registry/secrets/kube-system/{obj['metadata']['name']}", obj)
    user = await BootstrapTokenAuthenticator(storage, FakeClock(parse_rfc3339("2026-11-27T00:00:00Z"))
                                             ).authenticate_token(token)
    if groups is None:
        assert user is None
    else:
        assert user is not None
        assert user.name == f"system:bootstrap:{TOKEN_ID}"
        assert list(user.groups) == [*groups, ALL_AUTHENTICATED]
    await storage.close()


def test_expiration() -> None:
    now = parse_rfc3339("2026-11-27T00:00:00Z")

    def data(expiration: str) -> dict[str, str]:
        return {"expiration": base64.b64encode(expiration.encode()).decode()}
    assert bt.expiration({}, now) == (0.0, False)                       # never expires
    assert bt.expiration(data("2026-11-27T00:00:10Z"), now) == (10.0, False)
    assert bt.expiration(data("2026-11-27T01:00:10+01:00"), now) == (10.0, False)
    assert bt.expiration(data("2026-11-27T00:00:00.5Z"), now) == (0.5, False)
    assert bt.expiration(data("2026-11-27T00:00:00Z"), now) == (0.0, True)    # upstream: remaining <= 0
    for unparseable in ("2026-11-27", "2026-11-27T00:00:10", "2026-13-27T00:00:10Z", "soon"):
        assert bt.expiration(data(unparseable), now) == (0.0, True), unparseable


def test_groups_and_names() -> None:
    def data(groups: str) -> dict[str, str]:
        return {"auth-extra-groups": base64.b64encode(groups.encode()).decode()}
    with pytest.raises(ValueError) as err:
        bt.groups(data("system:bootstrappers:ok,system:masters"))
    assert str(err.value) == ('bootstrap group "system:masters" is invalid (must match '
                              r'\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z)')
    with pytest.raises(ValueError):
        bt.groups(data("system:bootstrappers:trailing-"))
    assert bt.parse_name("bootstrap-token-abc123") == "abc123"
    assert bt.parse_name("bootstrap-token-ABC123") is None
    assert bt.parse_name("bootstrap-token-abc1234") is None
    assert bt.parse_token("abc123.0123456789abcdef") == ("abc123", "0123456789abcdef")
    assert bt.parse_token("abc123.0123456789abcdef\n") is None


def test_compute_detached_signature() -> None:
    """Upstream: TestComputeDetachedSignature (cluster-bootstrap token/jws)"""
    content = "Hello from the other side. I must have called a thousand times."
    header = "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9"
    assert bt.compute_detached_signature(content, "joshua", "my voice is my passcode") == \
        f"{header}..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"
    assert bt.compute_detached_signature("", "joshua", "my voice is my passcode") == \
        f"{header}..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"
    assert bt.compute_detached_signature(content, "joshua", "") == \
        f"{header}..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"


# --- in the union -------------------------------------------------------------------------

@pytest.fixture
async def server() -> Any:
    options = dataclasses.replace(WITHOUT_CONTROLLER_MANAGER, enable_bootstrap_token_auth=True)
    api = APIServer(new_storage("memory"), clock=FakeClock(parse_rfc3339("2026-11-27T00:00:00Z")), options=options)
    await api.bootstrap()
    yield api
    await api.storage.close()


async def call(api: APIServer, method: str, path: str, body: Any = None, token: str = "admin") -> Any:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    resp = await api.handle(Request.build(method, path, headers=headers, body=orjson.dumps(body) if body else b""))
    return resp.status, orjson.loads(resp.body) if resp.body else None


async def test_a_bootstrap_token_authenticates_until_its_secret_goes(server: APIServer) -> None:
    server.authenticator.token_file.tokens["admin"] = authenticated("admin")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": TOKEN}}
    status, body = await call(server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert (status, body["status"].get("authenticated"), body["status"].get("error")) == \
        (201, None, "invalid bearer token")
    assert (await call(server, "POST", SECRETS, secret(**VALID)))[0] == 201
    status, body = await call(server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert body["status"]["authenticated"] is True
    assert body["status"]["user"] == {"username": "system:bootstrap:foobar",
                                      "groups": ["system:bootstrappers", ALL_AUTHENTICATED]}
    status, body = await call(server, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                              {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, token=TOKEN)
    assert status == 201 and body["status"]["userInfo"]["username"] == "system:bootstrap:foobar"
    assert (await call(server, "DELETE", f"{SECRETS}/bootstrap-token-foobar"))[0] == 200
    status, body = await call(server, "GET", "/api/v1/namespaces", token=TOKEN)
    assert (status, body["message"]) == (401, "Unauthorized")


async def test_off_unless_enabled() -> None:
    api = APIServer(new_storage("memory"), clock=FakeClock(), options=ServerRunOptions())
    assert api.authenticator.bootstrap is None
    await api.storage.close()
