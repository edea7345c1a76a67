"""NodeSelector validation: a PersistentVolume's nodeAffinity.required (and, later, a pod's
required node affinity, which shares these rules).

Upstream: ValidateNodeSelector, ValidateNodeSelectorTerm, ValidateNodeSelectorRequirement,
ValidateNodeFieldSelectorRequirement (pkg/apis/core/validation/validation.go). The values of an
expression are label values (AllowInvalidLabelValueInRequiredNodeAffinity is false for new
objects); the semver operators behind their alpha gate are not accepted.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_valid_label_value, name_is_dns_subdomain

Obj = dict[str, Any]
# metav1.ObjectNameField -> ValidateNodeName
_NODE_FIELD_VALIDATORS = {"metadata.name": name_is_dns_subdomain}


def validate_node_selector(selector: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateNodeSelector"""
    terms = selector.get("nodeSelectorTerms") or []
    term_path = path + ".nodeSelectorTerms"
    if not terms:
        return [errors.required(term_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        errs += validate_node_selector_term(term or {}, f"{term_path}[{i}]")
    return errs


def validate_node_selector_term(term: Obj, path: str, allow_invalid_label_value: bool = False) -> list[FieldError]:
    """Upstream: ValidateNodeSelectorTerm (a preferred term allows invalid label values)."""
    errs: list[FieldError] = []
    for j, req in enumerate(term.get("matchExpressions") or []):
        errs += validate_node_selector_requirement(req or {}, f"{path}.matchExpressions[{j}]",
                                                   allow_invalid_label_value)
    for j, req in enumerate(term.get("matchFields") or []):
        errs += validate_node_field_selector_requirement(req or {}, f"{path}.matchFields[{j}]")
    return errs


def validate_node_selector_requirement(req: Obj, path: str, allow_invalid_label_value: bool = False) -> list[FieldError]:
    """Upstream: ValidateNodeSelectorRequirement"""
    errs: list[FieldError] = []
    op, values = req.get("operator") or "", req.get("values") or []
    if op in ("In", "NotIn"):
        if not values:
            errs.append(errors.required(path + ".values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(errors.forbidden(path + ".values",
                                         "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(errors.required(path + ".values",
                                        "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(errors.invalid(path + ".operator", op, "not a valid selector operator"))
    errs += m.validate_label_name(req.get("key") or "", path + ".key")
    if allow_invalid_label_value:
        return errs
    for i, value in enumerate(values):
        errs += [errors.invalid(f"{path}.values[{i}]", value, msg) for msg in is_valid_label_value(str(value))]
    return errs


def validate_node_field_selector_requirement(req: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateNodeFieldSelectorRequirement (only metadata.name, one value)."""
    errs: list[FieldError] = []
    op, values, key = req.get("operator") or "", req.get("values") or [], req.get("key") or ""
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(errors.required(path + ".values", "must be only one value when `operator` is 'In' or "
                                                          "'NotIn' for node field selector"))
    else:
        errs.append(errors.invalid(path + ".operator", op, "not a valid selector operator"))
    validator = _NODE_FIELD_VALIDATORS.get(key)
    if validator is None:
        errs.append(errors.invalid(path + ".key", key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errs += [errors.invalid(f"{path}.values[{i}]", value, msg) for msg in validator(str(value), False)]
    return errs
