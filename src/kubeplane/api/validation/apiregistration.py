"""apiregistration.k8s.io/v1 validation.
Upstream: ValidateAPIService (kube-aggregator pkg/apis/apiregistration/validation/validation.go)."""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_dns1035_label, is_dns1123_subdomain, is_valid_port_num

Obj = dict[str, Any]


def validate_api_service_name(name: str, prefix: bool) -> list[str]:
    """Upstream: ValidateAPIServiceName — <version>.<group>."""
    version, sep, group = name.partition(".")
    if not sep:
        return ["API Service name must satisfy the pattern <version>.<group>"]
    errs = is_dns1035_label(version)
    if group:
        errs += is_dns1123_subdomain(group)
    return errs


def validate_api_service(svc: Obj) -> list[FieldError]:
    """Upstream: ValidateAPIService"""
    meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
    errs = m.validate_object_meta(meta, False, validate_api_service_name)
    group, version = spec.get("group") or "", spec.get("version") or ""
    expected = version + "." + group
    if meta.get("name") and meta.get("name") != expected:
        errs.append(errors.invalid("metadata.name", meta.get("name"),
                                   f'must be `spec.version+"."+spec.group`: {errors.go_quote(expected)}'))
    if not version:
        errs.append(errors.required("spec.version"))
    else:
        errs += [errors.invalid("spec.version", version, msg) for msg in is_dns1035_label(version)]
    if group:
        errs += [errors.invalid("spec.group", group, msg) for msg in is_dns1123_subdomain(group)]
    gpm = spec.get("groupPriorityMinimum") or 0
    if not 0 < gpm <= 20000:
        errs.append(errors.invalid("spec.groupPriorityMinimum", gpm, "must be positive and less than 20000"))
    vp = spec.get("versionPriority") or 0
    if not 0 < vp <= 1000:
        errs.append(errors.invalid("spec.versionPriority", vp, "must be positive and less than 1000"))
    service = spec.get("service")
    if service is None:
        if spec.get("caBundle"):
            errs.append(errors.invalid("spec.caBundle", f"{len(spec['caBundle'])} bytes", "local APIServices may not have a caBundle"))
        if spec.get("insecureSkipTLSVerify"):
            errs.append(errors.invalid("spec.insecureSkipTLSVerify", True, "local APIServices may not have insecureSkipTLSVerify"))
        return errs
    if not service.get("namespace"):
        errs.append(errors.required("spec.service.namespace"))
    if not service.get("name"):
        errs.append(errors.required("spec.service.name"))
    port = service.get("port")
    if port is not None:
        errs += [errors.invalid("spec.service.port", port, msg) for msg in is_valid_port_num(port)]
    if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
        errs.append(errors.invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


def validate_api_service_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateAPIServiceUpdate"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + [e for e in validate_api_service(new) if not e.field.startswith("metadata.")]


def validate_api_service_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateAPIServiceStatusUpdate (conditions' type and status)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    for i, c in enumerate((new.get("status") or {}).get("conditions") or []):
        status = (c or {}).get("status")
        if status not in ("True", "False", "Unknown"):
            errs.append(errors.not_supported(f"status.conditions[{i}].status", status or "", ["True", "False", "Unknown"]))
        if (c or {}).get("type") != "Available":
            errs.append(errors.not_supported(f"status.conditions[{i}].type", (c or {}).get("type") or "", ["Available"]))
    return errs
