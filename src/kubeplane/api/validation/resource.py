"""resource.k8s.io/v1 validation. Upstream: pkg/apis/resource/validation/validation.go.

Ported: claims and templates (requests with exactly/firstAvailable, device class names,
allocation modes and counts, selectors, tolerations, constraints, configs and the request names
they refer to, every list's size limit; immutable specs), DeviceClasses (selectors, configs,
extendedResourceName), ResourceSlices (driver, pool, node selection, devices with attributes,
capacities and request policies, taints, counter consumption, binding conditions, shared
counters; the immutable pool name, driver and nodeName), DeviceTaintRules (selector, taint,
status conditions' count), the ResourceClaim status (reservedFor, allocation results and
configs, device statuses' identity).

Not ported: CEL compilation and cost of the selectors' expressions (only their length is
checked: no CEL engine yet, see docs/validation-coverage.md), metav1 ValidateConditions of the
device statuses, networkData's interface addresses.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    name_is_dns_subdomain,
    regex_error,
)
from .nodeselector import validate_node_selector
from .storage import validate_csi_driver_name
from ..quantity import Quantity

Obj = dict[str, Any]
Validator = Callable[[Any, str], list[FieldError]]

# Upstream: the limits of pkg/apis/resource/types.go.
DEVICE_REQUESTS_MAX_SIZE = 32
FIRST_AVAILABLE_MAX_SIZE = 8
DEVICE_SELECTORS_MAX_SIZE = 32
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_CONSUMES_COUNTERS = 64
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET = 32
RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION = 32
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
POOL_NAME_MAX_LENGTH = 253
DEVICE_TAINTS_MAX_LENGTH = 16
BINDING_CONDITIONS_MAX_SIZE = 4
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
ALLOCATION_RESULTS_MAX_SIZE = 32
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10
DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS = 8
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS = 8
ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH = 10 * 1024
ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
DNS1123_LABEL_MAX_LENGTH = 63

NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
ALLOCATION_MODES = ["All", "ExactCount"]
TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
CONFIG_SOURCES = ["FromClaim", "FromClass"]
REQUEST_NAME_REF = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMERIC = r"(0|[1-9]\d*)"
_PRE_RELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRE_RELEASE}(\.{_PRE_RELEASE})*)?"
                     rf"(\+{_BUILD}(\.{_BUILD})*)?")


# --- generic list and map helpers (upstream's validateSlice, validateSet, validateMap) ---------------


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def validate_slice(items: list[Any], max_size: int, item: Validator, path: str) -> list[FieldError]:
    """Upstream: validateSlice — too many items short-circuits (DoS protection)."""
    if 0 <= max_size < len(items):
        return [errors.too_many(path, len(items), max_size)]
    errs: list[FieldError] = []
    for i, value in enumerate(items):
        errs += item(value, f"{path}[{i}]")
    return errs


def validate_set(items: list[Any], max_size: int, item: Validator, key: Callable[[Any], Hashable],
                 path: str) -> list[FieldError]:
    """Upstream: validateSet — validateSlice plus a Duplicate for each repeated key."""
    errs = validate_slice(items, max_size, item, path)
    if 0 <= max_size < len(items):
        return errs
    seen: set[Hashable] = set()
    for i, value in enumerate(items):
        k = key(value)
        if k in seen:
            errs.append(errors.duplicate(f"{path}[{i}]", k))
        seen.add(k)
    return errs


def _truncate(key: str, max_len: int) -> str:
    """Upstream: truncateIfTooLong (map keys in paths)."""
    max_len = max(max_len, 16)
    if len(key) <= max_len:
        return key
    remaining = max_len - 3
    return key[:(remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]


def validate_map(values: Obj, max_size: int, truncate_len: int, validate_key: Validator, item: Validator,
                 path: str) -> list[FieldError]:
    """Upstream: validateMap"""
    if 0 <= max_size < len(values):
        return [errors.too_many(path, len(values), max_size)]
    errs: list[FieldError] = []
    for k, value in values.items():
        key_path = f"{path}[{_truncate(str(k), truncate_len)}]"
        errs += validate_key(k, key_path) + item(value, key_path)
    return errs


def _str_key(value: Any) -> Hashable:
    return value if isinstance(value, Hashable) else json.dumps(value, sort_keys=True)


def _name_key(value: Any) -> Hashable:
    return _str_key(_dict(value).get("name") or "")


# --- names ------------------------------------------------------------------------------------------


def _dns1123_label(value: str, path: str) -> list[FieldError]:
    """Upstream: corevalidation.ValidateDNS1123Label (request, device and counter names)."""
    return [errors.invalid(path, value, msg) for msg in is_dns1123_label(value)]


def _dns1123_subdomain(value: str, path: str) -> list[FieldError]:
    return [errors.invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def validate_pool_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validatePoolName (DNS subdomains separated by slashes)."""
    if not name:
        return [errors.required(path)]
    errs = [errors.too_long(path, POOL_NAME_MAX_LENGTH)] if len(name) > POOL_NAME_MAX_LENGTH else []
    for part in name.split("/"):
        errs += _dns1123_subdomain(part, path)
    return errs


def _device_class_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validateDeviceClass"""
    return [errors.required(path)] if not name else _dns1123_subdomain(name, path)


def _c_identifier(value: str, path: str) -> list[FieldError]:
    """Upstream: validateCIdentifier (content.IsCIdentifier)."""
    errs = [errors.too_long(path, DEVICE_MAX_ID_LENGTH)] if len(value) > DEVICE_MAX_ID_LENGTH else []
    if not _C_IDENTIFIER.fullmatch(value):
        errs.append(errors.invalid(path, value, regex_error(
            "a valid C identifier must start with alphabetic character or '_', followed by a string of "
            "alphanumeric characters or '_'", "[A-Za-z_][A-Za-z0-9_]*", "my_name", "MY_NAME", "MyName")))
    return errs


def validate_qualified_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validateQualifiedName (an identifier, optionally behind a driver-name domain)."""
    parts = str(name).split("/")
    if len(parts) == 1:
        return _c_identifier(parts[0], path)
    if len(parts) != 2:
        return []                                          # upstream's acknowledged gap: a/b/c passes
    errs = [errors.invalid(path, "", "the domain must not be empty")] if not parts[0] \
        else validate_csi_driver_name(parts[0], path)
    errs += [errors.invalid(path, "", "the name must not be empty")] if not parts[1] \
        else _c_identifier(parts[1], path)
    return errs


def validate_fully_qualified_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validateFullyQualifiedName"""
    errs = validate_qualified_name(name, path)
    if "/" not in str(name):
        errs.append(errors.invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))
    return errs


# --- claims -------------------------------------------------------------------------------------


def gather_request_names(devices: Obj) -> dict[str, set[str] | None]:
    """Upstream: gatherRequestNames"""
    names: dict[str, set[str] | None] = {}
    for req in _list(devices.get("requests")):
        req = _dict(req)
        subs = _list(req.get("firstAvailable"))
        names[req.get("name") or ""] = {_dict(s).get("name") or "" for s in subs} if subs else None
    return names


def _has_request(names: dict[str, set[str] | None], ref: str) -> bool:
    """Upstream: requestNames.Has"""
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    subs = names[segments[0]]
    return len(segments) == 1 or segments[1] in (subs or set())


def _request_name_ref(names: dict[str, set[str] | None]) -> Validator:
    def validate(ref: Any, path: str) -> list[FieldError]:
        """Upstream: validateRequestNameRef"""
        ref = str(ref)
        segments = ref.split("/")
        if len(segments) > 2:
            return [errors.invalid(path, ref, REQUEST_NAME_REF)]
        errs: list[FieldError] = []
        for segment in segments:
            errs += _dns1123_label(segment, path)
        if not _has_request(names, ref):
            errs.append(errors.invalid(path, ref, REQUEST_NAME_REF))
        return errs
    return validate


def _selector(sel: Any, path: str) -> list[FieldError]:
    """Upstream: validateSelector / validateCELSelector (the expression's length; no CEL compile)."""
    cel = _dict(sel).get("cel")
    if cel is None:
        return [errors.required(path + ".cel")]
    expression = _dict(cel).get("expression") or ""
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [errors.too_long(path + ".cel.expression", CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    if not expression:
        return [errors.required(path + ".cel.expression", "expression must not be empty")]
    return []


def _selectors(selectors: Any, path: str) -> list[FieldError]:
    return validate_slice(_list(selectors), DEVICE_SELECTORS_MAX_SIZE, _selector, path)


def _allocation_mode(req: Obj, path: str) -> list[FieldError]:
    """Upstream: validateDeviceAllocationMode"""
    mode, count = req.get("allocationMode") or "", req.get("count") or 0
    if mode == "All":
        return [errors.invalid(path + ".count", count, "must not be specified when allocationMode is 'All'")] \
            if count else []
    if mode == "ExactCount":
        return [errors.invalid(path + ".count", count, "must be greater than zero")] if count <= 0 else []
    return [errors.not_supported(path + ".allocationMode", mode, ALLOCATION_MODES)]


def _label_value(value: str, path: str) -> list[FieldError]:
    return [errors.invalid(path, value, msg) for msg in is_valid_label_value(value)]


def validate_device_toleration(t: Any, path: str) -> list[FieldError]:
    """Upstream: validateDeviceToleration"""
    t = _dict(t)
    errs: list[FieldError] = []
    key, value, op, effect = t.get("key") or "", t.get("value") or "", t.get("operator") or "", t.get("effect") or ""
    if key:
        errs += m.validate_label_name(key, path + ".key")
    if op == "Exists":
        if value:
            errs.append(errors.invalid(path + ".value", value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        errs += _label_value(value, path + ".value")
    elif not op:
        errs.append(errors.required(path + ".operator"))
    else:
        errs.append(errors.not_supported(path + ".operator", op, TOLERATION_OPERATORS))
    if effect and effect not in TAINT_EFFECTS:
        errs.append(errors.not_supported(path + ".effect", effect, TAINT_EFFECTS))
    return errs


def _request_body(req: Obj, path: str) -> list[FieldError]:
    """The part validateExactDeviceRequest and validateDeviceSubRequest share."""
    errs = _device_class_name(req.get("deviceClassName") or "", path + ".deviceClassName")
    errs += _selectors(req.get("selectors"), path + ".selectors")
    errs += _allocation_mode(req, path)
    for i, t in enumerate(_list(req.get("tolerations"))):
        errs += validate_device_toleration(t, f"{path}.tolerations[{i}]")
    return errs


def _sub_request(sub: Any, path: str) -> list[FieldError]:
    """Upstream: validateDeviceSubRequest"""
    sub = _dict(sub)
    return _dns1123_label(sub.get("name") or "", path + ".name") + _request_body(sub, path)


def validate_device_request(req: Any, path: str) -> list[FieldError]:
    """Upstream: validateDeviceRequest (exactly one of exactly/firstAvailable)."""
    req = _dict(req)
    errs = _dns1123_label(req.get("name") or "", path + ".name")
    first, exactly = _list(req.get("firstAvailable")), req.get("exactly")
    if not first and exactly is None:
        errs.append(errors.required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif first and exactly is not None:
        errs.append(errors.invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, "
                                               "but multiple fields are set"))
    elif first:
        errs += validate_set(first, FIRST_AVAILABLE_MAX_SIZE, _sub_request, _name_key, path + ".firstAvailable")
    else:
        errs += _request_body(_dict(exactly), path + ".exactly")
    return errs


def _raw_extension(value: Any, path: str, max_len: int) -> list[FieldError]:
    """Upstream: validateRawExtension (a JSON object of at most max_len bytes; the length is that
    of the compact JSON, the decoded body's raw bytes being gone)."""
    if value is None:
        return [errors.required(path)]
    if len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()) > max_len:
        return [errors.too_long(path, max_len)]
    if not isinstance(value, dict):
        return [errors.invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def validate_device_configuration(config: Obj, path: str) -> list[FieldError]:
    """Upstream: validateDeviceConfiguration / validateOpaqueConfiguration"""
    opaque = config.get("opaque")
    if opaque is None:
        return [errors.required(path + ".opaque")]
    opaque = _dict(opaque)
    errs = validate_csi_driver_name(opaque.get("driver") or "", path + ".opaque.driver")
    return errs + _raw_extension(opaque.get("parameters"), path + ".opaque.parameters", OPAQUE_PARAMETERS_MAX_LENGTH)


def _constraint(names: dict[str, set[str] | None]) -> Validator:
    def validate(c: Any, path: str) -> list[FieldError]:
        """Upstream: validateDeviceConstraint (DRAConsumableCapacity off: matchAttribute required
        unless distinctAttribute is set)."""
        c = _dict(c)
        errs = validate_set(_list(c.get("requests")), DEVICE_REQUESTS_MAX_SIZE, _request_name_ref(names), _str_key,
                            path + ".requests")
        if c.get("matchAttribute") is not None:
            errs += validate_fully_qualified_name(c["matchAttribute"], path + ".matchAttribute")
        elif c.get("distinctAttribute") is not None:
            errs += validate_fully_qualified_name(c["distinctAttribute"], path + ".distinctAttribute")
        else:
            errs.append(errors.required(path + ".matchAttribute"))
        return errs
    return validate


def _claim_config(names: dict[str, set[str] | None]) -> Validator:
    def validate(config: Any, path: str) -> list[FieldError]:
        """Upstream: validateDeviceClaimConfiguration"""
        config = _dict(config)
        errs = validate_set(_list(config.get("requests")), DEVICE_REQUESTS_MAX_SIZE, _request_name_ref(names),
                            _str_key, path + ".requests")
        return errs + validate_device_configuration(config, path)
    return validate


def validate_device_claim(devices: Obj, path: str) -> list[FieldError]:
    """Upstream: validateDeviceClaim"""
    names = gather_request_names(devices)
    errs = validate_set(_list(devices.get("requests")), DEVICE_REQUESTS_MAX_SIZE, validate_device_request, _name_key,
                        path + ".requests")
    errs += validate_slice(_list(devices.get("constraints")), DEVICE_CONSTRAINTS_MAX_SIZE, _constraint(names),
                           path + ".constraints")
    errs += validate_slice(_list(devices.get("config")), DEVICE_CONFIG_MAX_SIZE, _claim_config(names),
                           path + ".config")
    return errs


def _claim_spec(spec: Any, path: str) -> list[FieldError]:
    """Upstream: validateResourceClaimSpec"""
    return validate_device_claim(_dict(_dict(spec).get("devices")), path + ".devices")


def _meta(obj: Obj, namespaced: bool) -> list[FieldError]:
    return m.validate_object_meta(obj.get("metadata") or {}, namespaced, name_is_dns_subdomain)


def _meta_update(new: Obj, old: Obj) -> list[FieldError]:
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_resource_claim(claim: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaim"""
    return _meta(claim, True) + _claim_spec(claim.get("spec"), "spec")


def validate_resource_claim_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaimUpdate — the spec is immutable (and only that is checked)."""
    return _meta(new, True) + _meta_update(new, old) + m.immutable(new.get("spec"), old.get("spec"), "spec")


def _consumer_reference(ref: Any, path: str) -> list[FieldError]:
    """Upstream: validateResourceClaimUserReference"""
    ref = _dict(ref)
    return [errors.required(f"{path}.{k}") for k in ("resource", "name", "uid") if not ref.get(k)]


def _binding_parameters(conditions: Any, failures: Any, path: str) -> list[FieldError]:
    """Upstream: validateDeviceBindingParameters"""
    conditions, failures = _list(conditions), _list(failures)
    errs = validate_slice(conditions, BINDING_CONDITIONS_MAX_SIZE, m.validate_label_name, path + ".bindingConditions")
    errs += validate_slice(failures, BINDING_CONDITIONS_MAX_SIZE, m.validate_label_name,
                           path + ".bindingFailureConditions")
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        if c in seen:
            errs.append(errors.duplicate(f"{path}.bindingConditions[{i}]", c))
        seen.add(c)
    seen_failures: set[str] = set()
    for i, c in enumerate(failures):
        if c in seen_failures:
            errs.append(errors.duplicate(f"{path}.bindingFailureConditions[{i}]", c))
        seen_failures.add(c)
        if c in conditions:
            errs.append(errors.invalid(f"{path}.bindingFailureConditions[{i}]", c,
                                       "bindingFailureConditions must not overlap with bindingConditions"))
    if not conditions and failures:
        errs.append(errors.invalid(path + ".bindingConditions", conditions,
                                   "bindingConditions are required to use bindingFailureConditions"))
    if not failures and conditions:
        errs.append(errors.invalid(path + ".bindingFailureConditions", failures,
                                   "bindingFailureConditions are required to use bindingConditions"))
    return errs


def _allocation_result(names: dict[str, set[str] | None]) -> Validator:
    def validate(result: Any, path: str) -> list[FieldError]:
        """Upstream: validateDeviceRequestAllocationResult (shareID's UUID form not checked)."""
        result = _dict(result)
        errs = _request_name_ref(names)(result.get("request") or "", path + ".request")
        errs += validate_csi_driver_name(result.get("driver") or "", path + ".driver")
        errs += validate_pool_name(result.get("pool") or "", path + ".pool")
        errs += _dns1123_label(result.get("device") or "", path + ".device")
        return errs + _binding_parameters(result.get("bindingConditions"), result.get("bindingFailureConditions"), path)
    return validate


def _allocation_config(names: dict[str, set[str] | None]) -> Validator:
    def validate(config: Any, path: str) -> list[FieldError]:
        """Upstream: validateDeviceAllocationConfiguration / validateAllocationConfigSource"""
        config = _dict(config)
        source = config.get("source") or ""
        errs = [errors.required(path + ".source")] if not source else \
            [] if source in CONFIG_SOURCES else [errors.not_supported(path + ".source", source, CONFIG_SOURCES)]
        errs += validate_set(_list(config.get("requests")), DEVICE_REQUESTS_MAX_SIZE, _request_name_ref(names),
                             _str_key, path + ".requests")
        return errs + validate_device_configuration(config, path)
    return validate


def _allocation(allocation: Obj, names: dict[str, set[str] | None], path: str) -> list[FieldError]:
    """Upstream: validateAllocationResult / validateDeviceAllocationResult"""
    devices = _dict(allocation.get("devices"))
    errs = validate_slice(_list(devices.get("results")), ALLOCATION_RESULTS_MAX_SIZE, _allocation_result(names),
                          path + ".devices.results")
    errs += validate_slice(_list(devices.get("config")), 2 * DEVICE_CONFIG_MAX_SIZE, _allocation_config(names),
                           path + ".devices.config")
    if allocation.get("nodeSelector") is not None:
        errs += validate_node_selector(_dict(allocation["nodeSelector"]), path + ".nodeSelector")
    return errs


def _device_id(d: Obj) -> tuple[str, str, str, str]:
    return (d.get("driver") or "", d.get("pool") or "", d.get("device") or "", d.get("shareID") or "")


def _device_status(allocated: set[tuple[str, str, str, str]]) -> Validator:
    def validate(d: Any, path: str) -> list[FieldError]:
        """Upstream: validateDeviceStatus (identity and allocation; conditions only counted)."""
        d = _dict(d)
        errs = validate_csi_driver_name(d.get("driver") or "", path + ".driver")
        errs += validate_pool_name(d.get("pool") or "", path + ".pool")
        errs += _dns1123_label(d.get("device") or "", path + ".device")
        if _device_id(d) not in allocated:
            driver, pool, device, share = _device_id(d)
            shown = f"{driver}/{pool}/{device}" + (f"/{share}" if share else "")
            errs.append(errors.invalid(path, shown, "must be an allocated device in the claim"))
        conditions = _list(d.get("conditions"))
        if len(conditions) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
            errs.append(errors.too_many(path + ".conditions", len(conditions), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS))
        if d.get("data") is not None:
            errs += _raw_extension(d["data"], path + ".data", ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH)
        return errs
    return validate


def validate_resource_claim_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaimStatusUpdate — reservedFor needs an allocation (and gains
    no entries while the claim is being deleted); a set allocation is immutable."""
    errs = _meta_update(new, old)
    names = gather_request_names(_dict(_dict(new.get("spec")).get("devices")))
    status, old_status = _dict(new.get("status")), _dict(old.get("status"))
    reserved = _list(status.get("reservedFor"))
    errs += validate_set(reserved, RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE, _consumer_reference,
                         lambda r: _str_key(_dict(r).get("uid") or ""), "status.reservedFor")
    allocation = status.get("allocation")
    results = _list(_dict(_dict(allocation).get("devices")).get("results"))
    allocated = {_device_id(_dict(r)) for r in results}
    errs += validate_set(_list(status.get("devices")), -1, _device_status(allocated),
                         lambda d: _device_id(_dict(d)), "status.devices")
    if reserved:
        if allocation is None:
            errs.append(errors.forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
        elif (new.get("metadata") or {}).get("deletionTimestamp"):
            old_reserved = [json.dumps(r, sort_keys=True) for r in _list(old_status.get("reservedFor"))]
            if any(json.dumps(r, sort_keys=True) not in old_reserved for r in reserved):
                errs.append(errors.forbidden("status.reservedFor", "new entries may not be added while "
                                                                   "`deallocationRequested` or `deletionTimestamp` are set"))
    if old_status.get("allocation") is not None and allocation is not None:
        errs += m.immutable(allocation, old_status["allocation"], "status.allocation")
    elif allocation is not None:
        errs += _allocation(_dict(allocation), names, "status.allocation")
    return errs


def _template_meta(meta: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateTemplateObjectMeta — labels and annotations only."""
    meta = _dict(meta)
    errs = m.validate_annotations(meta.get("annotations"), path + ".annotations")
    errs += m.validate_labels(meta.get("labels"), path + ".labels")
    for key, value in meta.items():
        if key not in ("labels", "annotations") and value not in (None, "", 0, [], {}):
            errs.append(errors.forbidden(f"{path}.{key}", "cannot be set"))
    return errs


def validate_resource_claim_template(t: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaimTemplate"""
    spec = _dict(t.get("spec"))
    return _meta(t, True) + _template_meta(spec.get("metadata"), "spec.metadata") + \
        _claim_spec(spec.get("spec"), "spec.spec")


def validate_resource_claim_template_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceClaimTemplateUpdate — the spec is immutable."""
    return _meta_update(new, old) + m.immutable(new.get("spec"), old.get("spec"), "spec")


# --- device classes -------------------------------------------------------------------------------


def _is_extended_resource_name(name: str) -> bool:
    """Upstream: v1helper.IsExtendedResourceName (fully qualified, not kubernetes.io, not
    requests.-prefixed, and valid as a quota resource "requests.<name>")."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not m.validate_label_name("requests." + name, "")


def _device_class_spec(spec: Obj, old: Obj | None, path: str) -> list[FieldError]:
    """Upstream: validateDeviceClassSpec"""
    errs = validate_slice(_list(spec.get("selectors")), DEVICE_SELECTORS_MAX_SIZE, _selector, path + ".selectors")
    errs += validate_slice(_list(spec.get("config")), DEVICE_CONFIG_MAX_SIZE,
                           lambda c, p: validate_device_configuration(_dict(c), p), path + ".config")
    name = spec.get("extendedResourceName")
    if name is not None and not _is_extended_resource_name(str(name)):
        errs.append(errors.invalid(path + ".extendedResourceName", name, "must be a valid extended resource name"))
    return errs


def validate_device_class(dc: Obj) -> list[FieldError]:
    """Upstream: ValidateDeviceClass"""
    return _meta(dc, False) + _device_class_spec(_dict(dc.get("spec")), None, "spec")


def validate_device_class_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDeviceClassUpdate"""
    return _meta(new, False) + _meta_update(new, old) + \
        _device_class_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec")


# --- resource slices ----------------------------------------------------------------------------------


def _attribute(attr: Any, path: str) -> list[FieldError]:
    """Upstream: validateDeviceAttribute (exactly one of bool/int/string/version)."""
    attr = _dict(attr)
    errs: list[FieldError] = []
    fields = [k for k in ("bool", "int", "string", "version") if attr.get(k) is not None]
    if "string" in fields and len(str(attr["string"])) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        errs.append(errors.too_long(path + ".string", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if "version" in fields:
        version = str(attr["version"])
        if not _SEMVER.fullmatch(version):
            errs.append(errors.invalid(path + ".version", version, "must be a string compatible with semver.org spec 2.0.0"))
        if len(version) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            errs.append(errors.too_long(path + ".version", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if not fields:
        errs.append(errors.invalid(path, "", "exactly one value must be specified"))
    elif len(fields) > 1:
        errs.append(errors.invalid(path, errors.JSONValue(attr), "exactly one value must be specified"))
    return errs


def _q(value: Any) -> Quantity | None:
    return Quantity.parse(value)


def _step_multiple(value: Quantity, low: Quantity, step: Quantity, path: str) -> list[FieldError]:
    """Upstream: validateRequestPolicyRangeStep (on the values rounded up to integers)."""
    step_val = step.int_value()
    if step_val and (value.int_value() - low.int_value()) % step_val != 0:
        return [errors.invalid(path, str(value), f"value is not a multiple of a given step ({step}) from ({low})")]
    return []


def _request_policy(capacity: Obj, path: str) -> list[FieldError]:
    """Upstream: validateRequestPolicy / validateValidRequestValues / validateRequestPolicyValidValues /
    validateRequestPolicyRange"""
    policy = _dict(capacity.get("requestPolicy"))
    maximum, default = _q(capacity.get("value")), _q(policy.get("default"))
    valid_values, valid_range = _list(policy.get("validValues")), policy.get("validRange")
    if maximum is None:
        return []
    if valid_values and valid_range is not None:
        return [errors.forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and '
                                       '"validRange" at the same time')]
    if valid_values:
        if default is None:
            return [errors.required(path + ".default", "required when validValues is defined")]
        return _valid_values(default, maximum, valid_values, path + ".validValues")
    if valid_range is not None:
        if default is None:
            return [errors.required(path + ".default", "required when validRange is defined")]
        return _valid_range(default, maximum, _dict(valid_range), path + ".validRange")
    return []


def _valid_values(default: Quantity, maximum: Quantity, values: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    options = [_q(v) or Quantity(0) for v in values]
    for i in range(len(options) - 1):
        if options[i] > options[i + 1]:
            errs.append(errors.invalid(f"{path}[{i + 1}]", str(options[i + 1]), "values must be sorted in ascending order"))

    def option(q: Any, p: str) -> list[FieldError]:
        return [errors.invalid(p, str(q), f"option is larger than capacity value: {maximum}")] if q > maximum else []
    errs += validate_set(options, CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS, option, lambda q: q.int_value(), path)
    if default not in options:
        errs.append(errors.invalid(path, str(default), "default value is not valid according to the requestPolicy"))
    return errs


def _valid_range(default: Quantity, maximum: Quantity, rng: Obj, path: str) -> list[FieldError]:
    low, high, step = _q(rng.get("min")), _q(rng.get("max")), _q(rng.get("step"))
    if low is None:
        return [errors.required(path + ".min", "required when validRange is defined")]
    errs: list[FieldError] = []
    if low > maximum:
        errs.append(errors.invalid(path + ".min", str(low), f"min is larger than capacity value: {maximum}"))
    if default < low:
        errs.append(errors.invalid(path + ".min", str(default), f"default is less than min: {low}"))
    if high is not None:
        if low > high:
            errs.append(errors.invalid(path + ".max", str(low), f"min is larger than max: {high}"))
        if high > maximum:
            errs.append(errors.invalid(path + ".max", str(high), f"max is larger than capacity value: {maximum}"))
        if default > high:
            errs.append(errors.invalid(path + ".max", str(default), f"default is more than max: {high}"))
    if step is not None:
        added = low.add(step)
        if added > maximum:
            errs.append(errors.invalid(path + ".step", str(step),
                                       f"one step {added} is larger than capacity value: {maximum}"))
        errs += _step_multiple(default, low, step, path + ".step")
        if high is not None:
            errs += _step_multiple(high, low, step, path + ".step")
    return errs


def _capacity(multiple: bool) -> Validator:
    def validate(capacity: Any, path: str) -> list[FieldError]:
        """Upstream: validateMultiAllocatableDeviceCapacity / validateSingleAllocatableDeviceCapacity"""
        capacity = _dict(capacity)
        if capacity.get("requestPolicy") is None:
            return []
        if not multiple:
            return [errors.forbidden(path + ".requestPolicy", "allowMultipleAllocations must be true")]
        return _request_policy(capacity, path + ".requestPolicy")
    return validate


def _counter_map(counters: Any, max_size: int, path: str) -> list[FieldError]:
    """validateMap of counters: DNS-label names; any parsed quantity is valid."""
    return validate_map(_dict(counters), max_size, DNS1123_LABEL_MAX_LENGTH, _dns1123_label, lambda v, p: [], path)


def _counter_consumption(c: Any, path: str) -> list[FieldError]:
    """Upstream: validateDeviceCounterConsumption"""
    c = _dict(c)
    counter_set = c.get("counterSet") or ""
    errs = [errors.required(path + ".counterSet")] if not counter_set else _dns1123_label(counter_set, path + ".counterSet")
    if not c.get("counters"):
        return errs + [errors.required(path + ".counters")]
    return errs + _counter_map(c["counters"], RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
                               path + ".counters")


def validate_device_taint(taint: Any, old: Obj | None, path: str) -> list[FieldError]:
    """Upstream: validateDeviceTaint (the effect is checked only when it changed)."""
    taint = _dict(taint)
    errs = m.validate_label_name(taint.get("key") or "", path + ".key")
    if taint.get("value"):
        errs += _label_value(str(taint["value"]), path + ".value")
    effect = taint.get("effect") or ""
    if old is None or (old.get("effect") or "") != effect:
        if not effect:
            errs.append(errors.required(path + ".effect"))
        elif effect not in TAINT_EFFECTS:
            errs.append(errors.not_supported(path + ".effect", effect, TAINT_EFFECTS))
    return errs


def _node_choices(obj: Obj, path: str, flags: tuple[str, ...], empty_name: str,
                  one_term: bool) -> tuple[list[str], list[FieldError]]:
    """The node selection fields obj sets (as the "exactly one of" message names them) and the
    errors of each: a slice's spec and a device (perDeviceNodeSelection) choose among the same
    nodeName, nodeSelector and true-only flags; a slice's selector has exactly one term."""
    errs: list[FieldError] = []
    chosen: list[str] = []
    if obj.get("nodeName") is not None:
        if obj["nodeName"]:
            chosen.append("`nodeName`")
            errs += [errors.invalid(path + ".nodeName", obj["nodeName"], msg)
                     for msg in name_is_dns_subdomain(str(obj["nodeName"]), False)]
        else:
            errs.append(errors.invalid(path + ".nodeName", "", empty_name))
    if obj.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        selector = _dict(obj["nodeSelector"])
        errs += validate_node_selector(selector, path + ".nodeSelector")
        terms = _list(selector.get("nodeSelectorTerms"))
        if one_term and len(terms) != 1:
            errs.append(errors.invalid(path + ".nodeSelector.nodeSelectorTerms", terms,
                                       "must have exactly one node selector term"))
    for key in flags:
        if obj.get(key) is not None:
            if obj[key]:
                chosen.append(f"`{key}`")
            else:
                errs.append(errors.invalid(f"{path}.{key}", False, "must be either unset or set to true"))
    return chosen, errs


def _per_device_node_selection(device: Obj, per_device: bool, path: str) -> list[FieldError]:
    keys = ("nodeName", "nodeSelector", "allNodes")
    if not per_device:
        if any(device.get(k) is not None for k in keys):
            return [errors.invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                               "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")]
        return []
    chosen, errs = _node_choices(device, path, ("allNodes",), "must not be empty", one_term=False)
    detail = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
              "is set to true in the ResourceSlice spec")
    if not chosen:
        errs.append(errors.required(path, detail))
    elif len(chosen) > 1:
        errs.append(errors.invalid(path, "{" + ", ".join(chosen) + "}", detail))
    return errs


def _device(old_spec: Obj | None, per_device: bool) -> Validator:
    old_devices = {_dict(d).get("name"): _dict(d) for d in _list((old_spec or {}).get("devices"))}

    def validate(device: Any, path: str) -> list[FieldError]:
        """Upstream: validateDevice"""
        device = _dict(device)
        errs = _dns1123_label(device.get("name") or "", path + ".name")
        attributes, capacity = _dict(device.get("attributes")), _dict(device.get("capacity"))
        total = len(attributes) + len(capacity)
        if total > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
            errs.append(errors.invalid(path, total, "the total number of attributes and capacities must not exceed "
                                                    f"{RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}"))
        errs += validate_map(attributes, -1, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH, validate_qualified_name, _attribute,
                             path + ".attributes")
        errs += validate_map(capacity, -1, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH, validate_qualified_name,
                             _capacity(bool(device.get("allowMultipleAllocations"))), path + ".capacity")
        old = old_devices.get(device.get("name"))
        if old is None or not m.semantic_equal(old.get("taints"), device.get("taints")):
            errs += validate_slice(_list(device.get("taints")), DEVICE_TAINTS_MAX_LENGTH,
                                   lambda t, p: validate_device_taint(t, None, p), path + ".taints")
        errs += validate_set(_list(device.get("consumesCounters")), RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
                             _counter_consumption, lambda c: _str_key(_dict(c).get("counterSet") or ""),
                             path + ".consumesCounters")
        errs += _per_device_node_selection(device, per_device, path)
        return errs + _binding_parameters(device.get("bindingConditions"), device.get("bindingFailureConditions"), path)
    return validate


def _counter_set(cs: Any, path: str) -> list[FieldError]:
    """Upstream: validateCounterSet"""
    cs = _dict(cs)
    name = cs.get("name") or ""
    errs = [errors.required(path + ".name")] if not name else _dns1123_label(name, path + ".name")
    if not cs.get("counters"):
        return errs + [errors.required(path + ".counters")]
    return errs + _counter_map(cs["counters"], RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET, path + ".counters")


def _node_selection(spec: Obj, path: str) -> list[FieldError]:
    """The nodeName/nodeSelector/allNodes/perDeviceNodeSelection part of validateResourceSliceSpec."""
    chosen, errs = _node_choices(spec, path, ("allNodes", "perDeviceNodeSelection"),
                                 "must be either unset or set to a non-empty string", one_term=True)
    detail = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not chosen:
        errs.append(errors.required(path, detail))
    elif len(chosen) > 1:
        errs.append(errors.invalid(path, "{" + ", ".join(chosen) + "}", detail + ", but multiple fields are set"))
    return errs


def _resource_slice_spec(spec: Obj, old: Obj | None, path: str) -> list[FieldError]:
    """Upstream: validateResourceSliceSpec / validateResourcePool"""
    errs = validate_csi_driver_name(spec.get("driver") or "", path + ".driver")
    pool = _dict(spec.get("pool"))
    errs += validate_pool_name(pool.get("name") or "", path + ".pool.name")
    count, generation = pool.get("resourceSliceCount") or 0, pool.get("generation") or 0
    if count <= 0:
        errs.append(errors.invalid(path + ".pool.resourceSliceCount", count, "must be greater than zero"))
    if generation < 0:
        errs.append(errors.invalid(path + ".pool.generation", generation, "must be greater than or equal to zero"))
    if old is not None:
        errs += m.immutable(pool.get("name"), _dict(old.get("pool")).get("name"), path + ".pool.name")
        errs += m.immutable(spec.get("driver"), old.get("driver"), path + ".driver")
        errs += m.immutable(spec.get("nodeName"), old.get("nodeName"), path + ".nodeName")
    errs += _node_selection(spec, path)
    devices = spec.get("devices")
    if spec.get("sharedCounters") is not None and devices is not None:
        errs.append(errors.invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = _list(devices)
    max_devices = RESOURCE_SLICE_MAX_DEVICES
    if any(_dict(d).get("taints") or _dict(d).get("consumesCounters") for d in devices):
        max_devices = RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_CONSUMES_COUNTERS
    errs += validate_set(devices, max_devices, _device(old, bool(spec.get("perDeviceNodeSelection"))), _name_key,
                         path + ".devices")
    errs += validate_set(_list(spec.get("sharedCounters")), RESOURCE_SLICE_MAX_COUNTER_SETS, _counter_set, _name_key,
                         path + ".sharedCounters")
    return errs


def validate_resource_slice(s: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceSlice"""
    return _meta(s, False) + _resource_slice_spec(_dict(s.get("spec")), None, "spec")


def validate_resource_slice_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceSliceUpdate"""
    return _meta_update(new, old) + _resource_slice_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec")


# --- device taint rules -----------------------------------------------------------------------------


def _device_taint_rule_spec(spec: Obj, old: Obj | None, path: str) -> list[FieldError]:
    """Upstream: validateDeviceTaintRuleSpec / validateDeviceTaintSelector"""
    errs: list[FieldError] = []
    selector = spec.get("deviceSelector")
    if selector is not None:
        selector = _dict(selector)
        sel_path = path + ".deviceSelector"
        if selector.get("driver") is not None:
            errs += validate_csi_driver_name(selector["driver"], sel_path + ".driver")
        if selector.get("pool") is not None:
            errs += validate_pool_name(selector["pool"], sel_path + ".pool")
        if selector.get("device") is not None:
            errs += _dns1123_label(selector["device"], sel_path + ".device")
    old_taint = _dict(old.get("taint")) if old is not None else None
    return errs + validate_device_taint(spec.get("taint"), old_taint, path + ".taint")


def validate_device_taint_rule(r: Obj) -> list[FieldError]:
    """Upstream: ValidateDeviceTaintRule"""
    return _meta(r, False) + _device_taint_rule_spec(_dict(r.get("spec")), None, "spec")


def validate_device_taint_rule_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDeviceTaintRuleUpdate"""
    return _meta_update(new, old) + _device_taint_rule_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec")


def validate_device_taint_rule_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDeviceTaintRuleStatusUpdate (the conditions' count; not their fields)."""
    errs = _meta_update(new, old)
    conditions = _list(_dict(new.get("status")).get("conditions"))
    if len(conditions) > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS:
        errs.append(errors.too_many("status.conditions", len(conditions), DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS))
    return errs
