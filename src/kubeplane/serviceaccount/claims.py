"""The claims of a service account token.

    {"aud": [...], "exp": ..., "iat": ..., "iss": ..., "jti": "<uuid>", "nbf": ...,
     "sub": "system:serviceaccount:NS:NAME",
     "kubernetes.io": {"namespace": NS, "serviceaccount": {"name", "uid"},
                       "pod"|"secret"|"node": {"name", "uid"}, "node" (a pod's, when known),
                       "warnafter": ...}}

iss is the generator's (jwt.py). Times are whole seconds since the epoch (go-jose's
NumericDate). ServiceAccountTokenJTI, ServiceAccountTokenPodNodeInfo and
ServiceAccountTokenNodeBinding are GA (on) in 1.37.

Upstream: pkg/serviceaccount/claims.go (Claims), k8s.io/apiserver
pkg/authentication/serviceaccount (MakeUsername).
"""
from __future__ import annotations

import math
import uuid
from typing import Any

Obj = dict[str, Any]

# Upstream: WarnOnlyBoundTokenExpirationSeconds, ExpirationExtensionSeconds (claims.go)
WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 60 * 60 + 7
EXPIRATION_EXTENSION_SECONDS = 24 * 365 * 60 * 60
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"


def make_username(namespace: str, name: str) -> str:
    """Upstream: serviceaccount.MakeUsername"""
    return f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}"


def _ref(obj: Obj) -> Obj:
    """Upstream: ref{Name, UID} with omitempty on both."""
    meta = obj.get("metadata") or {}
    return {k: v for k, v in (("name", meta.get("name")), ("uid", meta.get("uid"))) if v}


def claims(sa: Obj, pod: Obj | None, secret: Obj | None, node: Obj | None, expiration_seconds: int,
           warnafter: int, audiences: list[str], now: float, jti: str | None = None) -> Obj:
    """The token's claims (all but iss). Upstream: Claims

    A pod-bound token carries its node too when the caller found it; a secret cannot be bound
    with a pod or a node (upstream's "internal error"); a node alone is a node-bound token.
    """
    if secret is not None and (node is not None or pod is not None):
        raise ValueError("internal error, token can only be bound to one object type")
    t = math.floor(now)
    meta = sa.get("metadata") or {}
    k8s: Obj = {"namespace": meta.get("namespace", ""), "serviceaccount": _ref(sa)}
    if not k8s["namespace"]:
        del k8s["namespace"]
    if pod is not None:
        k8s["pod"] = _ref(pod)
        if node is not None:
            k8s["node"] = _ref(node)
    elif secret is not None:
        k8s["secret"] = _ref(secret)
    elif node is not None:
        k8s["node"] = _ref(node)
    if warnafter:
        k8s["warnafter"] = t + warnafter
    return {"aud": list(audiences), "exp": t + expiration_seconds, "iat": t, "nbf": t,
            "jti": jti if jti is not None else str(uuid.uuid4()),
            "sub": make_username(meta.get("namespace", ""), meta.get("name", "")),
            "kubernetes.io": k8s}
