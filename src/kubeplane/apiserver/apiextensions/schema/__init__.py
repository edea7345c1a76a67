"""The structural schema library of CustomResourceDefinitions (no server wiring).

    s = structural_from(crd_version["schema"]["openAPIV3Schema"])
    validate_crd_schema(crd_version["schema"], "spec.versions[0].schema", status_enabled=...)
    validate_structural(s, "spec.versions[0].schema.openAPIV3Schema")
    prune(obj, s)               # unknown fields dropped, in place (apiVersion/kind/metadata kept)
    default(obj, s)             # defaults applied, in place
    validate(s, obj)            # field errors, upstream's paths and messages

`validate` is what upstream's customresource strategy runs beside the ObjectMeta checks: the
OpenAPI schema (kube-openapi), embedded resources (objectmeta.Validate) and list sets/maps
(listtype). The schema is compiled on first use and kept on the Structural. CEL rules
(x-kubernetes-validations) are not evaluated yet: `VALIDATION_HOOK`, when set, is called as
hook(s, obj, errs) after the checks above.

Upstream: k8s.io/apiextensions-apiserver pkg/apiserver/schema/..., pkg/apiserver/validation,
pkg/apis/apiextensions/validation.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeplane.api.errors import FieldError

from . import listtype, objectmeta
from .crd_validation import validate_crd_schema
from .defaulting import default, prune_non_nullable_nulls_without_defaults
from .openapi import SchemaValidator
from .pruning import prune
from .structural import Structural, structural_from
from .validation import validate_structural

__all__ = ["Structural", "structural_from", "validate_structural", "validate_crd_schema", "validate",
           "prune", "default", "prune_non_nullable_nulls_without_defaults", "schema_validator",
           "VALIDATION_HOOK"]

VALIDATION_HOOK: Callable[[Structural, Any, list[FieldError]], None] | None = None


class _Compiled:
    """What validate needs of a schema, computed once: the kube-openapi validator, and whether
    the schema has embedded resources or list sets/maps to check at all."""

    __slots__ = ("validator", "has_embedded", "has_list_sets")

    def __init__(self, s: Structural) -> None:
        self.validator = SchemaValidator(s.raw)
        self.has_embedded = _walk_any(s, lambda x: x.x_embedded_resource)
        self.has_list_sets = _walk_any(s, lambda x: x.x_list_type in ("set", "map"))


def _compiled(s: Structural) -> _Compiled:
    c: _Compiled | None = s._compiled
    if c is None:
        c = s._compiled = _Compiled(s)
    return c


def schema_validator(s: Structural) -> SchemaValidator:
    """The compiled kube-openapi validator of s (built once, kept on s)."""
    return _compiled(s).validator


def validate(s: Structural, obj: Any, fld_path: str = "") -> list[FieldError]:
    """A custom object (or, with fld_path "status", its status) against its schema: upstream's
    ValidateCustomResource, then objectmeta.Validate (embedded resources) and
    ValidateListSetsAndMaps, in the order the customresource strategy runs them."""
    c = _compiled(s)
    errs = c.validator.validate(obj, fld_path)
    if c.has_embedded:
        errs += objectmeta.validate(fld_path, obj, s)
    if c.has_list_sets:
        errs += listtype.validate_list_sets_and_maps(fld_path, s, obj)
    if VALIDATION_HOOK is not None:
        VALIDATION_HOOK(s, obj, errs)
    return errs


def _walk_any(s: Structural | None, pred: Callable[[Structural], bool]) -> bool:
    if s is None:
        return False
    if pred(s):
        return True
    return _walk_any(s.items, pred) or _walk_any(s.additional_properties_schema, pred) or any(
        _walk_any(p, pred) for p in s.properties.values())

