"""Service account tokens validated on every request, as upstream's JWTTokenAuthenticator and
its validator (jwt_test.go, claims_test.go): the user, audiences, times with the one-minute
leeway, a deleted or recreated ServiceAccount or bound Pod/Secret/Node, forged or malformed
tokens (401, never 500), and the signature cache."""
from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.authentication import serviceaccount as sa_authn
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.request import Request
from kubeplane.serviceaccount.jwt import TokenGenerator, generate_key

NS = "/api/v1/namespaces/default"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


async def mint(api: Any, name: str = "sa", **spec: Any) -> str:
    r = await api.create(f"{NS}/serviceaccounts/{name}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    assert r.status == 201, r.json
    return str(r.json["status"]["token"])


async def who(api: Any, token: str) -> UserInfo:
    req = Request.build("GET", "/api/v1/namespaces", headers={"authorization": f"Bearer {token}"})
    await api.server.authenticate(req)
    return req.user


async def refused(api: Any, token: str) -> str:
    """The 401's TokenReview error for a token a request is refused with."""
    with pytest.raises(errors.StatusError) as e:
        await who(api, token)
    assert (e.value.code, e.value.reason, e.value.message) == (401, "Unauthorized", "Unauthorized")
    error = (await api.server.authenticator.authenticate_token(token)).error
    if error == "invalid bearer token":               # not a service account token of ours
        return error
    assert error.startswith("[invalid bearer token, ") and error.endswith("]"), error
    return error[len("[invalid bearer token, "):-1]


@pytest.fixture
async def sa(api: Any) -> dict[str, Any]:
    r = await api.create(f"{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})
    return r.json


async def test_a_token_is_its_service_accounts_user(api: Any, sa: dict[str, Any]) -> None:
    token = await mint(api)
    jti = orjson.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["jti"]
    assert await who(api, token) == UserInfo(
        "system:serviceaccount:default:sa", sa["metadata"]["uid"],
        ("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"),
        (("authentication.kubernetes.io/credential-id", (f"JTI={jti}",)),))


async def test_a_pod_bound_token_names_its_pod_and_node_and_dies_with_the_pod(api: Any, sa: dict[str, Any]) -> None:
    node = (await api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})).json
    p = (await api.create(f"{NS}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                         "spec": {"serviceAccountName": "sa", "nodeName": "n1",
                                                  "containers": [{"name": "c", "image": "i"}]}})).json
    token = await mint(api, boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "p"})
    extra = dict((await who(api, token)).extra)
    assert extra["authentication.kubernetes.io/pod-name"] == ("p",)
    assert extra["authentication.kubernetes.io/pod-uid"] == (p["metadata"]["uid"],)
    assert extra["authentication.kubernetes.io/node-name"] == ("n1",)
    assert extra["authentication.kubernetes.io/node-uid"] == (node["metadata"]["uid"],)
    assert (await api.call("DELETE", f"{NS}/pods/p", {"gracePeriodSeconds": "0"})).status == 200
    assert await refused(api, token) == 'pods "p" not found'


async def test_a_deleted_or_recreated_service_account_ends_its_tokens(api: Any, sa: dict[str, Any]) -> None:
    token = await mint(api)
    await who(api, token)                                  # cached now: the checks still run
    assert (await api.call("DELETE", f"{NS}/serviceaccounts/sa")).status == 200
    assert await refused(api, token) == 'serviceaccounts "sa" not found'
    new = (await api.create(f"{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                      "metadata": {"name": "sa"}})).json
    assert await refused(api, token) == (f"service account UID ({new['metadata']['uid']}) does not match claim "
                                         f"({sa['metadata']['uid']})")


async def test_a_secret_bound_token_dies_with_the_secret(api: Any, sa: dict[str, Any]) -> None:
    await api.create(f"{NS}/secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    token = await mint(api, boundObjectRef={"apiVersion": "v1", "kind": "Secret", "name": "s"})
    assert (await who(api, token)).name == "system:serviceaccount:default:sa"
    await api.call("DELETE", f"{NS}/secrets/s")
    assert await refused(api, token) == 'secrets "s" not found'


async def test_expiry_has_a_minute_of_leeway(api: Any, sa: dict[str, Any]) -> None:
    token = await mint(api, expirationSeconds=600)
    api.clock.step(600 + 60)
    assert (await who(api, token)).name == "system:serviceaccount:default:sa"
    api.clock.step(1)
    assert await refused(api, token) == "service account token has expired"


async def test_a_token_not_yet_valid_or_issued_in_the_future(api: Any, sa: dict[str, Any]) -> None:
    """Signed with the server's own key (only the key's holder can make these)."""
    claims = orjson.loads(base64.urlsafe_b64decode((await mint(api)).split(".")[1] + "=="))
    claims.pop("iss")
    sign = api.server.service_account_tokens().generator.generate_token
    now = api.clock.now()
    assert (await who(api, sign({**claims, "nbf": now + 60, "iat": now + 60}))).name.endswith(":sa")
    assert await refused(api, sign({**claims, "nbf": now + 61})) == "service account token is not valid yet"
    assert await refused(api, sign({**claims, "iat": now + 61})) == "service account token is issued in the future"
    assert await refused(api, sign({**claims, "exp": "soon"})) == "go-jose/go-jose/jwt: expected number for NumericDate"


@pytest.mark.parametrize("audiences,error", [
    (["other"], 'token audiences ["other"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]'),
])
async def test_a_token_for_other_audiences_is_refused(api: Any, sa: dict[str, Any], audiences: list[str],
                                                      error: str) -> None:
    assert await refused(api, await mint(api, audiences=audiences)) == error


async def test_the_review_audiences_decide(api: Any, sa: dict[str, Any]) -> None:
    token = await mint(api, audiences=["vault", ISSUER])
    resp = await api.server.authenticator.authenticate_token(token, ("vault",))
    assert resp.user is not None and resp.audiences == ("vault",)


def forged(claims: dict[str, Any], alg: str = "RS256", key: Any = None, issuer: str = ISSUER) -> str:
    if alg == "RS256":
        return TokenGenerator(issuer, key or generate_key()).generate_token(claims)
    header = b64(orjson.dumps({"alg": alg}))
    payload = b64(orjson.dumps({**claims, "iss": issuer}))
    return f"{header}.{payload}."


async def test_forged_and_malformed_tokens_are_401(api: Any, sa: dict[str, Any]) -> None:
    real = await mint(api)
    h, p, s = real.split(".")
    claims = orjson.loads(base64.urlsafe_b64decode(p + "=="))
    claims.pop("iss")
    assert await refused(api, forged(claims)) == sa_authn.CRYPTO_FAILURE          # another key
    assert await refused(api, forged(claims, "none")) == "invalid bearer token"     # alg none: not a JWT
    assert await refused(api, forged(claims, "HS256")) == "invalid bearer token"
    tampered = b64(orjson.dumps({**claims, "iss": ISSUER, "sub": "system:serviceaccount:kube-system:admin"}))
    assert await refused(api, f"{h}.{tampered}.{s}") == sa_authn.CRYPTO_FAILURE
    assert await refused(api, f"{h}.{p}.{s[:-4]}") == sa_authn.CRYPTO_FAILURE
    assert await refused(api, forged(claims, issuer="https://evil")) == "invalid bearer token"  # not ours
    for garbage in ("a.b.c", "....", "x" * 100_000, f"{h}.{p}", f"{h}.{p}.{s}.x", f"{h}.{p}.!!!", "e30.e30.e30",
                    f"{b64(b'[]')}.{p}.{s}", "eyJ.eyJ.eyJ", "\u00e9.\u00e9.\u00e9",
                    *(f"{h}.{b64(orjson.dumps({'iss': bad}))}.{s}" for bad in ([], {}, 1, None)),
                    *(f"{b64(orjson.dumps({'alg': bad}))}.{p}.{s}" for bad in ([], {}, 1, None))):
        assert await refused(api, garbage) == "invalid bearer token"


async def test_a_signature_is_verified_once_then_cached(api: Any, sa: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    token = await mint(api)
    calls = []
    verify = sa_authn.JWTTokenAuthenticator._verify
    monkeypatch.setattr(sa_authn.JWTTokenAuthenticator, "_verify", lambda self, t: calls.append(t) or verify(self, t))
    for _ in range(3):
        await who(api, token)
    assert calls == [token]


async def test_the_cache_is_bounded(api: Any, sa: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sa_authn, "CACHE_SIZE", 2)
    tokens = [await mint(api) for _ in range(3)]
    for t in tokens:
        await who(api, t)
    assert list(api.server.authenticator.service_accounts.cache) == tokens[1:]


@pytest.mark.parametrize("curve", ["SECP256R1", "SECP384R1", "SECP521R1"])
def test_ec_signatures_verify_with_their_curves_alg_only(curve: str) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from kubeplane.serviceaccount.jwt import verify_signature
    key = ec.generate_private_key(getattr(ec, curve)())
    gen = TokenGenerator(ISSUER, key)
    h, p, s = gen.generate_token({"sub": "x"}).split(".")
    sig = sa_authn._b64decode(s)
    assert verify_signature(key.public_key(), gen.alg, f"{h}.{p}".encode(), sig)
    assert not verify_signature(key.public_key(), "RS256", f"{h}.{p}".encode(), sig)
    assert not verify_signature(key.public_key(), gen.alg, f"{h}.{p}x".encode(), sig)
    assert not verify_signature(key.public_key(), gen.alg, f"{h}.{p}".encode(), sig[:-1])


def test_rsa_pss_signatures_verify() -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    from kubeplane.serviceaccount.jwt import verify_signature
    key = generate_key()
    data = b"header.payload"
    sig = key.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48), hashes.SHA384())
    assert verify_signature(key.public_key(), "PS384", data, sig)
    assert not verify_signature(key.public_key(), "PS256", data, sig)
    assert not verify_signature(key.public_key(), "ES256", data, sig)
