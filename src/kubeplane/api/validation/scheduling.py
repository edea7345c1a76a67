"""scheduling.k8s.io/v1 PriorityClass and node.k8s.io/v1 RuntimeClass validation.

Upstream: ValidatePriorityClass, ValidatePriorityClassUpdate (pkg/apis/scheduling/validation),
IsKnownSystemPriorityClass and SystemPriorityClasses (pkg/apis/scheduling/v1/helpers.go),
ValidateRuntimeClass, ValidateRuntimeClassUpdate, validateOverhead, validateScheduling,
validateTolerations (pkg/apis/node/validation).
"""
from __future__ import annotations

from typing import Any, TypedDict

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .core import validate_resource_requirements, validate_tolerations
from .names import is_dns1123_label, name_is_dns_subdomain

Obj = dict[str, Any]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"


class SystemPriorityClass(TypedDict):
    name: str
    value: int
    description: str


# Upstream: SystemPriorityClasses (created at start by the scheduling post-start hook).
SYSTEM_PRIORITY_CLASSES: tuple[SystemPriorityClass, ...] = (
    {"name": "system-node-critical", "value": SYSTEM_CRITICAL_PRIORITY + 1000,
     "description": "Used for system critical pods that must not be moved from their current node."},
    {"name": "system-cluster-critical", "value": SYSTEM_CRITICAL_PRIORITY,
     "description": "Used for system critical pods that must run in the cluster, but can be moved to "
                    "another node if necessary."},
)
PREEMPTION_POLICIES = ["Never", "PreemptLowerPriority"]


def _known_system_class_error(name: str, value: Any, global_default: bool) -> str | None:
    """Upstream: IsKnownSystemPriorityClass — None when it is one, else why not."""
    for spc in SYSTEM_PRIORITY_CLASSES:
        if spc["name"] == name:
            if value != spc["value"]:
                return f"value of {name} PriorityClass must be {spc['value']}"
            if global_default:
                return f"globalDefault of {name} PriorityClass must be false"
            return None
    return f"{name} is not a known system priority class"


def validate_priority_class(pc: Obj) -> list[FieldError]:
    meta = pc.get("metadata") or {}
    errs = m.validate_object_meta(meta, False, name_is_dns_subdomain)
    name, value = meta.get("name", ""), pc.get("value", 0)
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        why = _known_system_class_error(name, value, bool(pc.get("globalDefault")))
        if why is not None:
            errs.append(errors.forbidden("metadata.name", f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' "
                                         f"prefix are reserved for system use only. error: {why}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(errors.forbidden("value", "maximum allowed value of a user defined priority is "
                                     f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errs.append(errors.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return errs


def validate_priority_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if new.get("value", 0) != old.get("value", 0):
        errs.append(errors.forbidden("value", "may not be changed in an update."))
    return errs + m.immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy")


def validate_runtime_class(rc: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(rc.get("metadata") or {}, False, name_is_dns_subdomain)
    handler = rc.get("handler", "")
    errs += [errors.invalid("handler", handler, msg) for msg in is_dns1123_label(handler)]
    overhead = rc.get("overhead")
    if isinstance(overhead, dict):
        # validateOverhead reuses ValidateResourceRequirements with the podFixed as limits
        errs += validate_resource_requirements({"limits": overhead.get("podFixed") or {}}, "overhead")
    scheduling = rc.get("scheduling")
    if isinstance(scheduling, dict):
        errs += m.validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector")
        errs += _validate_tolerations(scheduling.get("tolerations") or [], "scheduling.tolerations")
    return errs


def _validate_tolerations(tolerations: list[Any], path: str) -> list[FieldError]:
    """Upstream: node validation's validateTolerations — ValidateTolerations at path.tolerations
    (sic: upstream appends the child twice), then no (key, operator, value, effect) twice; the
    duplicate's value is the internal core.Toleration (Go's field names)."""
    tolerations = [t if isinstance(t, dict) else {} for t in tolerations]
    errs = validate_tolerations(tolerations, path + ".tolerations")
    seen: set[tuple[str, str, str, str]] = set()
    for i, t in enumerate(tolerations):
        key = (t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", ""))
        if key in seen:
            go = {"Key": key[0], "Operator": key[1], "Value": key[2], "Effect": key[3],
                  "TolerationSeconds": t.get("tolerationSeconds")}
            errs.append(errors.duplicate(f"{path}[{i}]", errors.JSONValue(go)))
        seen.add(key)
    return errs


def validate_runtime_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + m.immutable(new.get("handler", ""), old.get("handler", ""), "handler")
