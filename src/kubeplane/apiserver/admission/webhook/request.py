"""The AdmissionReview sent to a webhook, and what its answer is checked for.

Upstream: CreateV1AdmissionReview, VerifyAdmissionResponse (plugin/webhook/request/admissionreview.go).
The first of the webhook's admissionReviewVersions that upstream speaks is used: "v1", or
"v1beta1" (the same request under apiVersion admission.k8s.io/v1beta1; its answer is checked as
upstream's v1beta1 case: generic._verify_v1beta1). Neither: the call fails ("webhook does not
accept known AdmissionReview versions"), and failurePolicy decides.
"""
from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ....api.autoscaling_conversion import hpa_v1_to_v2, hpa_v2_to_v1
from ....api.conversion import EVENTS_API_VERSION, event_core_to_events_v1, event_events_v1_to_core
from ..interface import Attributes, Operation
from ..options import write_options

Obj = dict[str, Any]

ADMISSION_REVIEW_API_VERSION = "admission.k8s.io/v1"

# The kind a subresource receives lives in another group than its resource.
# (kind -> (group, version)); everything else: the resource's own group and version.
_SUBRESOURCE_KIND_GROUPS = {
    "Scale": ("autoscaling", "v1"),
    "Eviction": ("policy", "v1"),
    "TokenRequest": ("authentication.k8s.io", "v1"),
}


@dataclass(slots=True, frozen=True)
class Invocation:
    """The webhook to call and the resource it sees the request as (matchPolicy Equivalent may
    pick another version than the request's). Upstream: WebhookInvocation (generic/interfaces.go)."""
    group: str
    version: str
    resource: str
    subresource: str
    kind_group: str
    kind_version: str
    kind: str


def request_kind(a: Attributes) -> tuple[str, str, str]:
    """(group, version, kind) of what the request sends."""
    group, version = _SUBRESOURCE_KIND_GROUPS.get(a.kind, (a.group, a.version)) if a.subresource else (
        a.group, a.version)
    return group, version, a.kind


def operation_options(a: Attributes) -> Obj | None:
    """The request's options object (CreateOptions, UpdateOptions, DeleteOptions) as upstream
    sends GetOperationOptions: Attributes.options (admission/options.py), or built from the
    operation when the caller gave none."""
    return a.options or write_options(a.operation, a.dry_run) or None


# (kind, from apiVersion, to apiVersion) -> the conversion: the kinds kubeplane serves in more
# than one group or version (matchPolicy Equivalent may hand a webhook either; admission holds
# the request's or the stored version's object).
_CONVERSIONS: dict[tuple[str, str, str], Callable[[Obj], Obj]] = {
    ("HorizontalPodAutoscaler", "autoscaling/v2", "autoscaling/v1"): hpa_v2_to_v1,
    ("HorizontalPodAutoscaler", "autoscaling/v1", "autoscaling/v2"): hpa_v1_to_v2,
    ("Event", "v1", EVENTS_API_VERSION): event_core_to_events_v1,
    ("Event", EVENTS_API_VERSION, "v1"): event_events_v1_to_core,
}


def convert(obj: Obj | None, api_version: str) -> Obj | None:
    """obj as api_version shows it (upstream: ConvertToGVK of VersionedAttributes); obj itself
    when it already is, or when its kind has no such version (a subresource's Scale, Eviction)."""
    if obj is None:
        return None
    current, kind = obj.get("apiVersion"), obj.get("kind")
    if current == api_version or not isinstance(current, str) or not isinstance(kind, str):
        return obj
    c = _CONVERSIONS.get((kind, current, api_version))
    return c(obj) if c is not None else obj


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def unversioned(obj: Obj, like: Obj) -> Obj:
    """obj (a webhook's version) back in the apiVersion of `like` (what admission holds)."""
    target = like.get("apiVersion")
    return (convert(obj, target) or obj) if isinstance(target, str) else obj


def create_v1_admission_review(uid: str, a: Attributes, inv: Invocation) -> Obj:
    """Upstream: CreateV1AdmissionReview."""
    rg, rv, rk = request_kind(a)
    return {
        "kind": "AdmissionReview",
        "apiVersion": ADMISSION_REVIEW_API_VERSION,
        "request": {
            "uid": uid,
            "kind": {"group": inv.kind_group, "version": inv.kind_version, "kind": inv.kind},
            "resource": {"group": inv.group, "version": inv.version, "resource": inv.resource},
            **({"subResource": inv.subresource} if inv.subresource else {}),
            "requestKind": {"group": rg, "version": rv, "kind": rk},
            "requestResource": {"group": a.group, "version": a.version, "resource": a.resource},
            **({"requestSubResource": a.subresource} if a.subresource else {}),
            **({"name": a.name} if a.name else {}),
            **({"namespace": a.namespace} if a.namespace else {}),
            "operation": a.operation.value,
            "userInfo": a.user.to_dict(),
            "object": object_for(a, inv) if a.operation is not Operation.DELETE else None,
            "oldObject": old_object_for(a, inv),
            "dryRun": a.dry_run,
            "options": operation_options(a),
        },
    }


def object_for(a: Attributes, inv: Invocation) -> Obj | None:
    """The request's object as the invocation's kind (upstream: VersionedAttribute(invocation.Kind))."""
    return convert(a.obj, _api_version(inv.kind_group, inv.kind_version))


def old_object_for(a: Attributes, inv: Invocation) -> Obj | None:
    return convert(a.old_obj, _api_version(inv.kind_group, inv.kind_version))


def new_uid() -> str:
    return str(uuid.uuid4())


@dataclass(slots=True)
class AdmissionResponse:
    """Upstream: AdmissionResponse (request/admissionreview.go)."""
    allowed: bool
    patch: bytes = b""
    patch_type: str = ""
    result: Obj | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


class InvalidResponse(ValueError):
    """The answer is not a valid AdmissionReview response (upstream's error text)."""


def verify_admission_response(uid: str, mutating: bool, review: Any) -> AdmissionResponse:
    """Upstream: VerifyAdmissionResponse (the v1 case) — raises InvalidResponse."""
    if not isinstance(review, dict):
        raise InvalidResponse(f"unexpected response type {_go_type(review)}")
    r = review.get("response")
    if not isinstance(r, dict):
        raise InvalidResponse("webhook response was absent")
    got_uid = r.get("uid")
    if got_uid != uid:
        raise InvalidResponse(f'expected response.uid="{uid}", got "{got_uid if isinstance(got_uid, str) else ""}"')
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if api_version != ADMISSION_REVIEW_API_VERSION or kind != "AdmissionReview":
        raise InvalidResponse(f"expected webhook response of {ADMISSION_REVIEW_API_VERSION}, "
                              f"Kind=AdmissionReview, got {_gvk_string(api_version, kind)}")
    allowed = r.get("allowed") is True
    patch_b64, patch_type = r.get("patch"), r.get("patchType")
    patch = b""
    if patch_b64 is not None:
        if not isinstance(patch_b64, str):
            raise InvalidResponse("response.patch must be a base64-encoded string")
        try:
            patch = base64.b64decode(patch_b64, validate=True)
        except (binascii.Error, ValueError) as e:
            raise InvalidResponse(f"illegal base64 data in response.patch: {e}") from None
    if mutating:
        if patch and patch_type is None:
            raise InvalidResponse("webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise InvalidResponse("webhook returned response.patchType but not response.patch")
        if patch_type is not None and (not isinstance(patch_type, str) or not patch_type):
            raise InvalidResponse(f'webhook returned invalid response.patchType of "{patch_type or ""}"')
    else:
        if patch:
            raise InvalidResponse("validating webhook may not return response.patch")
        if patch_type is not None:
            raise InvalidResponse("validating webhook may not return response.patchType")
    result = r.get("status")
    warnings = r.get("warnings")
    annotations = r.get("auditAnnotations")
    return AdmissionResponse(
        allowed=allowed, patch=patch, patch_type=patch_type or "",
        result=result if isinstance(result, dict) else None,
        warnings=[w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else [],
        audit_annotations=({k: v for k, v in annotations.items() if isinstance(v, str)}
                           if isinstance(annotations, dict) else {}),
    )


def _gvk_string(api_version: Any, kind: Any) -> str:
    """schema.GroupVersionKind.String(): `group/version, Kind=kind` (`/, Kind=` when empty)."""
    av = api_version if isinstance(api_version, str) else ""
    k = kind if isinstance(kind, str) else ""
    group, _, version = av.rpartition("/")
    return f"{group}/{version}, Kind={k}" if group else f"/{version}, Kind={k}"


def _go_type(v: Any) -> str:
    return {list: "[]interface {}", str: "string", int: "float64", float: "float64", bool: "bool",
            type(None): "<nil>"}.get(type(v), type(v).__name__)
