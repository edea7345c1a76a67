"""The access reviews: LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview,
SubjectAccessReview — answered, never stored (registry/review.py).

kubeplane has no authorizer yet (issue 12): every authenticated request is allowed, so every
review answers allowed, and says why in status.reason; the rules review lists everything.
Upstream: pkg/registry/authorization/*/rest.go.
"""
from __future__ import annotations

from typing import Any

from ....api import errors
from ....api.validation import authorization as validation
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj

GROUP = "authorization.k8s.io"
REASON = "kubeplane has no authorizer yet: every authenticated request is allowed"


def _allowed(obj: Obj) -> Obj:
    obj["status"] = {"allowed": True, "reason": REASON}
    return obj


def subject_access_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: subjectaccessreview REST.Create"""
    return _allowed(obj)


def self_subject_access_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: selfsubjectaccessreview REST.Create (the review is of the requesting user)."""
    return _allowed(obj)


def local_subject_access_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: localsubjectaccessreview REST.Create — the namespace of the path must match."""
    ns = (obj.get("metadata") or {}).get("namespace") or ""
    if not ns:
        raise errors.BadRequest(f"namespace is required on this type: {ns}")
    res = (obj.get("spec") or {}).get("resourceAttributes") or {}
    if (res.get("namespace") or "") != ns:
        raise errors.BadRequest(f"spec.resourceAttributes.namespace must match namespace: {ns}")
    return _allowed(obj)


def self_subject_rules_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: selfsubjectrulesreview REST.Create — the rules the requesting user has in
    spec.namespace (here: everything)."""
    if not (obj.get("spec") or {}).get("namespace"):
        raise errors.BadRequest("no namespace on request")
    obj["status"] = {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }
    return obj


LOCAL_SUBJECT_ACCESS_REVIEWS = register(ResourceDefinition(
    GROUP, "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", "localsubjectaccessreview", True,
    "io.k8s.api.authorization.v1.LocalSubjectAccessReview", verbs=("create",),
    validate=validation.validate_local_subject_access_review,
    review=local_subject_access_review,
))

SELF_SUBJECT_ACCESS_REVIEWS = register(ResourceDefinition(
    GROUP, "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", "selfsubjectaccessreview", False,
    "io.k8s.api.authorization.v1.SelfSubjectAccessReview", verbs=("create",),
    validate=validation.validate_self_subject_access_review,
    review=self_subject_access_review,
))

SELF_SUBJECT_RULES_REVIEWS = register(ResourceDefinition(
    GROUP, "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", "selfsubjectrulesreview", False,
    "io.k8s.api.authorization.v1.SelfSubjectRulesReview", verbs=("create",),
    review=self_subject_rules_review,
))

SUBJECT_ACCESS_REVIEWS = register(ResourceDefinition(
    GROUP, "v1", "SubjectAccessReview", "subjectaccessreviews", "subjectaccessreview", False,
    "io.k8s.api.authorization.v1.SubjectAccessReview", verbs=("create",),
    validate=validation.validate_subject_access_review,
    review=subject_access_review,
))
