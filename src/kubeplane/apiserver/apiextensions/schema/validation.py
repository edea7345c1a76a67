"""The structural rules a CRD schema must follow.

Upstream: ValidateStructural, validateStructuralInvariants, validateStructuralMetadataInvariants,
validateValueValidation, validateNestedValueValidation (pkg/apiserver/schema/validation.go) and
validateStructuralCompleteness (complete.go). Errors are sorted by their text, as upstream does
(its maps iterate in random order).
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from .regex import compile_go_regexp
from .structural import (X_EMBEDDED, X_INT_OR_STRING, X_LIST_MAP_KEYS, X_LIST_TYPE, X_MAP_TYPE,
                         X_PRESERVE, NestedValueValidation, Structural, ValueValidation,
                         structural_from)

ROOT, ITEM, FIELD = 0, 1, 2       # upstream's level: rootLevel, itemLevel, fieldLevel


def child(path: str, name: str) -> str:
    """field.Path.Child: `a.b`, or `b` at a nil root."""
    return f"{path}.{name}" if path else name


def key(path: str, k: str) -> str:
    """field.Path.Key: `a[k]`."""
    return f"{path}[{k}]"


def index(path: str, i: int) -> str:
    """field.Path.Index: `a[0]`."""
    return f"{path}[{i}]"


def validate_structural(schema: Structural | dict[str, Any], fld_path: str = "") -> list[FieldError]:
    """Upstream: ValidateStructural. `schema` is a Structural or the JSONSchemaProps dict (then a
    conversion failure is reported as upstream's validateCustomResourceDefinitionValidation
    does: Invalid at the path with an empty value)."""
    s = schema if isinstance(schema, Structural) else structural_from(schema)
    if s.conversion_errors:
        return [errors.invalid(fld_path, "", s.conversion_errors[0])]
    errs = _invariants(s, ROOT, fld_path)
    errs += _completeness(s.value_validation, s, fld_path, fld_path)
    errs.sort(key=str)
    return errs


def _invariants(s: Structural | None, lvl: int, p: str) -> list[FieldError]:
    """Upstream: validateStructuralInvariants"""
    if s is None:
        return []
    errs: list[FieldError] = []
    if s.type == "array" and s.items is None:
        errs.append(errors.required(child(p, "items"), "must be specified"))
    errs += _invariants(s.items, ITEM, child(p, "items"))
    for k, v in s.properties.items():
        errs += _invariants(v, FIELD, key(child(p, "properties"), k))
    if s.additional_properties is not None:
        if lvl == ROOT:
            errs.append(errors.forbidden(child(p, "additionalProperties"), "must not be used at the root"))
        errs += _invariants(s.additional_properties_schema, FIELD, child(p, "additionalProperties"))
    errs += _extensions(s, p)
    errs += _value_validation(s.value_validation, _is_int_or_string_any_of(s.value_validation),
                              _is_int_or_string_all_of(s.value_validation), lvl, p)
    errs += _type_rules(s, lvl, p)
    check_metadata = lvl == ROOT or s.x_embedded_resource
    for name in ("kind", "apiVersion"):
        prop = s.properties.get(name)
        if prop is not None and check_metadata and prop.type != "string":
            errs.append(errors.invalid(child(key(child(p, "properties"), name), "type"), prop.type, "must be string"))
    if "metadata" in s.properties:
        errs += _metadata_invariants(s.properties["metadata"], check_metadata, lvl,
                                     key(child(p, "properties"), "metadata"))
    if s.x_embedded_resource and not s.x_preserve_unknown_fields and not s.properties:
        errs.append(errors.required(child(p, "properties"), "must not be empty if x-kubernetes-embedded-resource "
                                    "is true without x-kubernetes-preserve-unknown-fields"))
    return errs


def _type_rules(s: Structural, lvl: int, p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    tp = child(p, "type")
    if s.x_embedded_resource and s.type != "object":
        msg = "must be object if x-kubernetes-embedded-resource is true"
        errs.append(errors.required(tp, msg) if not s.type else errors.invalid(tp, s.type, msg))
    elif not s.type and not s.x_int_or_string and not s.x_preserve_unknown_fields:
        where = {ROOT: "at the root", ITEM: "for specified array items", FIELD: "for specified object fields"}[lvl]
        errs.append(errors.required(tp, f"must not be empty {where}"))
    if s.x_embedded_resource and s.additional_properties is not None:
        errs.append(errors.forbidden(child(p, "additionalProperties"),
                                     "must not be used if x-kubernetes-embedded-resource is set"))
    if lvl == ROOT and s.type and s.type != "object":
        errs.append(errors.invalid(tp, s.type, "must be object at the root"))
    return errs


def _metadata_invariants(s: Structural, check_metadata: bool, lvl: int, p: str) -> list[FieldError]:
    """Upstream: validateStructuralMetadataInvariants — at the root, metadata may only restrict
    name and generateName (anything else would be silently ignored by the ObjectMeta codec)."""
    errs: list[FieldError] = []
    if check_metadata and s.type != "object":
        errs.append(errors.invalid(child(p, "type"), s.type, "must be object"))
    if lvl == ROOT:
        props = set(s.raw.get("properties") or {}) if isinstance(s.raw.get("properties"), dict) else set()
        extra = {k for k, v in s.raw.items() if k not in ("type", "default", "properties") and v not in (False, None)}
        if extra or not props <= {"name", "generateName"}:
            errs.append(errors.forbidden(p, "must not specify anything other than name and generateName, "
                                            "but metadata is implicitly specified"))
    return errs


def _is_int_or_string(vs: list[NestedValueValidation]) -> bool:
    return len(vs) == 2 and vs[0].raw == {"type": "integer"} and vs[1].raw == {"type": "string"}


def _is_int_or_string_any_of(v: ValueValidation | None) -> bool:
    """Upstream: isIntOrStringAnyOfPattern"""
    return v is not None and _is_int_or_string(v.any_of)


def _is_int_or_string_all_of(v: ValueValidation | None) -> bool:
    """Upstream: isIntOrStringAllOfPattern"""
    return v is not None and len(v.all_of) >= 1 and _is_int_or_string(v.all_of[0].vv.any_of)


def _extensions(s: Structural, p: str) -> list[FieldError]:
    """Upstream: validateExtensions"""
    errs: list[FieldError] = []
    if s.x_int_or_string and s.x_preserve_unknown_fields:
        errs.append(errors.invalid(child(p, X_PRESERVE), True, "must be false if x-kubernetes-int-or-string is true"))
    if s.x_int_or_string and s.x_embedded_resource:
        errs.append(errors.invalid(child(p, X_EMBEDDED), True, "must be false if x-kubernetes-int-or-string is true"))
    return errs


def _value_validation(v: ValueValidation | None, skip_any_of: bool, skip_first_all_of_any_of: bool,
                      lvl: int, p: str) -> list[FieldError]:
    """Upstream: validateValueValidation"""
    if v is None:
        return []
    errs: list[FieldError] = []
    if not skip_any_of:
        for i, x in enumerate(v.any_of):
            errs += _nested(x, False, lvl, index(child(p, "anyOf"), i))
    for i, x in enumerate(v.all_of):
        errs += _nested(x, skip_first_all_of_any_of and i == 0, lvl, index(child(p, "allOf"), i))
    for i, x in enumerate(v.one_of):
        errs += _nested(x, False, lvl, index(child(p, "oneOf"), i))
    errs += _nested(v.not_, False, lvl, child(p, "not"))
    if v.pattern:
        err = compile_go_regexp(v.pattern)[1]
        if err:
            errs.append(errors.invalid(child(p, "pattern"), v.pattern,
                                       f"must be a valid regular expression, but isn't: {err}"))
    return errs


# Skeleton fields a value validation must not carry: (key, test of its value, message).
_FORBIDDEN = (
    ("type", lambda v: bool(v), "must be empty to be structural"),
    ("default", lambda v: v is not None, "must be undefined to be structural"),
    ("title", lambda v: bool(v), "must be empty to be structural"),
    ("description", lambda v: bool(v), "must be empty to be structural"),
    ("nullable", lambda v: v is True, "must be false to be structural"),
    (X_PRESERVE, lambda v: v is True, "must be false to be structural"),
    (X_EMBEDDED, lambda v: v is True, "must be false to be structural"),
    (X_INT_OR_STRING, lambda v: v is True, "must be false to be structural"),
    (X_LIST_MAP_KEYS, lambda v: bool(v), "must be empty to be structural"),
    (X_LIST_TYPE, lambda v: v is not None, "must be undefined to be structural"),
    (X_MAP_TYPE, lambda v: v is not None, "must be undefined to be structural"),
)


def _nested(v: NestedValueValidation | None, skip_any_of: bool, lvl: int, p: str) -> list[FieldError]:
    """Upstream: validateNestedValueValidation (CRDs: no additionalProperties and no
    x-kubernetes-validations under a junctor)."""
    if v is None:
        return []
    errs = _value_validation(v.vv, skip_any_of, False, lvl, p)
    errs += _nested(v.items, False, lvl, child(p, "items"))
    for k, x in (v.properties or {}).items():
        errs += _nested(x, False, FIELD, key(child(p, "properties"), k))
    if v.additional_properties is not None:
        errs.append(errors.forbidden(child(p, "additionalProperties"), "must be undefined to be structural"))
    forbidden = {**v.forbidden_generics, **v.forbidden_extensions}
    for name, present, msg in _FORBIDDEN:
        if name in forbidden and present(forbidden[name]):
            errs.append(errors.forbidden(child(p, name), msg))
    if v.x_validations:
        errs.append(errors.forbidden(child(p, "x-kubernetes-validations"), "must be empty to be structural"))
    if v.properties and "metadata" in v.properties:
        errs.append(errors.forbidden(key(child(p, "properties"), "metadata"), "must not be specified in a nested context"))
    return errs


def _completeness(v: ValueValidation | None, s: Structural | None, s_path: str, v_path: str) -> list[FieldError]:
    """Upstream: validateValueValidationCompleteness — every value validation applies to
    something the skeleton specifies."""
    if v is None:
        return []
    if s is None:
        return [errors.required(s_path, f"because it is defined in {v_path or '<nil>'}")]
    errs = _nested_completeness(v.not_, s, s_path, child(v_path, "not"))
    for name, xs in (("allOf", v.all_of), ("anyOf", v.any_of), ("oneOf", v.one_of)):
        for i, x in enumerate(xs):
            errs += _nested_completeness(x, s, s_path, index(child(v_path, name), i))
    return errs


def _nested_completeness(v: NestedValueValidation | None, s: Structural | None, s_path: str,
                         v_path: str) -> list[FieldError]:
    """Upstream: validateNestedValueValidationCompleteness"""
    if v is None:
        return []
    if s is None:
        return [errors.required(s_path, f"because it is defined in {v_path}")]
    errs = _completeness(v.vv, s, s_path, v_path)
    errs += _nested_completeness(v.items, s.items, child(s_path, "items"), child(v_path, "items"))
    for k, x in (v.properties or {}).items():
        sub = s.properties.get(k)
        sp, vp = key(child(s_path, "properties"), k), key(child(v_path, "properties"), k)
        if sub is None:
            errs.append(errors.required(sp, f"because it is defined in {vp}"))
        else:
            errs += _nested_completeness(x, sub, sp, vp)
    return errs
