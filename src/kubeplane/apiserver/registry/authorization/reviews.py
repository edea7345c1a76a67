"""The access reviews: LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview,
SubjectAccessReview — answered by the server's authorizer, never stored (registry/review.py).

Upstream: pkg/registry/authorization/{subjectaccessreview,localsubjectaccessreview,
selfsubjectaccessreview,selfsubjectrulesreview}/rest.go and
authorizationutil.AuthorizationAttributesFrom / ResourceAttributesFrom /
NonResourceAttributesFrom (pkg/registry/authorization/util/helpers.go).
"""
from __future__ import annotations

from typing import Any

from ....api import errors
from ....api.validation import authorization as validation
from ...authentication.user import UserInfo
from ...authorization.authorizer import Attributes, Decision
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj

GROUP = "authorization.k8s.io"


def attributes_from(user: UserInfo, spec: Obj) -> Attributes:
    """Upstream: ResourceAttributesFrom / NonResourceAttributesFrom"""
    res = spec.get("resourceAttributes")
    if res is not None:
        return Attributes(user, res.get("verb") or "", True, res.get("namespace") or "", res.get("group") or "",
                          res.get("version") or "", res.get("resource") or "", res.get("subresource") or "",
                          res.get("name") or "")
    nonres = spec.get("nonResourceAttributes") or {}
    return Attributes(user, nonres.get("verb") or "", False, path=nonres.get("path") or "")


def spec_user(spec: Obj) -> UserInfo:
    """Upstream: AuthorizationAttributesFrom's user.DefaultInfo (the groups as given: no
    system:authenticated added)."""
    extra = spec.get("extra") or {}
    return UserInfo(spec.get("user") or "", spec.get("uid") or "", tuple(spec.get("groups") or ()),
                    tuple(sorted((k, tuple(v or ())) for k, v in extra.items())))


def _answer(api: Any, obj: Obj, a: Attributes) -> Obj:
    decision, reason = api.authorizer.authorize(a)
    status: Obj = {"allowed": decision is Decision.ALLOW}
    if decision is Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    obj["status"] = status
    return obj


def subject_access_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: subjectaccessreview REST.Create"""
    spec = obj.get("spec") or {}
    return _answer(api, obj, attributes_from(spec_user(spec), spec))


def self_subject_access_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: selfsubjectaccessreview REST.Create (the review is of the requesting user)."""
    return _answer(api, obj, attributes_from(req.user, obj.get("spec") or {}))


def local_subject_access_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: localsubjectaccessreview REST.Create — the namespace of the path must match."""
    ns = (obj.get("metadata") or {}).get("namespace") or ""
    if not ns:
        raise errors.BadRequest(f"namespace is required on this type: {ns}")
    spec = obj.get("spec") or {}
    res = spec.get("resourceAttributes") or {}
    if (res.get("namespace") or "") != ns:
        raise errors.BadRequest(f"spec.resourceAttributes.namespace must match namespace: {ns}")
    return _answer(api, obj, attributes_from(spec_user(spec), spec))


def self_subject_rules_review(api: Any, req: Any, obj: Obj) -> Obj:
    """Upstream: selfsubjectrulesreview REST.Create — the rules the requesting user has in
    spec.namespace, from every rule resolver of the chain (rulesfor.py). The answer is a new
    review holding only that status: the request's metadata and spec are not echoed (`spec: {}`),
    resourceRules and nonResourceRules are lists even when empty, evaluationError is the
    resolvers' errors aggregated (left out when there were none)."""
    from ...authorization.rbac.resolver import aggregate
    from ...authorization.rulesfor import rules_for
    ns = (obj.get("spec") or {}).get("namespace")
    if not ns:
        raise errors.BadRequest("no namespace on request")
    resource, non_resource, incomplete, errs = rules_for(api.authorizer, req.user, ns)
    status: Obj = {"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": incomplete}
    if errs:
        status["evaluationError"] = aggregate(errs)
    return {"kind": "SelfSubjectRulesReview", "apiVersion": f"{GROUP}/v1", "metadata": {}, "spec": {}, "status": status}


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
