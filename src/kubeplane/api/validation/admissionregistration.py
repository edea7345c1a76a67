"""admissionregistration.k8s.io/v1 validation. Upstream: pkg/apis/admissionregistration/validation/validation.go.

Checked for webhooks: names (qualified, unique), rules, failurePolicy, matchPolicy, sideEffects,
timeoutSeconds, admissionReviewVersions, clientConfig (url or service), reinvocationPolicy,
selectors. For the policies: paramKind, matchConstraints presence, failurePolicy, the
validations'/mutations' presence, bindings' policyName and validationActions. Left out: CEL
compilation and type checking of expressions (matchConditions: count, names and presence only).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain

Obj = dict[str, Any]

REVIEW_VERSIONS = ["v1", "v1beta1"]
OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]


def _meta(obj: Obj) -> list[FieldError]:
    return m.validate_object_meta(obj.get("metadata") or {}, False, name_is_dns_subdomain)


def validate_rule(rule: Obj, path: str, operations: bool = True) -> list[FieldError]:
    """Upstream: validateRuleWithOperations / validateRule (the required lists and the scope)."""
    errs: list[FieldError] = []
    if operations:
        ops = rule.get("operations") or []
        if not ops:
            errs.append(errors.required(path + ".operations"))
        for i, op in enumerate(ops):
            if op not in OPERATIONS:
                errs.append(errors.not_supported(f"{path}.operations[{i}]", op, OPERATIONS))
    for key in ("apiGroups", "apiVersions", "resources"):
        if not rule.get(key):
            errs.append(errors.required(f"{path}.{key}"))
    scope = rule.get("scope")
    if scope is not None and scope not in ("*", "Cluster", "Namespaced"):
        errs.append(errors.not_supported(path + ".scope", scope, ["*", "Cluster", "Namespaced"]))
    return errs


def validate_client_config(cc: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateWebhookURL / ValidateWebhookService — exactly one of url or service."""
    url, svc = cc.get("url"), cc.get("service")
    if (url is None) == (svc is None):
        return [errors.required(path, "exactly one of url or service is required")]
    errs: list[FieldError] = []
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme != "https":
            errs.append(errors.invalid(path + ".url", url, "'https' is the only allowed URL scheme"))
        if not parts.hostname:
            errs.append(errors.invalid(path + ".url", url, "host must be specified"))
        if parts.username or parts.password:
            errs.append(errors.invalid(path + ".url", url, "user information is not permitted in the URL"))
        if parts.fragment:
            errs.append(errors.invalid(path + ".url", url, "fragments are not permitted in the URL"))
        if parts.query:
            errs.append(errors.invalid(path + ".url", url, "query parameters are not permitted in the URL"))
        return errs
    spath, svc = path + ".service", svc or {}
    if not svc.get("name"):
        errs.append(errors.required(spath + ".name", "service name is required"))
    if not svc.get("namespace"):
        errs.append(errors.required(spath + ".namespace", "service namespace is required"))
    p = svc.get("path")
    if p is not None and not p.startswith("/"):
        errs.append(errors.invalid(spath + ".path", p, "must start with a '/'"))
    port = svc.get("port")
    if port is not None and not 1 <= port <= 65535:
        errs.append(errors.invalid(spath + ".port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    return errs


def validate_webhook(w: Obj, path: str, mutating: bool) -> list[FieldError]:
    """Upstream: validateValidatingWebhook / validateMutatingWebhook (the v1 rules)."""
    errs: list[FieldError] = []
    name = w.get("name") or ""
    errs += [errors.invalid(path + ".name", name, msg) for msg in is_dns1123_subdomain(name)]
    if name.count(".") < 2:
        errs.append(errors.invalid(path + ".name", name, "should be a domain with at least three segments separated by dots"))
    for i, rule in enumerate(w.get("rules") or []):
        errs += validate_rule(rule or {}, f"{path}.rules[{i}]")
    fp = w.get("failurePolicy")
    if fp is not None and fp not in ("Fail", "Ignore"):
        errs.append(errors.not_supported(path + ".failurePolicy", fp, ["Fail", "Ignore"]))
    mp = w.get("matchPolicy")
    if mp is not None and mp not in ("Equivalent", "Exact"):
        errs.append(errors.not_supported(path + ".matchPolicy", mp, ["Equivalent", "Exact"]))
    se = w.get("sideEffects")
    if se is None:
        errs.append(errors.required(path + ".sideEffects", "must specify one of None, NoneOnDryRun"))
    elif se not in ("None", "NoneOnDryRun"):
        errs.append(errors.not_supported(path + ".sideEffects", se, ["None", "NoneOnDryRun"]))
    timeout = w.get("timeoutSeconds")
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(errors.invalid(path + ".timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    errs += _review_versions(w.get("admissionReviewVersions"), path + ".admissionReviewVersions")
    errs += validate_client_config(w.get("clientConfig") or {}, path + ".clientConfig")
    errs += m.validate_label_selector(w.get("namespaceSelector"), path + ".namespaceSelector")
    errs += m.validate_label_selector(w.get("objectSelector"), path + ".objectSelector")
    if mutating:
        rp = w.get("reinvocationPolicy")
        if rp is not None and rp not in ("IfNeeded", "Never"):
            errs.append(errors.not_supported(path + ".reinvocationPolicy", rp, ["IfNeeded", "Never"]))
    return errs + validate_match_conditions(w.get("matchConditions") or [], path + ".matchConditions")


MAX_MATCH_CONDITIONS = 64


def validate_match_conditions(conditions: list[Any], path: str) -> list[FieldError]:
    """Upstream: validateMatchConditions / validateMatchCondition — at most 64, names required,
    qualified and unique, expressions required (their CEL is not compiled: issue 12)."""
    errs: list[FieldError] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        errs.append(errors.too_many(path, len(conditions), MAX_MATCH_CONDITIONS))
    names: set[str] = set()
    for i, c in enumerate(conditions):
        c = c if isinstance(c, dict) else {}
        if not str(c.get("expression") or "").strip():
            errs.append(errors.required(f"{path}[{i}].expression"))
        name = str(c.get("name") or "")
        if not name:
            errs.append(errors.required(f"{path}[{i}].name"))
        else:
            errs += [errors.invalid(f"{path}[{i}].name", name, msg) for msg in is_qualified_name(name)]
            if name in names:
                errs.append(errors.duplicate(f"{path}[{i}].name", name))
            names.add(name)
    return errs


def _review_versions(versions: Any, path: str) -> list[FieldError]:
    """Upstream: validateAdmissionReviewVersions"""
    if not versions:
        return [errors.required(path, "must specify one of " + ", ".join(REVIEW_VERSIONS))]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(errors.invalid(f"{path}[{i}]", v, "duplicate version"))
        seen.add(v)
        errs += [errors.invalid(f"{path}[{i}]", v, msg) for msg in is_dns1123_label(v)]
    if not seen & set(REVIEW_VERSIONS):
        errs.append(errors.invalid(path, versions, "must include at least one of " + ", ".join(REVIEW_VERSIONS)))
    return errs


def _configuration(obj: Obj, mutating: bool) -> list[FieldError]:
    errs = _meta(obj)
    names: set[str] = set()
    for i, w in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{i}]"
        errs += validate_webhook(w or {}, path, mutating)
        name = (w or {}).get("name") or ""
        if name in names:
            errs.append(errors.duplicate(path + ".name", name))
        names.add(name)
    return errs


def validate_validating_webhook_configuration(obj: Obj) -> list[FieldError]:
    """Upstream: ValidateValidatingWebhookConfiguration"""
    return _configuration(obj, False)


def validate_mutating_webhook_configuration(obj: Obj) -> list[FieldError]:
    """Upstream: ValidateMutatingWebhookConfiguration"""
    return _configuration(obj, True)


def _update(create: Any) -> Any:
    def update(new: Obj, old: Obj) -> list[FieldError]:
        errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
        return errs + [e for e in create(new) if not e.field.startswith("metadata.")]
    return update


validate_validating_webhook_configuration_update = _update(validate_validating_webhook_configuration)
validate_mutating_webhook_configuration_update = _update(validate_mutating_webhook_configuration)


def _param_kind(pk: Any, path: str) -> list[FieldError]:
    if pk is None:
        return []
    errs: list[FieldError] = []
    if not pk.get("kind"):
        errs.append(errors.required(path + ".kind"))
    if not pk.get("apiVersion"):
        errs.append(errors.required(path + ".apiVersion"))
    return errs


def _policy(obj: Obj, mutating: bool) -> list[FieldError]:
    """Upstream: ValidateValidatingAdmissionPolicy / ValidateMutatingAdmissionPolicy (the
    structural rules; expressions are not compiled)."""
    spec = obj.get("spec") or {}
    errs = _meta(obj) + _param_kind(spec.get("paramKind"), "spec.paramKind")
    mc = spec.get("matchConstraints")
    if mc is None:
        errs.append(errors.required("spec.matchConstraints", "must be specified when validating or mutating"))
    else:
        rules = mc.get("resourceRules") or []
        if not rules:
            errs.append(errors.required("spec.matchConstraints.resourceRules"))
        for i, r in enumerate(rules):
            errs += validate_rule(r or {}, f"spec.matchConstraints.resourceRules[{i}]")
    fp = spec.get("failurePolicy")
    if fp is not None and fp not in ("Fail", "Ignore"):
        errs.append(errors.not_supported("spec.failurePolicy", fp, ["Fail", "Ignore"]))
    if mutating:
        if not spec.get("mutations"):
            errs.append(errors.required("spec.mutations", "mutations must contain at least one item"))
        rp = spec.get("reinvocationPolicy")
        if rp is not None and rp not in ("IfNeeded", "Never"):
            errs.append(errors.not_supported("spec.reinvocationPolicy", rp, ["IfNeeded", "Never"]))
    elif not spec.get("validations") and not spec.get("auditAnnotations"):
        errs.append(errors.required("spec.validations", "validations or auditAnnotations must contain at least one item"))
    for i, v in enumerate(spec.get("validations") or []):
        if not (v or {}).get("expression"):
            errs.append(errors.required(f"spec.validations[{i}].expression"))
    return errs + validate_match_conditions(spec.get("matchConditions") or [], "spec.matchConditions")


def validate_validating_admission_policy(obj: Obj) -> list[FieldError]:
    return _policy(obj, False)


def validate_mutating_admission_policy(obj: Obj) -> list[FieldError]:
    return _policy(obj, True)


validate_validating_admission_policy_update = _update(validate_validating_admission_policy)
validate_mutating_admission_policy_update = _update(validate_mutating_admission_policy)

ACTIONS = ["Audit", "Deny", "Warn"]


def _binding(obj: Obj, mutating: bool) -> list[FieldError]:
    """Upstream: ValidateValidatingAdmissionPolicyBinding / ValidateMutatingAdmissionPolicyBinding."""
    spec = obj.get("spec") or {}
    errs = _meta(obj)
    if not spec.get("policyName"):
        errs.append(errors.required("spec.policyName"))
    if not mutating:
        actions = spec.get("validationActions") or []
        if not actions:
            errs.append(errors.required("spec.validationActions"))
        seen: set[str] = set()
        for i, a in enumerate(actions):
            if a in seen:
                errs.append(errors.duplicate(f"spec.validationActions[{i}]", a))
            seen.add(a)
            if a not in ACTIONS:
                errs.append(errors.not_supported(f"spec.validationActions[{i}]", a, ACTIONS))
        if {"Deny", "Warn"} <= seen:
            errs.append(errors.invalid("spec.validationActions", actions,
                                       "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
    pr = spec.get("paramRef")
    if pr is not None:
        if pr.get("name") and pr.get("selector") is not None:
            errs.append(errors.forbidden("spec.paramRef.name", "name and selector are mutually exclusive"))
        action = pr.get("parameterNotFoundAction")
        if action is None:
            errs.append(errors.required("spec.paramRef.parameterNotFoundAction"))
        elif action not in ("Allow", "Deny"):
            errs.append(errors.not_supported("spec.paramRef.parameterNotFoundAction", action, ["Allow", "Deny"]))
    return errs


def validate_validating_admission_policy_binding(obj: Obj) -> list[FieldError]:
    return _binding(obj, False)


def validate_mutating_admission_policy_binding(obj: Obj) -> list[FieldError]:
    return _binding(obj, True)


validate_validating_admission_policy_binding_update = _update(validate_validating_admission_policy_binding)
validate_mutating_admission_policy_binding_update = _update(validate_mutating_admission_policy_binding)
