"""x-kubernetes-list-type set and map: items unique (by value, or by their map keys).

Upstream: ValidateListSetsAndMaps (apiextensions-apiserver pkg/apiserver/schema/listtype/
validation.go). Paths are field.Path's: `spec.ports[1]`, map values by key `spec.m[k]`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeplane.api import errors, gojson
from kubeplane.api.errors import FieldError

from .structural import Structural

_UNSPECIFIED = object()     # an item without the key: all such items share one key


def validate_list_sets_and_maps(path: str, s: Structural | None, obj: Any) -> list[FieldError]:
    """Upstream: ValidateListSetsAndMaps. Only the parts of the schema that hold a set or map
    list are walked (`has_list_sets`, computed once per schema)."""
    if s is None or not isinstance(obj, dict) or not has_list_sets(s):
        return []
    errs: list[FieldError] = []
    ap = s.additional_properties_schema
    if ap is not None and has_list_sets(ap):
        for k, v in obj.items():
            errs += _validate(f"{path}[{k}]", ap, v)
    for k, sub in _props_with_lists(s):
        if k in obj:
            errs += _validate(f"{path}.{k}" if path else k, sub, obj[k])
    return errs


def _memo(s: Structural) -> tuple[bool, list[tuple[str, Structural]]]:
    """(whether s's subtree has a set/map list, the properties that do), once per schema."""
    m = s._list_memo
    if m is None:
        props = [(k, p) for k, p in s.properties.items() if has_list_sets(p)]
        ap = s.additional_properties_schema
        found = s.x_list_type in ("set", "map") or bool(props) or (ap is not None and has_list_sets(ap)) or (
            s.items is not None and has_list_sets(s.items))
        m = s._list_memo = (found, props)
    return m


def has_list_sets(s: Structural) -> bool:
    return _memo(s)[0]


def _props_with_lists(s: Structural) -> list[tuple[str, Structural]]:
    return _memo(s)[1]


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
    if s.items is not None and has_list_sets(s.items):
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


# --- a fast pass for the usual object ----------------------------------------------------------

_SIMPLE = (str, int)        # items (or map keys) hashed as they are: no two equal across types


def unique_fast(s: Structural) -> Callable[[Any], bool]:
    """A check compiled once for s: True when validate_list_sets_and_maps finds nothing, for
    certain. False means "look": sets of strings or of integers, and map lists of objects
    keyed by one string or integer field, are decided here; anything else (duplicates, nulls,
    floats, objects as set items, composite keys) is left to the walk above, which also gives
    the errors their paths."""
    return _fast(s) if has_list_sets(s) else _always


def _always(x: Any) -> bool:
    return True


def _fast(s: Structural) -> Callable[[Any], bool]:
    props = [(k, _fast(p)) for k, p in _props_with_lists(s)]
    ap = s.additional_properties_schema
    ap_check = _fast(ap) if ap is not None and has_list_sets(ap) else None
    items_check = _fast(s.items) if s.items is not None and has_list_sets(s.items) else None
    list_type = s.x_list_type
    key = s.x_list_map_keys[0] if list_type == "map" and len(s.x_list_map_keys) == 1 else None

    def check(x: Any) -> bool:
        if isinstance(x, list):
            if list_type == "set" and len(x) > 1 and not _distinct(x):
                return False
            if list_type == "map":
                if not all(type(v) is dict for v in x):     # nulls, or not objects
                    return False
                if len(x) > 1:
                    if key is None:
                        return False
                    try:
                        if not _distinct([v[key] for v in x]):
                            return False
                    except KeyError:                    # an item without the key
                        return False
            if items_check is not None:
                return all(items_check(v) for v in x)
            return True
        if isinstance(x, dict):
            for k, c in props:
                if k in x and not c(x[k]):
                    return False
            if ap_check is not None:
                return all(ap_check(v) for v in x.values())
        return True
    return check


def _distinct(values: list[Any]) -> bool:
    """All of one simple type (str, or int: not bool, not float) and no two equal."""
    t = type(values[0])
    if t not in _SIMPLE or any(type(v) is not t for v in values):
        return False
    return len(set(values)) == len(values)
