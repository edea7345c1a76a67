"""The API approval policy of the protected groups (`k8s.io`, `kubernetes.io` and their
subdomains): a CRD there needs the `api-approved.kubernetes.io` annotation, a URL (approved)
or a reason starting with "unapproved" (allowed, flagged), and its status reports the verdict
as the KubernetesAPIApprovalPolicyConformant condition.

    metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have
    approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111

An update that leaves the approval state as it was is never refused (a controller rewriting a
CRD's spec must not fail on an annotation it did not touch).

Upstream: IsProtectedCommunityGroup, GetAPIApprovalState (apiextensions-apiserver
pkg/apihelpers/helpers.go), validateAPIApproval (pkg/apis/apiextensions/validation) and
KubernetesAPIApprovalPolicyConformantConditionController.calculateCondition
(pkg/controller/apiapproval/apiapproval_controller.go).
"""
from __future__ import annotations

import re
from enum import Enum
from urllib.parse import urlsplit

from ...api import errors
from ...api.errors import FieldError
from ..registry.definition import Obj

ANNOTATION = "api-approved.kubernetes.io"
CONDITION = "KubernetesAPIApprovalPolicyConformant"
_FIELD = f"metadata.annotations[{ANNOTATION}]"
_KEP = "see https://github.com/kubernetes/enhancements/pull/1111"


class State(Enum):
    INVALID = "Invalid"
    APPROVED = "Approved"
    BYPASSED = "Bypassed"
    MISSING = "Missing"


def is_protected_community_group(group: str) -> bool:
    """Upstream: IsProtectedCommunityGroup."""
    return any(group == g or group.endswith("." + g) for g in ("k8s.io", "kubernetes.io"))


def _is_url(s: str) -> bool:
    """Go's url.ParseRequestURI succeeding with a scheme and a host."""
    if re.search(r"[\x00-\x20\x7f]", s):
        return False
    try:
        u = urlsplit(s)
    except ValueError:
        return False
    return bool(u.scheme) and bool(u.netloc)


def approval_state(annotations: Obj | None) -> tuple[State, str]:
    """Upstream: GetAPIApprovalState — the state and its reason."""
    value = (annotations or {}).get(ANNOTATION) or ""
    if not isinstance(value, str) or not value:
        return State.MISSING, f"protected groups must have approval annotation {errors.go_quote(ANNOTATION)}, {_KEP}"
    if value.startswith("unapproved"):
        return State.BYPASSED, f"not approved: {errors.go_quote(value)}"
    if _is_url(value):
        return State.APPROVED, f"approved in {value}"
    return State.INVALID, (f"protected groups must have approval annotation {errors.go_quote(ANNOTATION)} with either "
                           f'a URL or a reason starting with "unapproved", {_KEP}')


def validate_api_approval(new: Obj, old: Obj | None) -> list[FieldError]:
    """Upstream: validateAPIApproval — nothing for an unprotected group or an unchanged state."""
    if not is_protected_community_group(str((new.get("spec") or {}).get("group") or "")):
        return []
    state, reason = approval_state(new.get("metadata", {}).get("annotations"))
    if old is not None and approval_state(old.get("metadata", {}).get("annotations"))[0] == state:
        return []
    if state == State.MISSING:
        return [errors.required(_FIELD, reason)]
    if state == State.INVALID:
        return [errors.invalid(_FIELD, (new["metadata"].get("annotations") or {}).get(ANNOTATION, ""), reason)]
    return []


_CONDITIONS = {State.INVALID: ("False", "InvalidAnnotation"), State.MISSING: ("False", "MissingAnnotation"),
               State.APPROVED: ("True", "ApprovedAnnotation"), State.BYPASSED: ("False", "UnapprovedAnnotation")}


def calculate_condition(crd: Obj) -> tuple[str, str, str] | None:
    """Upstream: calculateCondition — (status, reason, message) of the condition, None for a
    CRD outside the protected groups."""
    if not is_protected_community_group(str((crd.get("spec") or {}).get("group") or "")):
        return None
    state, reason = approval_state((crd.get("metadata") or {}).get("annotations"))
    status, why = _CONDITIONS[state]
    return status, why, reason
