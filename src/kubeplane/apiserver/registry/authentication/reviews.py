"""SelfSubjectReviews and TokenReviews: answered from the request's user and the server's
authenticators, never stored (registry/review.py).

SelfSubjectReview: the requesting user as authentication (and impersonation) left it.
TokenReview: the token through the same token authenticators a request's bearer token meets
(the token file, service account tokens), for the review's audiences (none: the API
audiences): status.authenticated, the user, the audiences it is good for, or the error.

Upstream: pkg/registry/authentication/{selfsubjectreview,tokenreview}/storage.go (REST.Create).
"""
from __future__ import annotations

from typing import Any

from ....api import errors
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj

GROUP = "authentication.k8s.io"


def self_subject_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: selfsubjectreview REST.Create — the requesting user."""
    obj["status"] = {"userInfo": req.user.to_dict()}
    return obj


async def token_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: tokenreview REST.Create"""
    spec = obj.get("spec") or {}
    token = spec.get("token") or ""
    if not token:
        raise errors.BadRequest("token is required for TokenReview in authentication")
    authn = api.authenticator
    auds = tuple(spec.get("audiences") or ()) or authn.api_audiences
    resp = await authn.authenticate_token(token, auds)
    status: Obj = {"authenticated": True} if resp.user is not None else {}     # omitempty
    status["user"] = {}
    if resp.error:
        status["error"] = resp.error
    if resp.user is not None:
        if auds and not set(auds) & set(resp.audiences):     # an authenticator ignored the audiences
            raise errors.InternalError("error validating audience")
        status["user"] = resp.user.to_dict()
        status["audiences"] = list(resp.audiences)
    obj["status"] = status
    return obj


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
