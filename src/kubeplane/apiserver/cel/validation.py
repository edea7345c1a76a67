"""Compile-time checks of a policy's (or a webhook's) CEL, as field errors with upstream's words.

Upstream: pkg/apis/admissionregistration/validation/validation.go (validateValidation,
validateMessageExpression, validateVariable, validateAuditAnnotation, validateMatchCondition,
convertCELErrorToValidationError: a compile error is `Invalid` on the expression's field with
cel's issue text). The structural checks stay in api/validation/admissionregistration.py; the
registry runs both.
"""
from __future__ import annotations

import re
from typing import Any

from ...api import errors
from ...api.errors import FieldError
from ...api.validation import admissionregistration
from ...api.validation.names import is_qualified_name
from . import compiler
from .activation import REQUEST_RESOURCE
from .matchconditions import VARIABLES as WEBHOOK_VARIABLES

Obj = dict[str, Any]

MAX_AUDIT_ANNOTATIONS = 20
MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH = 5 * 1024
SUPPORTED_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
_CEL_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"})


def policy_variables(spec: Obj, authorizer: bool = True) -> tuple[str, ...]:
    """The variables a policy's expressions see. Upstream: createEnvForOpts (params only with a
    paramKind, `variables` only when the policy declares some, no authorizer for messages)."""
    names = ["object", "oldObject", "request", "namespaceObject"]
    if spec.get("paramKind") is not None:
        names.append("params")
    if authorizer:
        names += ["authorizer", REQUEST_RESOURCE]
    if spec.get("variables"):
        names.append("variables")
    return tuple(names)


def _compile_errors(env: compiler.Env, expression: str, path: str, return_types: tuple[str, ...]) -> list[FieldError]:
    r = env.compile(expression, return_types)
    return [errors.invalid(path, expression, r.error)] if r.error else []


def match_condition_errors(conditions: list[Any], path: str, variables: tuple[str, ...] | None = None) -> list[FieldError]:
    """The compile errors of matchConditions' expressions (names and presence: the structural checks)."""
    env = compiler.env(*(variables or WEBHOOK_VARIABLES))
    errs: list[FieldError] = []
    for i, c in enumerate(conditions):
        expression = str((c or {}).get("expression") or "").strip() if isinstance(c, dict) else ""
        if expression:
            errs += _compile_errors(env, expression, f"{path}[{i}].expression", (compiler.BOOL,))
    return errs


def validating_admission_policy_errors(obj: Obj) -> list[FieldError]:
    """Upstream: the CEL parts of validateValidatingAdmissionPolicySpec."""
    spec = obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name") or ""
    env = compiler.env(*policy_variables(spec))
    message_env = compiler.env(*policy_variables(spec, authorizer=False))
    errs = match_condition_errors(spec.get("matchConditions") or [], "spec.matchConditions", env.variables)
    for i, v in enumerate(spec.get("variables") or []):
        errs += _variable(env, v if isinstance(v, dict) else {}, f"spec.variables[{i}]")
    for i, v in enumerate(spec.get("validations") or []):
        errs += _validation(env, message_env, v if isinstance(v, dict) else {}, f"spec.validations[{i}]")
    annotations = spec.get("auditAnnotations") or []
    if len(annotations) > MAX_AUDIT_ANNOTATIONS:
        errs.append(errors.invalid("spec.auditAnnotations", annotations,
                                   f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"))
    keys: set[Any] = set()
    for i, x in enumerate(annotations):
        x = x if isinstance(x, dict) else {}
        errs += _audit_annotation(env, name, x, f"spec.auditAnnotations[{i}]")
        if x.get("key") in keys:
            errs.append(errors.duplicate(f"spec.auditAnnotations[{i}].key", x.get("key")))
        keys.add(x.get("key"))
    return errs


def _variable(env: compiler.Env, v: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name, expression = str(v.get("name") or ""), str(v.get("expression") or "")
    if not name.strip():
        errs.append(errors.required(path + ".name", "name is not specified"))
    elif not _CEL_IDENTIFIER.match(name) or name in _CEL_RESERVED:
        errs.append(errors.invalid(path + ".name", name, "name is not a valid CEL identifier"))
    if not expression.strip():
        errs.append(errors.required(path + ".expression", "expression is not specified"))
    else:
        errs += _compile_errors(env, expression, path + ".expression", (compiler.ANY,))
    return errs


def _validation(env: compiler.Env, message_env: compiler.Env, v: Obj, path: str) -> list[FieldError]:
    """Upstream: validateValidation."""
    errs: list[FieldError] = []
    expression = str(v.get("expression") or "")
    message = v.get("message")
    message_expression = v.get("messageExpression")
    if not expression.strip():
        errs.append(errors.required(path + ".expression", "expression is not specified"))
    else:
        errs += _compile_errors(env, expression, path + ".expression", (compiler.BOOL,))
    if message_expression and not str(message_expression).strip():
        errs.append(errors.invalid(path + ".messageExpression", message_expression, "must be non-empty if specified"))
    elif message_expression:
        errs += _compile_errors(message_env, str(message_expression), path + ".messageExpression", (compiler.STRING,))
    if message and not str(message).strip():
        errs.append(errors.invalid(path + ".message", message, "message must be non-empty if specified"))
    elif message and re.search(r"[\n\r]", str(message).strip()):
        errs.append(errors.invalid(path + ".message", message, "message must not contain line breaks"))
    reason = v.get("reason")
    if reason is not None and reason not in SUPPORTED_REASONS:
        errs.append(errors.not_supported(path + ".reason", reason, SUPPORTED_REASONS))
    return errs


def _audit_annotation(env: compiler.Env, name: str, x: Obj, path: str) -> list[FieldError]:
    """Upstream: validateAuditAnnotation."""
    errs: list[FieldError] = []
    key = str(x.get("key") or "")
    if name:
        errs += [errors.invalid(path + ".key", f"{name}/{key}", msg) for msg in is_qualified_name(f"{name}/{key}")]
    else:
        errs.append(errors.invalid(path + ".key", key, "requires metadata.name be non-empty"))
    value = str(x.get("valueExpression") or "").strip()
    if not value:
        errs.append(errors.required(path + ".valueExpression", "valueExpression is not specified"))
    elif len(value) > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH:
        errs.append(errors.required(path + ".valueExpression",
                                    f"must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length"))
    else:
        r = env.compile(value, (compiler.STRING, "null_type"))
        if r.error:
            errs.append(errors.invalid(path + ".valueExpression", x.get("valueExpression"), r.error))
    return errs


def validate_validating_admission_policy(obj: Obj) -> list[FieldError]:
    """The structural checks, then the CEL ones (the registry's validate for the kind)."""
    return admissionregistration.validate_validating_admission_policy(obj) + validating_admission_policy_errors(obj)


def validate_validating_admission_policy_update(new: Obj, old: Obj) -> list[FieldError]:
    return (admissionregistration.validate_validating_admission_policy_update(new, old)
            + validating_admission_policy_errors(new))


def mutating_admission_policy_errors(obj: Obj) -> list[FieldError]:
    """Upstream: the CEL parts of validateMutatingAdmissionPolicySpec — matchConditions,
    variables and each mutation's expression (its Object/JSONPatch literals rewritten as the
    plugin compiles them: mutation.py) must compile."""
    from . import mutation
    spec = obj.get("spec") or {}
    env = compiler.env(*policy_variables(spec))
    errs = match_condition_errors(spec.get("matchConditions") or [], "spec.matchConditions", env.variables)
    for i, v in enumerate(spec.get("variables") or []):
        errs += _variable(env, v if isinstance(v, dict) else {}, f"spec.variables[{i}]")
    for i, m in enumerate(spec.get("mutations") or []):
        m = m if isinstance(m, dict) else {}
        field = "applyConfiguration" if m.get("patchType") == "ApplyConfiguration" else "jsonPatch"
        expression = str((m.get(field) or {}).get("expression") or "") if isinstance(m.get(field), dict) else ""
        if expression.strip():
            r = env.compile(mutation.rewrite(expression).expression, (compiler.ANY,))
            if r.error:
                errs.append(errors.invalid(f"spec.mutations[{i}].{field}.expression", expression, r.error))
    return errs


def validate_mutating_admission_policy(obj: Obj) -> list[FieldError]:
    return admissionregistration.validate_mutating_admission_policy(obj) + mutating_admission_policy_errors(obj)


def validate_mutating_admission_policy_update(new: Obj, old: Obj) -> list[FieldError]:
    return (admissionregistration.validate_mutating_admission_policy_update(new, old)
            + mutating_admission_policy_errors(new))


def validate_webhook_configuration(obj: Obj, mutating: bool) -> list[FieldError]:
    """Upstream: ValidateValidating/MutatingWebhookConfiguration — the structural checks, then
    each webhook's matchConditions compiled (validateMatchConditions)."""
    errs = (admissionregistration.validate_mutating_webhook_configuration(obj) if mutating
            else admissionregistration.validate_validating_webhook_configuration(obj))
    return errs + _webhook_match_condition_errors(obj)


def validate_webhook_configuration_update(new: Obj, old: Obj, mutating: bool) -> list[FieldError]:
    update = (admissionregistration.validate_mutating_webhook_configuration_update if mutating
              else admissionregistration.validate_validating_webhook_configuration_update)
    return update(new, old) + _webhook_match_condition_errors(new)


def _webhook_match_condition_errors(obj: Obj) -> list[FieldError]:
    webhooks = obj.get("webhooks")
    errs: list[FieldError] = []
    for i, h in enumerate(webhooks if isinstance(webhooks, list) else ()):
        conditions = h.get("matchConditions") if isinstance(h, dict) else None
        if isinstance(conditions, list):
            errs += match_condition_errors(conditions, f"webhooks[{i}].matchConditions")
    return errs
