"""Legacy (Secret-based) service account tokens, as upstream's legacyValidator (legacy.go,
jwt_test.go's legacy cases): valid while the Secret holds the same token and the
ServiceAccount exists with the claimed uid; labelled kubernetes.io/legacy-token-last-used once
a day; refused once labelled kubernetes.io/legacy-token-invalid-since."""
from __future__ import annotations

import base64
from typing import Any

import pytest

from kubeplane.apiserver.authentication.legacy import LAST_USED_LABEL, LEGACY_ISSUER, legacy_claims
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.serviceaccount.jwt import TokenGenerator

from .test_serviceaccount_tokens import NS, refused, who


async def legacy_token(api: Any, secret: str = "sa-token", claims: dict[str, Any] | None = None,
                       store: bool = True) -> tuple[str, dict[str, Any]]:
    """A ServiceAccount "sa", a token for it signed with the server's key and (store) its Secret."""
    got = await api.get(f"{NS}/serviceaccounts/sa")
    sa = got.json if got.status == 200 else (await api.create(f"{NS}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})).json
    key = api.server.service_account_tokens().generator.key
    token = TokenGenerator(LEGACY_ISSUER, key).generate_token(
        claims if claims is not None else legacy_claims("default", "sa", sa["metadata"]["uid"], secret))
    if store:
        r = await api.create(f"{NS}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": secret, "annotations": {"kubernetes.io/service-account.name": "sa"}},
            "data": {"token": base64.b64encode(token.encode()).decode()}})
        assert r.status == 201, r.json
    return token, sa


async def test_a_legacy_token_is_its_service_accounts_user_and_marks_its_secret_used(api: Any) -> None:
    token, sa = await legacy_token(api)
    assert await who(api, token) == UserInfo(
        "system:serviceaccount:default:sa", sa["metadata"]["uid"],
        ("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"))
    secret = (await api.get(f"{NS}/secrets/sa-token")).json
    assert secret["metadata"]["labels"] == {LAST_USED_LABEL: "2023-11-14"}
    rv = secret["metadata"]["resourceVersion"]
    await who(api, token)                                               # the same day: no write
    assert (await api.get(f"{NS}/secrets/sa-token")).json["metadata"]["resourceVersion"] == rv
    api.clock.step(24 * 3600)
    await who(api, token)
    assert (await api.get(f"{NS}/secrets/sa-token")).json["metadata"]["labels"] == {LAST_USED_LABEL: "2023-11-15"}


async def test_a_legacy_token_dies_with_its_secret_or_service_account(api: Any) -> None:
    token, sa = await legacy_token(api)
    await api.call("DELETE", f"{NS}/secrets/sa-token")
    assert await refused(api, token) == "Token has been invalidated"

    token, sa = await legacy_token(api, "other")
    await api.call("DELETE", f"{NS}/serviceaccounts/sa")
    assert await refused(api, token) == 'serviceaccounts "sa" not found'
    await api.create(f"{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})
    uid = (await api.get(f"{NS}/serviceaccounts/sa")).json["metadata"]["uid"]
    assert await refused(api, token) == f"ServiceAccount UID ({uid}) does not match claim ({sa['metadata']['uid']})"


async def test_a_legacy_token_must_match_the_secrets_copy_and_not_be_invalidated(api: Any) -> None:
    token, _ = await legacy_token(api)
    other, _ = await legacy_token(api, "sa-token", store=False)     # signed, same claims, another token?
    assert other == token                                           # deterministic: no jti, no iat
    secret = (await api.get(f"{NS}/secrets/sa-token")).json
    secret["data"]["token"] = base64.b64encode(b"something else").decode()
    assert (await api.call("PUT", f"{NS}/secrets/sa-token", body=secret)).status == 200
    assert await refused(api, token) == "Token does not match server's copy"

    token, _ = await legacy_token(api, "revoked")
    secret = (await api.get(f"{NS}/secrets/revoked")).json
    secret["metadata"]["labels"] = {"kubernetes.io/legacy-token-invalid-since": "2023-10-01"}
    assert (await api.call("PUT", f"{NS}/secrets/revoked", body=secret)).status == 200
    assert await refused(api, token) == "Token has been invalidated"


@pytest.mark.parametrize("drop,error", [
    ("sub", "sub claim is missing"),
    ("kubernetes.io/serviceaccount/namespace", "namespace claim is missing"),
    ("kubernetes.io/serviceaccount/secret.name", "secretName claim is missing"),
    ("kubernetes.io/serviceaccount/service-account.name", "serviceAccountName claim is missing"),
    ("kubernetes.io/serviceaccount/service-account.uid", "serviceAccountUID claim is missing"),
])
async def test_missing_claims(api: Any, drop: str, error: str) -> None:
    claims = legacy_claims("default", "sa", "uid", "sa-token")
    del claims[drop]
    token, _ = await legacy_token(api, claims=claims, store=False)
    assert await refused(api, token) == error


async def test_a_subject_naming_another_account_is_invalid(api: Any) -> None:
    claims = legacy_claims("default", "sa", "uid", "sa-token")
    claims["sub"] = "system:serviceaccount:default:admin"
    token, _ = await legacy_token(api, claims=claims, store=False)
    assert await refused(api, token) == "sub claim is invalid"
