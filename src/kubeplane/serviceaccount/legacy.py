"""The claims of a legacy (Secret-based) service account token, shared by the tokens controller
that mints them and the authenticator that checks them (apiserver/authentication/legacy.py).
Upstream: pkg/serviceaccount/legacy.go (LegacyIssuer, LegacyClaims, legacyPrivateClaims)."""
from __future__ import annotations

from .claims import SERVICE_ACCOUNT_USERNAME_PREFIX

LEGACY_ISSUER = "kubernetes/serviceaccount"
SECRET_TYPE = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_CLAIM = "kubernetes.io/serviceaccount/service-account.name"
SERVICE_ACCOUNT_UID_CLAIM = "kubernetes.io/serviceaccount/service-account.uid"
SECRET_NAME_CLAIM = "kubernetes.io/serviceaccount/secret.name"
NAMESPACE_CLAIM = "kubernetes.io/serviceaccount/namespace"
# Upstream: LastUsedLabelKey, InvalidSinceLabelKey (pkg/serviceaccount/legacy.go): the day a
# legacy token was last used (the API server writes it), and since when it is invalid (the
# legacy token cleaner writes it; the authenticator refuses such a token).
LAST_USED_LABEL = "kubernetes.io/legacy-token-last-used"
INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"


def legacy_claims(sa_namespace: str, sa_name: str, sa_uid: str, secret_name: str) -> dict[str, str]:
    """The payload (without iss) of a Secret's token: no expiry, no audience. Upstream: LegacyClaims"""
    return {"sub": f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{sa_namespace}:{sa_name}",
            NAMESPACE_CLAIM: sa_namespace, SECRET_NAME_CLAIM: secret_name,
            SERVICE_ACCOUNT_NAME_CLAIM: sa_name, SERVICE_ACCOUNT_UID_CLAIM: sa_uid}
