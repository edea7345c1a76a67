"""Legacy service account tokens: the JWTs the tokens controller writes into Secrets of type
kubernetes.io/service-account-token (issuer kubernetes/serviceaccount, no expiry, no audience).
They stay valid only while the Secret exists, is not being deleted, still holds the same token
and is not labelled invalid, and while the ServiceAccount exists with the claimed uid. Each day
a token is used, its Secret gets the label kubernetes.io/legacy-token-last-used=<date>
(LegacyServiceAccountTokenTracking, GA), written by the API server itself.

Upstream: pkg/serviceaccount/legacy.go (LegacyClaims, legacyPrivateClaims,
legacyValidator.Validate) and the legacy JWTTokenAuthenticator of
pkg/kubeapiserver/authenticator/config.go (issuer serviceaccount.LegacyIssuer).
"""
from __future__ import annotations

import base64
import binascii
import datetime as dt
import logging
from typing import Any

from ...serviceaccount.claims import SERVICE_ACCOUNT_USERNAME_PREFIX
from ...serviceaccount.legacy import (
    INVALID_SINCE_LABEL, LAST_USED_LABEL, LEGACY_ISSUER, NAMESPACE_CLAIM, SECRET_NAME_CLAIM, SECRET_TYPE,
    SERVICE_ACCOUNT_NAME_CLAIM, SERVICE_ACCOUNT_UID_CLAIM, legacy_claims,
)
from .serviceaccount import (
    ALL_AUTHENTICATED, JWTTokenAuthenticator, Ref, TokenError, UserInfo, Verified, make_group_names,
    split_username,
)

__all__ = ["LEGACY_ISSUER", "SECRET_TYPE", "legacy_claims", "verified", "validate", "last_used_writer"]

log = logging.getLogger(__name__)



def _claim(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key, "")
    return value if isinstance(value, str) else ""


def verified(payload: dict[str, Any]) -> Verified:
    """A legacy token's claims, checked as upstream's legacyValidator checks them before any
    lookup (TokenError "... claim is missing", "sub claim is invalid")."""
    sub = _claim(payload, "sub")
    ns, secret = _claim(payload, NAMESPACE_CLAIM), _claim(payload, SECRET_NAME_CLAIM)
    sa, sa_uid = _claim(payload, SERVICE_ACCOUNT_NAME_CLAIM), _claim(payload, SERVICE_ACCOUNT_UID_CLAIM)
    for value, what in ((sub, "sub"), (ns, "namespace"), (secret, "secretName"), (sa, "serviceAccountName"),
                        (sa_uid, "serviceAccountUID")):
        if not value:
            raise TokenError(f"{what} claim is missing")
    if split_username(sub) != (ns, sa):
        raise TokenError("sub claim is invalid")
    user = UserInfo(f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{ns}:{sa}", sa_uid, (*make_group_names(ns), ALL_AUTHENTICATED))
    return Verified((), None, None, None, ns, Ref(sa, sa_uid), None, Ref(secret, ""), None, user, legacy=True)


async def validate(authn: JWTTokenAuthenticator, token: str, v: Verified) -> None:
    """Upstream: legacyValidator.Validate with lookup (every request)."""
    assert v.secret is not None
    ns, sa = v.namespace, v.service_account
    try:
        secret = await authn._get("secrets", ns, v.secret.name)
    except TokenError:
        raise TokenError("Token has been invalidated") from None
    meta = secret.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        raise TokenError("Token has been invalidated")
    if _token_of(secret) != token.encode():
        raise TokenError("Token does not match server's copy")
    obj = await authn._get("serviceaccounts", ns, sa.name)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        raise TokenError(f"ServiceAccount {ns}/{sa.name} has been deleted")
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    if uid != sa.uid:
        raise TokenError(f"ServiceAccount UID ({uid}) does not match claim ({sa.uid})")
    labels = meta.get("labels") or {}
    if labels.get(INVALID_SINCE_LABEL):
        log.error("Tried to use a legacy service account token that has been invalidated",
                  extra={"secret": f"{ns}/{v.secret.name}", "serviceAccount": f"{ns}/{sa.name}"})
        raise TokenError("Token has been invalidated")
    today = dt.datetime.fromtimestamp(authn.clock.now(), dt.UTC).strftime("%Y-%m-%d")
    if labels.get(LAST_USED_LABEL) != today and authn.secrets_writer is not None:
        try:
            await authn.secrets_writer(ns, v.secret.name, today)
        except Exception as err:        # upstream logs it; the request goes on
            log.error("Failed to label legacy service account token secret with last-used: %s", err)


def _token_of(secret: dict[str, Any]) -> bytes:
    data = secret.get("data") or {}
    try:
        return base64.b64decode(data.get("token") or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        return b""


def last_used_writer(api: Any) -> Any:
    """What labels a Secret with today's date, as the API server's loopback client does (a full
    update: admission, validation, managedFields of kube-apiserver)."""
    async def write(ns: str, name: str, today: str) -> None:
        import copy

        from ...api.resources import lookup
        from ..registry import store
        from .user import APISERVER
        ri = lookup("", "v1", "secrets")
        assert ri is not None
        kv = await api.storage.get(ri.key(ns, name))
        if kv is None:
            return
        new = copy.deepcopy(kv.obj)
        new.setdefault("metadata", {}).setdefault("labels", {})[LAST_USED_LABEL] = today
        await store.update(api, store.WriteOptions(user=APISERVER, user_agent="kube-apiserver"), ri, new, kv.obj,
                           kv.mod_revision, "", [])
    return write
