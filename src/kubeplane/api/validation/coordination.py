"""coordination.k8s.io/v1 Lease validation. Upstream: pkg/apis/coordination/validation."""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import name_is_dns_subdomain

Obj = dict[str, Any]


def validate_lease(lease: Obj) -> list[FieldError]:
    """Upstream: ValidateLease"""
    errs = m.validate_object_meta(lease.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_lease_spec(lease.get("spec") or {}, "spec")


def validate_lease_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateLeaseUpdate"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_lease_spec(new.get("spec") or {}, "spec")


def validate_lease_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateLeaseSpec (duration > 0, transitions ≥ 0, strategy needs preferredHolder)."""
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(errors.invalid(path + ".leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(errors.invalid(path + ".leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None and strategy != "OldestEmulationVersion":
        errs.append(errors.not_supported(path + ".strategy", strategy, ["OldestEmulationVersion"]))
    if spec.get("preferredHolder") and strategy is None:
        errs.append(errors.forbidden(path + ".preferredHolder", "may only be specified if `strategy` is defined"))
    return errs
