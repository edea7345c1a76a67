"""x-kubernetes-list-type set and map: items unique (by value, or by their map keys).

Upstream: ValidateListSetsAndMaps (apiextensions-apiserver pkg/apiserver/schema/listtype/
validation.go). Paths are field.Path's: `spec.ports[1]`, map values by key `spec.m[k]`.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors, gojson
from kubeplane.api.errors import FieldError

from .structural import Structural

_UNSPECIFIED = object()     # an item without the key: all such items share one key


def validate_list_sets_and_maps(path: str, s: Structural | None, obj: Any) -> list[FieldError]:
    """Upstream: ValidateListSetsAndMaps"""
    if s is None or not isinstance(obj, dict):
        return []
    errs: list[FieldError] = []
    ap = s.additional_properties_schema
    if ap is not None:
        for k, v in obj.items():
            errs += _validate(f"{path}[{k}]", ap, v)
    if s.properties:
        for k, v in obj.items():
            sub = s.properties.get(k)
            if sub is not None:
                errs += _validate(f"{path}.{k}" if path else k, sub, v)
    return errs


def _validate(path: str, s: Structural, obj: Any) -> list[FieldError]:
    if isinstance(obj, list):
        return _validate_array(path, s, obj)
    if isinstance(obj, dict):
        return validate_list_sets_and_maps(path, s, obj)
    return []


def _validate_array(path: str, s: Structural, obj: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if s.x_list_type == "set":
        errs += [errors.duplicate(f"{path}[{i}]", obj[i]) for i in _non_unique(obj)]
    elif s.x_list_type == "map":
        errs += _validate_list_map(path, s, obj)
    if s.items is not None:
        for i, x in enumerate(obj):
            errs += _validate(f"{path}[{i}]", s.items, x)
    return errs


def _identity(x: Any) -> Any:
    """A hashable stand-in with Go's map-key equality: 1 and 1.0 differ, as do 1 and true."""
    if isinstance(x, (dict, list)):
        return ("json", gojson.marshal(x))
    return (type(x), x)


def _non_unique(obj: list[Any]) -> list[int]:
    """Upstream: validateListSet — the index of each value's second occurrence."""
    if len(obj) <= 1:
        return []
    seen: dict[Any, int] = {}
    out = []
    for i, x in enumerate(obj):
        k = ("unspecified",) if x is _UNSPECIFIED else _identity(x)
        n = seen.get(k, 0)
        if n == 1:
            out.append(i)
        seen[k] = n + 1
    return out


def _validate_list_map(path: str, s: Structural, obj: list[Any]) -> list[FieldError]:
    """Upstream: validateListMap"""
    for i, x in enumerate(obj):
        if x is not None and not isinstance(x, dict):
            return [errors.invalid(f"{path}[{i}]", x, "must be an object for an array of list-type map")]
    if len(obj) <= 1:
        return []
    if len(s.x_list_map_keys) == 1:
        kf = s.x_list_map_keys[0]
        keys = [_UNSPECIFIED if x is None or kf not in x else x[kf] for x in obj]
        return [errors.duplicate(f"{path}[{i}]", {} if keys[i] is _UNSPECIFIED else {kf: keys[i]})
                for i in _non_unique(keys)]
    composite = [{} if x is None else {k: x[k] for k in s.x_list_map_keys if k in x} for x in obj]
    return [errors.duplicate(f"{path}[{i}]", composite[i]) for i in _non_unique(composite)]
