"""authentication.k8s.io validation: TokenRequest.
Upstream: pkg/apis/authentication/validation/validation.go."""
from __future__ import annotations

from typing import Any

from ..errors import FieldError, JSONValue, invalid, not_supported
from .names import is_dns1123_subdomain

Obj = dict[str, Any]

MIN_TOKEN_AGE_SEC = 10 * 60        # MinTokenAgeSec
ATTESTATION_ADMISSION_REVIEW_API_GROUPS = "admissionReviewAPIGroups"
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


def is_webhook_ref(ref: Obj | None) -> bool:
    """Upstream: isWebhookRef"""
    if not ref:
        return False
    return ref.get("kind") in WEBHOOK_KINDS and ref.get("apiVersion") == "admissionregistration.k8s.io/v1"


def validate_token_request(tr: Obj) -> list[FieldError]:
    """Upstream: ValidateTokenRequest"""
    spec = tr.get("spec") or {}
    errs: list[FieldError] = []
    exp = spec.get("expirationSeconds") or 0
    if exp < MIN_TOKEN_AGE_SEC:
        errs.append(invalid("spec.expirationSeconds", exp, "may not specify a duration less than 10 minutes"))
    if exp > 1 << 32:
        errs.append(invalid("spec.expirationSeconds", exp, "may not specify a duration larger than 2^32 seconds"))
    attestations = spec.get("attestations") or {}
    if is_webhook_ref(spec.get("boundObjectRef")):
        audiences = spec.get("audiences") or []
        if len(audiences) != 1:
            errs.append(invalid("spec.audiences", JSONValue(audiences), "must be length 1 when bound to a webhook config"))
        errs += _validate_webhook_attestations(attestations)
    elif attestations:
        return [invalid("spec.attestations", JSONValue(attestations),
                        "attestations may only be specified with a webhook bound object reference")]
    return errs


def _validate_webhook_attestations(attestations: Obj) -> list[FieldError]:
    """Upstream: validateWebhookAttestations, validateWebhookKeysAndValues,
    validateAdmissionReviewAPIGroupsValue"""
    path = "spec.attestations"
    if len(attestations) != 1:
        return [invalid(path, JSONValue(attestations),
                        "webhook bound requests require exactly one admissionReviewAPIGroups attestation")]
    errs: list[FieldError] = []
    for key, values in attestations.items():
        if key != ATTESTATION_ADMISSION_REVIEW_API_GROUPS:
            errs.append(not_supported(f"{path}[{key}]", key, [ATTESTATION_ADMISSION_REVIEW_API_GROUPS]))
        elif len(values or []) != 1:
            errs.append(invalid(f"{path}[{key}]", JSONValue(values), "must specify a single value"))
        elif not values[0]:
            errs.append(invalid(f"{path}[{key}][0]", "", "may not be an empty string"))
        elif values[0] != "*":
            errs += [invalid(f"{path}[{key}][0]", values[0], "must specify a valid API Group: " + r)
                     for r in is_dns1123_subdomain(values[0])]
    return errs
