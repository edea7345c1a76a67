"""serviceaccounts/token as upstream's TokenREST answers (token_test.go's cases, the
ValidateTokenRequest messages, the claims of claims_test.go), the JWT checked against the
signing key with PyJWT-independent code (cryptography)."""
from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.serviceaccount import claims as sa_claims
from kubeplane.serviceaccount.jwt import TokenGenerator, key_id

from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

START = 1_700_000_000          # the api fixture's clock (2023-11-14T22:13:20Z)


def pod(name: str, node: str = "", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **({"nodeName": node} if node else {}), **spec}}

NS = "/api/v1/namespaces/default"
TOKEN = f"{NS}/serviceaccounts/sa/token"


def token_request(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def decode(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header, payload, _ = token.split(".")
    return json.loads(b64decode(header)), json.loads(b64decode(payload))


def verify(token: str, public_key: Any) -> None:
    """Raises cryptography's InvalidSignature unless token is signed by public_key."""
    signing_input, _, sig = token.rpartition(".")
    if isinstance(public_key, rsa.RSAPublicKey):
        public_key.verify(b64decode(sig), signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    else:
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
        raw = b64decode(sig)
        r, s = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
        public_key.verify(encode_dss_signature(r, s), signing_input.encode(), ec.ECDSA(hashes.SHA256()))


@pytest.fixture
async def sa(api) -> dict[str, Any]:
    r = await api.create(f"{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": {"name": "sa"}})
    assert r.status == 201
    return r.json


@pytest.fixture
async def sa_api_with(api, clock):
    """A server with the given options and the service account "sa"."""
    servers = []

    async def make(options: ServerRunOptions) -> Any:
        server = APIServer(new_storage("memory"), clock=clock, options=options)
        await server.bootstrap()
        servers.append(server)
        a = type(api)(server, clock)
        await a.create(f"{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})
        return a
    yield make
    for server in servers:
        await server.storage.close()


async def test_defaults_and_claims(api, sa) -> None:
    r = await api.create(TOKEN, token_request())
    assert r.status == 201, r.json
    tr = r.json
    assert tr["metadata"] == {"name": "sa", "namespace": "default", "uid": sa["metadata"]["uid"],
                              "creationTimestamp": "2023-11-14T22:13:20Z"}
    assert tr["spec"] == {"audiences": ["https://kubernetes.default.svc.cluster.local"], "expirationSeconds": 3600}
    assert tr["status"]["expirationTimestamp"] == "2023-11-14T23:13:20Z"
    header, claims = decode(tr["status"]["token"])
    key = api.server.service_account_tokens().generator.key
    assert header == {"alg": "RS256", "kid": key_id(key.public_key())}
    assert list(claims) == sorted(claims)            # go-jose marshals a map: sorted keys
    jti = claims.pop("jti")
    assert len(jti) == 36 and jti.count("-") == 4
    assert claims == {
        "aud": ["https://kubernetes.default.svc.cluster.local"], "exp": int(START) + 3600,
        "iat": int(START), "iss": "https://kubernetes.default.svc.cluster.local", "nbf": int(START),
        "sub": "system:serviceaccount:default:sa",
        "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "sa", "uid": sa["metadata"]["uid"]}}}
    verify(tr["status"]["token"], key.public_key())


async def test_signature_fails_for_another_key_or_a_changed_payload(api, sa) -> None:
    from cryptography.exceptions import InvalidSignature
    token = (await api.create(TOKEN, token_request())).json["status"]["token"]
    with pytest.raises(InvalidSignature):
        verify(token, rsa.generate_private_key(65537, 2048).public_key())
    h, p, s = token.split(".")
    forged = base64.urlsafe_b64encode(b64decode(p).replace(b'"sa"', b'"xx"')).rstrip(b"=").decode()
    with pytest.raises(InvalidSignature):
        verify(f"{h}.{forged}.{s}", api.server.service_account_tokens().generator.key.public_key())


@pytest.mark.parametrize("exp,message", [
    (599, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"),
    ((1 << 32) + 1, "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger "
                    "than 2^32 seconds"),
])
async def test_expiration_bounds(api, sa, exp: int, message: str) -> None:
    r = await api.create(TOKEN, token_request(expirationSeconds=exp))
    assert r.status == 422
    assert r.json["message"] == f'TokenRequest.authentication.k8s.io "" is invalid: {message}'
    assert r.json["details"]["causes"][0]["field"] == "spec.expirationSeconds"


async def test_bounds_accepted(api, sa) -> None:
    for exp in (600, 1 << 32):
        r = await api.create(TOKEN, token_request(expirationSeconds=exp))
        assert r.status == 201, r.json
        assert decode(r.json["status"]["token"])[1]["exp"] == int(START) + exp


async def test_audiences_as_asked(api, sa) -> None:
    r = await api.create(TOKEN, token_request(audiences=["a", "b"]))
    assert decode(r.json["status"]["token"])[1]["aud"] == ["a", "b"]


async def test_missing_service_account(api) -> None:
    r = await api.create(TOKEN, token_request())
    assert r.status == 404 and r.json["message"] == 'serviceaccounts "sa" not found'


async def test_name_and_uid_must_match(api, sa) -> None:
    body = token_request()
    body["metadata"] = {"name": "other"}
    r = await api.create(TOKEN, body)
    assert r.status == 422
    assert r.json["message"] == ('TokenRequest.authentication.k8s.io "sa" is invalid: metadata.name: Invalid value: '
                                 '"other": must match the service account name if specified')
    body["metadata"] = {"uid": "not-it"}
    r = await api.create(TOKEN, body)
    assert r.status == 409
    assert r.json["message"] == (f'Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "sa": the UID '
                                 f'in the token request (not-it) does not match the UID of the service account '
                                 f'({sa["metadata"]["uid"]})')
    body["metadata"] = {"namespace": "kube-system"}
    r = await api.create(TOKEN, body)
    assert r.status == 400


async def test_bound_to_pod_carries_pod_and_node(api, sa) -> None:
    node = (await api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})).json
    p = (await api.create(f"{NS}/pods", pod("p", serviceAccountName="sa", node="n1"))).json
    r = await api.create(TOKEN, token_request(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"}))
    assert r.status == 201, r.json
    k8s = decode(r.json["status"]["token"])[1]["kubernetes.io"]
    assert k8s["pod"] == {"name": "p", "uid": p["metadata"]["uid"]}
    assert k8s["node"] == {"name": "n1", "uid": node["metadata"]["uid"]}
    # upstream's uid check: a stale uid is a conflict on the kind
    r = await api.create(TOKEN, token_request(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p",
                                                              "uid": "old"}))
    assert r.status == 409
    assert r.json["message"] == ('Operation cannot be fulfilled on Pod "p": the UID in the bound object reference '
                                 '(old) does not match the UID in record. The object might have been deleted and '
                                 'then recreated')


async def test_pod_of_another_service_account(api, sa) -> None:
    await api.create(f"{NS}/pods", pod("p", serviceAccountName="other"))
    r = await api.create(TOKEN, token_request(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"}))
    assert r.status == 400
    assert r.json["message"] == ('cannot bind token for serviceaccount "sa" to pod running with different '
                                 'serviceaccount name.')


async def test_pod_on_a_missing_node_names_the_node(api, sa) -> None:
    await api.create(f"{NS}/pods", pod("p", serviceAccountName="sa", node="gone"))
    r = await api.create(TOKEN, token_request(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"}))
    assert decode(r.json["status"]["token"])[1]["kubernetes.io"]["node"] == {"name": "gone"}


async def test_bound_to_secret_and_node(api, sa) -> None:
    secret = (await api.create(f"{NS}/secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})).json
    r = await api.create(TOKEN, token_request(boundObjectRef={"kind": "Secret", "apiVersion": "v1", "name": "s"}))
    k8s = decode(r.json["status"]["token"])[1]["kubernetes.io"]
    assert k8s["secret"] == {"name": "s", "uid": secret["metadata"]["uid"]} and "pod" not in k8s
    node = (await api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})).json
    r = await api.create(TOKEN, token_request(boundObjectRef={"kind": "Node", "apiVersion": "v1", "name": "n1"}))
    assert decode(r.json["status"]["token"])[1]["kubernetes.io"]["node"] == {"name": "n1", "uid": node["metadata"]["uid"]}


@pytest.mark.parametrize("ref,status,message", [
    ({"kind": "Pod", "apiVersion": "v1", "name": "nope"}, 404, 'pods "nope" not found'),
    ({"kind": "Secret", "apiVersion": "v1", "name": "nope"}, 404, 'secrets "nope" not found'),
    ({"kind": "Node", "apiVersion": "v1", "name": "nope"}, 404, 'nodes "nope" not found'),
    ({"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}, 400, "cannot bind token to object of type /v1, Kind=ConfigMap"),
    ({"kind": "Pod", "apiVersion": "apps/v1", "name": "x"}, 400, "cannot bind token to object of type apps/v1, Kind=Pod"),
])
async def test_bound_object_errors(api, sa, ref: dict[str, str], status: int, message: str) -> None:
    r = await api.create(TOKEN, token_request(boundObjectRef=ref))
    assert (r.status, r.json["message"]) == (status, message)


async def test_attestations_need_a_webhook_ref(api, sa) -> None:
    r = await api.create(TOKEN, token_request(attestations={"admissionReviewAPIGroups": ["apps"]}))
    assert r.status == 422
    assert r.json["message"].endswith('spec.attestations: Invalid value: {"admissionReviewAPIGroups":["apps"]}: '
                                      'attestations may only be specified with a webhook bound object reference')


async def test_max_expiration_shortens_with_a_warning(clock, sa_api_with) -> None:
    api = await sa_api_with(ServerRunOptions(service_account_max_token_expiration=7200,
                                             disable_admission_plugins=frozenset({"ServiceAccount"})))
    r = await api.create(TOKEN, token_request(expirationSeconds=10_000))
    assert r.status == 201
    assert r.json["spec"]["expirationSeconds"] == 7200
    assert decode(r.json["status"]["token"])[1]["exp"] == int(START) + 7200
    assert ("warning", '299 - "requested expiration of 10000 seconds shortened to 7200 seconds"') in r.headers


async def test_projected_volume_token_is_extended(api, sa) -> None:
    """A pod-bound 3607 s token for the API server's audience: valid a year, warnafter at 3607 s."""
    await api.create(f"{NS}/pods", pod("p", serviceAccountName="sa"))
    r = await api.create(TOKEN, token_request(expirationSeconds=3607,
                                              boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"}))
    c = decode(r.json["status"]["token"])[1]
    assert c["exp"] == int(START) + sa_claims.EXPIRATION_EXTENSION_SECONDS
    assert c["kubernetes.io"]["warnafter"] == int(START) + 3607
    assert r.json["status"]["expirationTimestamp"] == "2023-11-14T23:13:27Z"     # as asked, not extended
    r = await api.create(TOKEN, token_request(expirationSeconds=3607, audiences=["other"],
                                              boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "p"}))
    assert decode(r.json["status"]["token"])[1]["exp"] == int(START) + 3607


async def test_only_create(api, sa) -> None:
    r = await api.get(TOKEN)
    assert r.status == 405


def test_claims_table() -> None:
    """claims_test.go TestClaims: the shapes for no binding, a pod, a secret, a node; warnafter."""
    sa = {"metadata": {"name": "myserviceaccount", "namespace": "myns", "uid": "mysauid"}}
    pod_ = {"metadata": {"name": "mypod", "uid": "mypoduid"}}
    secret = {"metadata": {"name": "mysecret", "uid": "mysecretuid"}}
    node = {"metadata": {"name": "mynode", "uid": "mynodeuid"}}
    now = 1514764800.0
    base = {"sub": "system:serviceaccount:myns:myserviceaccount", "aud": ["1"], "iat": 1514764800,
            "nbf": 1514764800, "exp": 1514764800 + 100, "jti": "fixed"}
    sa_ref = {"namespace": "myns", "serviceaccount": {"name": "myserviceaccount", "uid": "mysauid"}}
    c = sa_claims.claims(sa, None, None, None, 100, 0, ["1"], now, jti="fixed")
    assert c == {**base, "kubernetes.io": sa_ref}
    c = sa_claims.claims(sa, pod_, None, None, 100, 0, ["1"], now, jti="fixed")
    assert c["kubernetes.io"] == {**sa_ref, "pod": {"name": "mypod", "uid": "mypoduid"}}
    c = sa_claims.claims(sa, None, secret, None, 100, 0, ["1"], now, jti="fixed")
    assert c["kubernetes.io"] == {**sa_ref, "secret": {"name": "mysecret", "uid": "mysecretuid"}}
    c = sa_claims.claims(sa, None, None, node, 100, 0, ["1"], now, jti="fixed")
    assert c["kubernetes.io"] == {**sa_ref, "node": {"name": "mynode", "uid": "mynodeuid"}}
    c = sa_claims.claims(sa, pod_, None, node, 100, 0, ["1"], now, jti="fixed")
    assert c["kubernetes.io"]["node"] == {"name": "mynode", "uid": "mynodeuid"}
    c = sa_claims.claims(sa, pod_, None, None, 60 * 60 * 24, 60 * 60, ["1"], now, jti="fixed")
    assert c["exp"] == 1514764800 + 86400 and c["kubernetes.io"]["warnafter"] == 1514764800 + 3600
    with pytest.raises(ValueError, match="token can only be bound to one object type"):
        sa_claims.claims(sa, pod_, secret, None, 100, 0, ["1"], now)


def test_es256_signature_and_jwks() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    gen = TokenGenerator("https://issuer", key)
    token = gen.generate_token({"sub": "x"})
    header, claims = decode(token)
    assert header["alg"] == "ES256" and claims == {"iss": "https://issuer", "sub": "x"}
    assert len(b64decode(token.split(".")[2])) == 64           # r||s, not DER
    verify(token, key.public_key())
    jwk = gen.jwks()["keys"][0]
    assert (jwk["kty"], jwk["crv"], jwk["alg"], jwk["use"], jwk["kid"]) == ("EC", "P-256", "ES256", "sig", gen.kid)
    x = int.from_bytes(b64decode(jwk["x"]), "big")
    assert x == key.public_key().public_numbers().x


async def test_issuer_discovery_documents(api) -> None:
    r = await api.get("/.well-known/openid-configuration")
    assert r.status == 200 and ("cache-control", "public, max-age=3600") in r.headers
    assert r.json == {"issuer": "https://kubernetes.default.svc.cluster.local",
                      "jwks_uri": f"https://{api.server.server_address}/openid/v1/jwks",
                      "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                      "id_token_signing_alg_values_supported": ["RS256"]}
    r = await api.get("/openid/v1/jwks")
    assert r.status == 200 and r.content_type == "application/jwk-set+json"
    (jwk,) = r.json["keys"]
    pub = api.server.service_account_tokens().generator.key.public_key()
    assert list(jwk) == ["use", "kty", "kid", "alg", "n", "e"]
    assert (jwk["kty"], jwk["alg"], jwk["kid"], jwk["e"]) == ("RSA", "RS256", key_id(pub), "AQAB")
    assert int.from_bytes(b64decode(jwk["n"]), "big") == pub.public_numbers().n
