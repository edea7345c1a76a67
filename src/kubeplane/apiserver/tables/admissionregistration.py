"""Tables of admissionregistration.k8s.io/v1. Upstream: AddHandlers (pkg/printers/internalversion/printers.go):
printMutatingWebhook, printValidatingWebhook, printValidatingAdmissionPolicy(Binding),
printMutatingAdmissionPolicy(Binding)."""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _name
from .printers import Row, label_selector_string, translate_timestamp_since

Obj = dict[str, Any]


def _row(obj: Obj, now: float, *cells: Any) -> Row:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), *cells, translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def webhook_columns() -> list[Column]:
    return [_name(), _col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"), _age()]


def print_webhook_configuration(obj: Obj, now: float) -> Row:
    return _row(obj, now, len(obj.get("webhooks") or []))


def _param_kind(spec: Obj) -> str:
    pk = spec.get("paramKind")
    return f"{pk.get('apiVersion', '')}/{pk.get('kind', '')}" if isinstance(pk, dict) else "<unset>"


def validating_policy_columns() -> list[Column]:
    return [_name(), _col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
            _col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"), _age()]


def print_validating_policy(obj: Obj, now: float) -> Row:
    spec = obj.get("spec") or {}
    return _row(obj, now, len(spec.get("validations") or []), _param_kind(spec))


def mutating_policy_columns() -> list[Column]:
    return [_name(), _col("Mutations", "integer", "Mutation indicates the number of mutations rules defined in this configuration"),
            _col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"), _age()]


def print_mutating_policy(obj: Obj, now: float) -> Row:
    spec = obj.get("spec") or {}
    return _row(obj, now, len(spec.get("mutations") or []), _param_kind(spec))


def binding_columns() -> list[Column]:
    return [_name(), _col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
            _col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"), _age()]


def print_policy_binding(obj: Obj, now: float) -> Row:
    spec = obj.get("spec") or {}
    param = "<unset>"
    pr = spec.get("paramRef")
    if isinstance(pr, dict):
        if pr.get("name"):
            param = f"{pr.get('namespace') or '*'}/{pr['name']}"
        elif pr.get("selector") is not None:
            param = label_selector_string(pr.get("selector")) or "*"
    return _row(obj, now, spec.get("policyName") or "", param)
