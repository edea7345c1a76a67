"""authorization.k8s.io/v1 validation. Upstream: pkg/apis/authorization/validation/validation.go."""
from __future__ import annotations

from typing import Any


from kubeplane.api import errors
from kubeplane.api.errors import FieldError

Obj = dict[str, Any]


def _non_resource(attrs: Obj) -> errors.JSONValue:
    """The internal NonResourceAttributes (no json tags: Go's field names, both always present)."""
    return errors.JSONValue({"Path": attrs.get("path") or "", "Verb": attrs.get("verb") or ""})


def _meta_value(meta: Obj) -> errors.JSONValue:
    return errors.JSONValue({**meta, "creationTimestamp": meta.get("creationTimestamp")})


def _attributes(spec: Obj) -> list[FieldError]:
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if res is not None and nonres is not None:
        return [errors.invalid("spec.nonResourceAttributes", _non_resource(nonres),
                               "cannot be specified in combination with resourceAttributes")]
    if res is None and nonres is None:
        return [errors.invalid("spec.resourceAttributes", None,
                               "exactly one of nonResourceAttributes or resourceAttributes must be specified")]
    return []


def validate_subject_access_review_spec(spec: Obj) -> list[FieldError]:
    """Upstream: ValidateSubjectAccessReviewSpec"""
    errs = _attributes(spec)
    if not spec.get("user") and not spec.get("groups"):
        errs.append(errors.invalid("spec.user", spec.get("user") or "", "at least one of user or group must be specified"))
    return errs


def _meta_empty(meta: Obj, keep: tuple[str, ...] = ()) -> bool:
    return not {k: v for k, v in meta.items() if v not in (None, "", {}, []) and k != "managedFields" and k not in keep}


def validate_subject_access_review(sar: Obj) -> list[FieldError]:
    """Upstream: ValidateSubjectAccessReview"""
    errs = validate_subject_access_review_spec(sar.get("spec") or {})
    meta = sar.get("metadata") or {}
    if not _meta_empty(meta):
        errs.append(errors.invalid("metadata", _meta_value(meta), "must be empty"))
    return errs


def validate_self_subject_access_review(sar: Obj) -> list[FieldError]:
    """Upstream: ValidateSelfSubjectAccessReview"""
    errs = _attributes(sar.get("spec") or {})
    meta = sar.get("metadata") or {}
    if not _meta_empty(meta):
        errs.append(errors.invalid("metadata", _meta_value(meta), "must be empty"))
    return errs


def validate_local_subject_access_review(sar: Obj) -> list[FieldError]:
    """Upstream: ValidateLocalSubjectAccessReview"""
    spec, meta = sar.get("spec") or {}, sar.get("metadata") or {}
    errs = validate_subject_access_review_spec(spec)
    if not _meta_empty(meta, ("namespace",)):
        errs.append(errors.invalid("metadata", _meta_value(meta), "must be empty except for namespace"))
    res = spec.get("resourceAttributes")
    if res is not None and (res.get("namespace") or "") != (meta.get("namespace") or ""):
        errs.append(errors.invalid("spec.resourceAttributes.namespace", res.get("namespace") or "",
                                   "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        errs.append(errors.invalid("spec.nonResourceAttributes", _non_resource(spec["nonResourceAttributes"]),
                                   "disallowed on this kind of request"))
    return errs
