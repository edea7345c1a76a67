"""SelfSubjectReviews and TokenReviews: answered from the request's user and the server's token
table, never stored (registry/review.py).
Upstream: pkg/registry/authentication/{selfsubjectreview,tokenreview}/rest.go."""
from __future__ import annotations

import hmac
from typing import Any

from ....api import errors
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj

GROUP = "authentication.k8s.io"
# The API server's audience (upstream: --api-audiences defaults to the service account issuer).
API_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]


def self_subject_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: selfsubjectreview REST.Create — the requesting user."""
    obj["status"] = {"userInfo": req.user.to_dict()}
    return obj


def token_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: tokenreview REST.Create — authenticated when the token is in the token table."""
    spec = obj.get("spec") or {}
    token = spec.get("token") or ""
    if not token:
        raise errors.BadRequest("token is required for TokenReview in authentication")
    # Bytes: compare_digest refuses non-ASCII str, and any string can arrive in a body.
    given = token.encode()
    user = next((u for known, u in api.token_users.items() if hmac.compare_digest(known.encode(), given)), None)
    if user is None:
        obj["status"] = {"user": {}}
        return obj
    audiences = spec.get("audiences") or API_AUDIENCES
    if not set(audiences) & set(API_AUDIENCES):
        obj["status"] = {"user": {}, "error": "token audiences " + _go_list(audiences) +
                         " is invalid for the target audiences " + _go_list(API_AUDIENCES)}
        return obj
    obj["status"] = {"authenticated": True, "user": user.to_dict(),
                     "audiences": [a for a in audiences if a in API_AUDIENCES]}
    return obj


def _go_list(xs: list[str]) -> str:
    return "[" + " ".join(f'"{x}"' for x in xs) + "]"


SELF_SUBJECT_REVIEWS = register(ResourceDefinition(
    GROUP, "v1", "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview", False,
    "io.k8s.api.authentication.v1.SelfSubjectReview", verbs=("create",),
    review=self_subject_review,
))

TOKEN_REVIEWS = register(ResourceDefinition(
    GROUP, "v1", "TokenReview", "tokenreviews", "tokenreview", False,
    "io.k8s.api.authentication.v1.TokenReview", verbs=("create",),
    review=token_review,
))
