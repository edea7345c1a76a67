"""autoscaling/v2 HorizontalPodAutoscaler validation (autoscaling/v1 objects are validated as
the v2 objects they convert to, as upstream validates the internal type).

Upstream: ValidateHorizontalPodAutoscaler, validateHorizontalPodAutoscalerSpec,
ValidateCrossVersionObjectReference, validateMetrics / validateMetricSpec and the source
validators, validateMetricTarget, validateBehavior / validateScalingRules /
validateScalingPolicy, ValidateHorizontalPodAutoscalerStatusUpdate
(pkg/apis/autoscaling/validation/validation.go). minReplicas' lower bound is 1 (the
HPAScaleToZero gate is off by default). Left out: the metric selectors' label-selector rules
and the per-source "must populate the given metric source only" cross-checks beyond the type.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_path_segment_name, name_is_dns_subdomain
from ..quantity import parse_quantity

Obj = dict[str, Any]

MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
METRIC_SOURCE_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
_SOURCE_FIELD = {"Object": "object", "Pods": "pods", "Resource": "resource",
                 "ContainerResource": "containerResource", "External": "external"}
SELECT_POLICIES = ["Disabled", "Max", "Min"]
POLICY_TYPES = ["Percent", "Pods"]


def validate_hpa(hpa: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(hpa.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_hpa_spec(hpa.get("spec") or {}, "spec")


def validate_hpa_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_hpa_spec(new.get("spec") or {}, "spec")


def validate_hpa_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    errs += m.nonnegative(status.get("currentReplicas"), "status.currentReplicas")
    return errs + m.nonnegative(status.get("desiredReplicas"), "status.desiredReplicas")


def validate_hpa_spec(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    min_replicas, max_replicas = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if isinstance(min_replicas, int) and min_replicas < 1:
        errs.append(errors.invalid(path + ".minReplicas", min_replicas, "must be greater than or equal to 1"))
    if isinstance(max_replicas, int) and max_replicas < 1:
        errs.append(errors.invalid(path + ".maxReplicas", max_replicas, "must be greater than 0"))
    if isinstance(min_replicas, int) and isinstance(max_replicas, int) and max_replicas < min_replicas:
        errs.append(errors.invalid(path + ".maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"))
    errs += validate_cross_version_object_reference(spec.get("scaleTargetRef") or {}, path + ".scaleTargetRef")
    for i, metric in enumerate(spec.get("metrics") or []):
        errs += validate_metric_spec(metric or {}, f"{path}.metrics[{i}]")
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key in ("scaleUp", "scaleDown"):
            if isinstance(behavior.get(key), dict):
                errs += _validate_scaling_rules(behavior[key], f"{path}.behavior.{key}")
    return errs


def validate_cross_version_object_reference(ref: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("kind", "name"):
        value = ref.get(key) or ""
        if not value:
            errs.append(errors.required(f"{path}.{key}"))
        else:
            errs += [errors.invalid(f"{path}.{key}", value, msg) for msg in is_path_segment_name(value)]
    return errs


def validate_metric_spec(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = spec.get("type") or ""
    if not kind:
        errs.append(errors.required(path + ".type", "must specify a metric source type"))
    if kind not in METRIC_SOURCE_TYPES:
        errs.append(errors.not_supported(path + ".type", kind, METRIC_SOURCE_TYPES))
    present = [f for f in _SOURCE_FIELD.values() if spec.get(f) is not None]
    if len(present) == 1:
        errs += _validate_source(present[0], spec[present[0]], f"{path}.{present[0]}")
    expected = _SOURCE_FIELD.get(kind)
    if expected is None:
        errs.append(errors.not_supported(path + ".type", kind, METRIC_SOURCE_TYPES))
    elif spec.get(expected) is None:
        errs.append(errors.required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        errs += [errors.forbidden(f"{path}.{f}", "must populate the given metric source only")
                 for f in sorted(present) if f != expected]
    return errs


def _validate_source(field: str, src: Obj, path: str) -> list[FieldError]:
    target = src.get("target") or {}
    errs: list[FieldError] = []
    if field in ("resource", "containerResource"):
        if not src.get("name"):
            errs.append(errors.required(path + ".name", "must specify a resource name"))
        if field == "containerResource" and not src.get("container"):
            errs.append(errors.required(path + ".container", "must specify a container"))
        errs += validate_metric_target(target, path + ".target")
        if target.get("averageUtilization") is None and target.get("averageValue") is None:
            errs.append(errors.required(path + ".target.averageUtilization",
                                        "must set either a target raw value or a target utilization"))
        if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
            errs.append(errors.forbidden(path + ".target.averageValue",
                                         "may not set both a target raw value and a target utilization"))
        return errs
    metric = src.get("metric") or {}
    if field == "object":
        errs += validate_cross_version_object_reference(src.get("describedObject") or {}, path + ".describedObject")
    if not metric.get("name"):
        errs.append(errors.required(path + ".metric.name", "must specify a metric name"))
    errs += validate_metric_target(target, path + ".target")
    if field == "pods":
        if target.get("averageValue") is None:
            errs.append(errors.required(path + ".target.averageValue", "must specify a positive target averageValue"))
    elif target.get("value") is None and target.get("averageValue") is None:
        errs.append(errors.required(path + ".target.averageValue" if field == "external" else path + ".target.value",
                                    "must set either a target value or averageValue"))
    return errs


def validate_metric_target(target: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = target.get("type") or ""
    if not kind:
        errs.append(errors.required(path + ".type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(errors.invalid(path + ".type", kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None:
            q = parse_quantity(target[key])
            if q is not None and q <= 0:
                errs.append(errors.invalid(f"{path}.{key}", target[key], "must be positive"))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        errs.append(errors.invalid(path + ".averageUtilization", utilization, "must be greater than 0"))
    return errs


def _validate_scaling_rules(rules: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        errs.append(errors.invalid(path + ".stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(errors.invalid(path + ".stabilizationWindowSeconds", window,
                                   f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        errs.append(errors.not_supported(path + ".selectPolicy", select, SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        errs.append(errors.required(path + ".policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        errs += _validate_scaling_policy(policy or {}, f"{path}.policies[{i}]")
    return errs


def _validate_scaling_policy(policy: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if policy.get("type") not in POLICY_TYPES:
        errs.append(errors.not_supported(path + ".type", policy.get("type", ""), POLICY_TYPES))
    value, period = policy.get("value", 0), policy.get("periodSeconds", 0)
    if isinstance(value, int) and value <= 0:
        errs.append(errors.invalid(path + ".value", value, "must be greater than zero"))
    if isinstance(period, int) and period <= 0:
        errs.append(errors.invalid(path + ".periodSeconds", period, "must be greater than zero"))
    if isinstance(period, int) and period > MAX_PERIOD_SECONDS:
        errs.append(errors.invalid(path + ".periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return errs
