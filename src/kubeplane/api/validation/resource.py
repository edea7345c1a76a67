"""resource.k8s.io/v1 validation. Upstream: pkg/apis/resource/validation/validation.go.

Checked: metadata, immutable claim and template specs, the ResourceSlice's driver, pool and
node selection (exactly one), DeviceTaintRule's taint effect. Left out: CEL selectors,
device attributes/capacity, the allocation result in status, counters and partitions.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import name_is_dns_subdomain

Obj = dict[str, Any]
NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _meta(obj: Obj, namespaced: bool) -> list[FieldError]:
    return m.validate_object_meta(obj.get("metadata") or {}, namespaced, name_is_dns_subdomain)


def _meta_update(new: Obj, old: Obj) -> list[FieldError]:
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def _requests(spec: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, req in enumerate(((spec or {}).get("devices") or {}).get("requests") or []):
        p = f"{path}.devices.requests[{i}]"
        name = (req or {}).get("name") or ""
        if not name:
            errs.append(errors.required(p + ".name"))
        elif name in names:
            errs.append(errors.duplicate(p + ".name", name))
        names.add(name)
        exactly, first = (req or {}).get("exactly"), (req or {}).get("firstAvailable")
        if (exactly is None) == (not first):
            errs.append(errors.invalid(p, "<value omitted>", "exactly one of `exactly` or `firstAvailable` is required"))
        if isinstance(exactly, dict) and not exactly.get("deviceClassName"):
            errs.append(errors.required(p + ".exactly.deviceClassName"))
    return errs


def validate_resource_claim(claim: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaim"""
    return _meta(claim, True) + _requests(claim.get("spec"), "spec")


def validate_resource_claim_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaimUpdate — the spec is immutable."""
    return _meta_update(new, old) + m.immutable(new.get("spec"), old.get("spec"), "spec")


def validate_resource_claim_template(t: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaimTemplate"""
    return _meta(t, True) + _requests((t.get("spec") or {}).get("spec"), "spec.spec")


def validate_resource_claim_template_update(new: Obj, old: Obj) -> list[FieldError]:
    return _meta_update(new, old) + m.immutable(new.get("spec"), old.get("spec"), "spec")


def validate_device_class(dc: Obj) -> list[FieldError]:
    return _meta(dc, False)


def validate_device_class_update(new: Obj, old: Obj) -> list[FieldError]:
    return _meta_update(new, old)


def validate_resource_slice(s: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceSlice (driver, pool, exactly one node selection)."""
    spec = s.get("spec") or {}
    errs = _meta(s, False)
    driver = spec.get("driver") or ""
    if not driver:
        errs.append(errors.required("spec.driver"))
    else:
        errs += [errors.invalid("spec.driver", driver, msg) for msg in name_is_dns_subdomain(driver, False)]
    pool = spec.get("pool") or {}
    if not pool.get("name"):
        errs.append(errors.required("spec.pool.name"))
    if (pool.get("resourceSliceCount") or 0) <= 0:
        errs.append(errors.invalid("spec.pool.resourceSliceCount", pool.get("resourceSliceCount") or 0,
                                   "must be greater than zero"))
    chosen = [k for k in NODE_SELECTION if spec.get(k)]
    if len(chosen) != 1:
        errs.append(errors.invalid("spec", "{`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`}",
                                   "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
                                   if not chosen else
                                   "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
    return errs


def validate_resource_slice_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = _meta_update(new, old) + [e for e in validate_resource_slice(new) if not e.field.startswith("metadata.")]
    for key in ("nodeName", "driver"):
        errs += m.immutable((new.get("spec") or {}).get(key), (old.get("spec") or {}).get(key), f"spec.{key}")
    return errs


def validate_device_taint_rule(r: Obj) -> list[FieldError]:
    """Upstream: ValidateDeviceTaintRule (the taint's key and effect)."""
    taint = (r.get("spec") or {}).get("taint") or {}
    errs = _meta(r, False)
    if not taint.get("key"):
        errs.append(errors.required("spec.taint.key"))
    effect = taint.get("effect") or ""
    if effect not in ("NoSchedule", "NoExecute", "None"):
        errs.append(errors.not_supported("spec.taint.effect", effect, ["NoExecute", "NoSchedule", "None"]))
    return errs


def validate_device_taint_rule_update(new: Obj, old: Obj) -> list[FieldError]:
    return _meta_update(new, old) + [e for e in validate_device_taint_rule(new) if not e.field.startswith("metadata.")]
