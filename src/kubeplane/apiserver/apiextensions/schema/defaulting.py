"""Applying a structural schema's defaults to an object, and dropping the nulls that cannot be.

Upstream: Default, isNonNullableNull (apiextensions-apiserver pkg/apiserver/schema/defaulting/
algorithm.go) and PruneNonNullableNullsWithoutDefaults (prunenulls.go). A default is applied to
a field that is absent or null while the schema is not nullable, in properties, in
additionalProperties values and in array items; defaults inside the value applied are then
filled in too (the walk continues into it).
"""
from __future__ import annotations

import copy
from typing import Any

from .structural import Structural


def _deep_copy(v: Any) -> Any:
    return v if v is None or isinstance(v, (str, int, float, bool)) else copy.deepcopy(v)


def _non_nullable_null(x: Any, s: Structural | None) -> bool:
    return x is None and s is not None and not s.nullable


def default(x: Any, s: Structural | None) -> None:
    """Upstream: Default (in place)."""
    if s is None:
        return
    if isinstance(x, dict):
        for k, prop in s.properties.items():
            if not prop.has_default:
                continue
            if k not in x or _non_nullable_null(x[k], prop):
                x[k] = _deep_copy(prop.default)
        ap = s.additional_properties_schema
        for k in list(x):
            sub = s.properties.get(k)
            if sub is not None:
                default(x[k], sub)
            elif s.additional_properties is not None:
                if _non_nullable_null(x[k], ap):
                    assert ap is not None
                    x[k] = _deep_copy(ap.default)
                default(x[k], ap)
    elif isinstance(x, list):
        items = s.items
        for i in range(len(x)):
            if _non_nullable_null(x[i], items):
                assert items is not None
                x[i] = _deep_copy(items.default)
            default(x[i], items)


def _field_schema(k: str, s: Structural | None) -> Structural | None:
    """Upstream: getSchemaForField"""
    if s is None:
        return None
    prop = s.properties.get(k)
    return prop if prop is not None else s.additional_properties_schema


def prune_non_nullable_nulls_without_defaults(x: Any, s: Structural | None) -> None:
    """Upstream: PruneNonNullableNullsWithoutDefaults — a null the schema does not allow and
    cannot default is dropped from its object (array items are left)."""
    if s is None:       # upstream walks on with a nil schema, and so drops nothing below
        return
    if isinstance(x, dict):
        for k in list(x):
            v = x[k]
            if v is not None and not isinstance(v, (dict, list)):
                continue                # a scalar: nothing to drop in it
            sub = _field_schema(k, s)
            if v is None and sub is not None and not sub.nullable and not sub.has_default:
                del x[k]
            elif v is not None:
                prune_non_nullable_nulls_without_defaults(v, sub)
    elif isinstance(x, list):
        for v in x:
            if isinstance(v, (dict, list)):
                prune_non_nullable_nulls_without_defaults(v, s.items)


def needs_defaults(x: Any, s: Structural | None, below: dict[int, bool]) -> bool:
    """Whether schema.default(x, s) would change x: a field with a default absent (or a
    non-nullable null) anywhere the schema has one. Reads ask this first, so a stored object
    that has its defaults already (every object written since the schema got them) is served
    as stored, without the copy and the defaulting walk. `below`: the memo of which schema
    nodes have a default in their subtree (by id, for one schema's lifetime)."""
    if s is None or not _defaults_below(s, below):
        return False
    if isinstance(x, dict):
        for k, prop in s.properties.items():
            if prop.has_default and (k not in x or (x[k] is None and not prop.nullable)):
                return True
        ap = s.additional_properties_schema
        for k, v in x.items():
            sub = s.properties.get(k)
            if sub is None and ap is not None and v is None and not ap.nullable and ap.has_default:
                return True
            if needs_defaults(v, sub if sub is not None else ap, below):
                return True
    elif isinstance(x, list) and s.items is not None:
        items = s.items
        return any((v is None and not items.nullable and items.has_default) or needs_defaults(v, items, below)
                   for v in x)
    return False


def _defaults_below(s: Structural, below: dict[int, bool]) -> bool:
    """Whether s or a schema under it declares a default."""
    hit = below.get(id(s))
    if hit is None:
        below[id(s)] = False                # a guard while the subtree is walked
        subs = [*s.properties.values(), s.items, s.additional_properties_schema]
        hit = below[id(s)] = any(c is not None and (c.has_default or _defaults_below(c, below)) for c in subs)
    return hit



def has_defaults(s: Structural) -> bool:
    """Whether s or a schema under it declares a default (else defaulting is a no-op)."""
    return s.has_default or _defaults_below(s, {})
