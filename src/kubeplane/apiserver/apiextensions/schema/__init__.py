"""The structural schema library of CustomResourceDefinitions (no server wiring).

    validate_crd_schema(crd_version["schema"], "spec.versions[0].schema", status_enabled=...)
    s = structural_from(crd_version["schema"]["openAPIV3Schema"])     # once per CRD version
    validate_structural(s, "spec.versions[0].schema.openAPIV3Schema")  # (part of the above)

    # a custom object, as upstream's codec and strategy treat it:
    default(obj, s)             # on decode (and on read of stored objects): defaults, in place
    unknown = prune(obj, s)     # unknown fields dropped in place (apiVersion/kind/metadata kept);
                                # their paths, for fieldValidation warnings/strict errors
    prune_non_nullable_nulls_without_defaults(obj, s)
    coerce(obj, s)              # the two above in one walk, compiled once per schema
    default_and_coerce(obj, s)  # the three above in one walk
    validate(s, obj)            # field errors, upstream's paths and messages
    validate_update(s, obj, old)  # the same with ratcheting: unchanged invalid values pass
    validate_update(s.properties["status"], obj["status"], old.get("status"), "status")  # /status

`validate` is what upstream's customresource strategy runs beside the TypeMeta/ObjectMeta
checks (the registry's): the OpenAPI schema (kube-openapi), embedded resources
(objectmeta.Validate) and list sets/maps (listtype). The schema is compiled on first use and
kept on the Structural.

CEL rules (x-kubernetes-validations) are evaluated by apiextensions.celvalidation, through a hook:
`CEL_VALIDATOR_FACTORY(s)`, when set, is called once per schema that has rules and returns
`check(obj, old, fld_path) -> list[FieldError]` (old is None on a create), run after the
checks above unless they found a blocking error, as upstream's strategy does (hasBlockingErr).

Upstream: k8s.io/apiextensions-apiserver pkg/apiserver/schema/..., pkg/apiserver/validation,
pkg/apis/apiextensions/validation.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import listtype, objectmeta
from .coercer import coerce, default_and_coerce
from .crd_validation import ValidationOptions, validate_crd_schema
from .defaulting import default, has_defaults, needs_defaults, prune_non_nullable_nulls_without_defaults
from .openapi import SchemaValidator
from .pruning import META_FIELDS, prune
from .structural import Structural, structural_from
from .validation import validate_structural

__all__ = ["Structural", "structural_from", "validate_structural", "validate_crd_schema", "ValidationOptions", "validate",
           "validate_update", "prune", "default", "coerce", "default_and_coerce", "has_defaults", "needs_defaults", "prune_non_nullable_nulls_without_defaults",
           "schema_validator", "CEL_VALIDATOR_FACTORY", "META_FIELDS"]

CelCheck = Callable[[Any, Any, str], list[FieldError]]
CEL_VALIDATOR_FACTORY: Callable[[Structural], CelCheck | None] | None = None

# Upstream: hasBlockingErr — after one of these the object is not fit for CEL.
_BLOCKING = {errors.NOT_SUPPORTED, errors.REQUIRED, errors.TOO_LONG, errors.TOO_MANY, errors.TYPE_INVALID}
_NOT_CHECKED = "some validation rules were not checked because the object was invalid; " \
    "correct the existing errors to complete validation"


class _Compiled:
    """What validate needs of a schema, computed once: the kube-openapi validator, and whether
    the schema has embedded resources or list sets/maps to check at all."""

    __slots__ = ("validator", "has_embedded", "has_list_sets", "lists_unique", "cel")

    def __init__(self, s: Structural) -> None:
        self.validator = SchemaValidator(s.raw)
        self.has_embedded = _walk_any(s, lambda x: x.x_embedded_resource)
        self.has_list_sets = _walk_any(s, lambda x: x.x_list_type in ("set", "map"))
        self.lists_unique = listtype.unique_fast(s)     # True: no list set/map error, for certain
        self.cel: CelCheck | None = None
        if CEL_VALIDATOR_FACTORY is not None and _walk_any(s, lambda x: bool(x.x_validations)):
            self.cel = CEL_VALIDATOR_FACTORY(s)


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
    if c.has_list_sets and not c.lists_unique(obj):
        errs += listtype.validate_list_sets_and_maps(fld_path, s, obj)
    return _with_cel(c, errs, obj, None, fld_path)


def validate_update(s: Structural, obj: Any, old: Any, fld_path: str = "") -> list[FieldError]:
    """An update of a custom object (or of its status): upstream's customResourceStrategy.
    ValidateUpdate — the schema with ratcheting (an invalid value left unchanged passes),
    embedded resources as on a create, and list sets/maps only when the old object had none
    wrong."""
    c = _compiled(s)
    errs = c.validator.validate_update(obj, old, fld_path)
    if c.has_embedded:
        errs += objectmeta.validate(fld_path, obj, s)
    if c.has_list_sets and not c.lists_unique(obj) and (
            c.lists_unique(old) or not listtype.validate_list_sets_and_maps(fld_path, s, old)):
        errs += listtype.validate_list_sets_and_maps(fld_path, s, obj)
    return _with_cel(c, errs, obj, old, fld_path)


def _with_cel(c: _Compiled, errs: list[FieldError], obj: Any, old: Any, fld_path: str) -> list[FieldError]:
    if c.cel is None:
        return errs
    if any(e.type in _BLOCKING for e in errs):
        return errs + [errors.invalid(fld_path or "<nil>", None, _NOT_CHECKED)]
    return errs + c.cel(obj, old, fld_path)


def _walk_any(s: Structural | None, pred: Callable[[Structural], bool]) -> bool:
    if s is None:
        return False
    if pred(s):
        return True
    return _walk_any(s.items, pred) or _walk_any(s.additional_properties_schema, pred) or any(
        _walk_any(p, pred) for p in s.properties.values())

