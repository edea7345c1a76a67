"""policy/v1 PodDisruptionBudget validation.

Upstream: ValidatePodDisruptionBudget, ValidatePodDisruptionBudgetSpec,
ValidatePodDisruptionBudgetStatusUpdate (pkg/apis/policy/validation/validation.go), with
ValidatePositiveIntOrPercent / IsNotMoreThan100Percent of the apps validation.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .apps import _percent_value, validate_positive_int_or_percent
from .names import name_is_dns_subdomain

Obj = dict[str, Any]

UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


def _int_or_percent(v: Any, path: str) -> list[FieldError]:
    errs = validate_positive_int_or_percent(v, path)
    percent = _percent_value(v)
    if percent is not None and percent > 100:
        errs.append(errors.invalid(path, v, "must not be greater than 100%"))
    return errs


def validate_pdb_spec(spec: Obj, path: str = "spec") -> list[FieldError]:
    errs: list[FieldError] = []
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(errors.invalid(path, spec, "minAvailable and maxUnavailable cannot be both set"))
    if min_available is not None:
        errs += _int_or_percent(min_available, path + ".minAvailable")
    if max_unavailable is not None:
        errs += _int_or_percent(max_unavailable, path + ".maxUnavailable")
    errs += m.validate_label_selector(spec.get("selector"), path + ".selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(errors.not_supported(path + ".unhealthyPodEvictionPolicy", policy,
                                         UNHEALTHY_POD_EVICTION_POLICIES))
    return errs


def validate_pdb(pdb: Obj) -> list[FieldError]:
    errs = validate_pdb_spec(pdb.get("spec") or {})
    return errs + m.validate_object_meta(pdb.get("metadata") or {}, True, name_is_dns_subdomain)


def validate_pdb_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_pdb_spec(new.get("spec") or {})
    return errs + m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_pdb_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        errs += m.nonnegative(status.get(key), "status." + key)
    return errs
