"""apiVersion, kind and metadata of the resources embedded in a custom object
(x-kubernetes-embedded-resource).

Upstream: Validate, validateEmbeddedResource (apiextensions-apiserver pkg/apiserver/schema/
objectmeta/validation.go). The metadata of the custom object itself is the registry's (the
generic ObjectMeta validation), not checked here.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError
from kubeplane.api.validation.meta import validate_object_meta
from kubeplane.api.validation.names import is_dns1035_label, name_is_path_segment

from .structural import Structural


def validate(path: str, obj: Any, s: Structural | None, is_resource_root: bool = False) -> list[FieldError]:
    """Upstream: objectmeta.Validate"""
    if s is None:
        return []
    errs: list[FieldError] = []
    if isinstance(obj, dict):
        if s.x_embedded_resource or is_resource_root:
            errs += _embedded_resource(path, obj)
        ap = s.additional_properties_schema
        for k, v in obj.items():
            prop = s.properties.get(k)
            if prop is not None:
                errs += validate(f"{path}.{k}" if path else k, v, prop)
            elif ap is not None:
                errs += validate(f"{path}[{k}]", v, ap)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            errs += validate(f"{path}[{i}]", v, s.items)
    return errs


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _embedded_resource(path: str, x: dict[str, Any]) -> list[FieldError]:
    """Upstream: validateEmbeddedResource"""
    errs: list[FieldError] = []
    if "apiVersion" not in x:
        errs.append(errors.required(_child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(errors.required(_child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            errs += _api_version(_child(path, k), v)
        elif k == "kind":
            errs += _kind(_child(path, k), v)
        elif k == "metadata":
            errs += _metadata(_child(path, k), v)
    return errs


def _api_version(p: str, v: Any) -> list[FieldError]:
    if not isinstance(v, str):
        return [errors.invalid(p, v, "must be a string")]
    if not v:
        return [errors.invalid(p, v, "must not be empty")]
    if v.count("/") > 1:       # schema.ParseGroupVersion
        return [errors.invalid(p, v, f"unexpected GroupVersion string: {v}")]
    return []


def _kind(p: str, v: Any) -> list[FieldError]:
    if not isinstance(v, str):
        return [errors.invalid(p, v, "must be a string")]
    if not v:
        return [errors.invalid(p, v, "must not be empty")]
    msgs = is_dns1035_label(v.lower())
    return [errors.invalid(p, v, "may have mixed case, but should otherwise match: " + ",".join(msgs))] if msgs else []


def _metadata(p: str, v: Any) -> list[FieldError]:
    if not isinstance(v, dict):
        # GetObjectMeta: the metadata does not decode into an ObjectMeta.
        return [errors.invalid(p, v, "expected map[string]interface{}, got " + _go_type(v))] if v is not None else []
    meta = dict(v)
    if not meta.get("name"):
        meta["name"] = "fakename"       # upstream sets one to skip the name-required error
    return validate_object_meta(meta, bool(meta.get("namespace")), name_is_path_segment, p)


def _go_type(v: Any) -> str:
    return {str: "string", bool: "bool", int: "int64", float: "float64", list: "[]interface {}"}.get(type(v), "unknown")
