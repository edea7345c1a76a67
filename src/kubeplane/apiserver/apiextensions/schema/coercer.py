"""Pruning, dropping disallowed nulls and (optionally) defaulting a custom object in one walk,
compiled once per schema.

Every custom-object write runs these walks: at decode (prune, drop nulls), in the defaulter
(default, prune, drop nulls) and at storage encode (prune, drop nulls). Done one after the
other with the reference functions (pruning.prune, defaulting.default and
prune_non_nullable_nulls_without_defaults) each walks the object and reads the schema again;
here the schema is compiled into one closure per node (its properties, which of them have a
default or drop a null, its additionalProperties and items walks), and one walk does all the
steps, with the same result, in the same key order, as

    default(obj, s)                                    # only with defaults=True
    dropped = prune(obj, s)                            # obj is a resource root
    prune_non_nullable_nulls_without_defaults(obj, s)

(tests/apiserver/apiextensions/test_schema_coercer.py checks that against the reference
functions on generated schemas and objects).

Upstream: unstructuredSchemaCoercer.apply (pruning.PruneWithOptions then
structuraldefaulting.PruneNonNullableNullsWithoutDefaults) and unstructuredDefaulter
(structuraldefaulting.Default), apiextensions-apiserver pkg/apiserver/customresource_handler.go.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson

from .defaulting import default as _default_ref, prune_non_nullable_nulls_without_defaults as _nulls_ref
from .pruning import META_FIELDS, _prune_unspecified
from .structural import Structural

# A walk of one value: (value, path, dropped). `path` is where the value sits, as a linked
# list (parent, part) of parts (".key" or an int index), made into a string only for a
# dropped field.
Walk = Callable[[Any, Any, list[str]], None]


def coerce(obj: Any, s: Structural) -> list[str]:
    """Prune obj (a resource root) and drop the nulls s allows nowhere, in place; returns the
    dropped fields' paths, sorted (the unknown-field warnings)."""
    dropped: list[str] = []
    _root(s, False)(obj, None, dropped)
    dropped.sort()
    return dropped


def default_and_coerce(obj: Any, s: Structural) -> None:
    """Default obj (a resource root), then prune it and drop the nulls s allows nowhere, in
    place."""
    _root(s, True)(obj, None, [])


def coerce_resource_meta(obj: Any, s: Structural) -> None:
    """The part of coerce(obj, s) that falls on obj's apiVersion, kind and metadata (those the
    schema declares: their nulls dropped where it allows none)."""
    if not isinstance(obj, dict):
        return
    ap = s.additional_properties_schema
    for k in META_FIELDS:
        sub = s.properties.get(k) or ap
        if sub is None or k not in obj:
            continue
        v = obj[k]
        if v is None:
            if not sub.nullable and not sub.has_default:
                del obj[k]
        elif isinstance(v, (dict, list)):
            _nulls_ref(v, sub)


def content(obj: dict[str, Any]) -> bytes | None:
    """obj without apiVersion, kind and metadata, as bytes: what coerce() prunes of a resource
    root, to tell whether it changed since (None: not encodable, e.g. an integer beyond 64
    bits). Key order counts: a reordered object is another one here, and is coerced again."""
    try:
        return orjson.dumps({k: v for k, v in obj.items() if k not in META_FIELDS})
    except orjson.JSONEncodeError:
        return None


def _root(s: Structural, defaults: bool) -> Walk:
    plans = s._coercer
    if plans is None:
        plans = s._coercer = {}
    walk = plans.get(defaults)
    if walk is None:
        # the root is pruned as an embedded resource: apiVersion, kind and metadata stay
        walk = plans[defaults] = _compile(s, s.x_preserve_unknown_fields, True, defaults)
    return walk


def _path(path: Any) -> str:
    parts = []
    while path is not None:
        path, part = path
        parts.append(f"[{part}]" if isinstance(part, int) else part)
    return "".join(reversed(parts)).removeprefix(".")


def _key(path: Any, k: str) -> str:
    return f"{_path(path)}.{k}" if path is not None else k


def _unspecified(x: Any, path: Any, dropped: list[str]) -> None:
    """prune(x, nil): every object inside x emptied."""
    if isinstance(x, (dict, list)):
        _prune_unspecified(x, _path(path), dropped)


def _deep_copy(v: Any) -> Any:
    return v if v is None or isinstance(v, (str, int, float, bool)) else copy.deepcopy(v)


def _compile(s: Structural | None, skip: bool, embedded: bool, defaults: bool) -> Walk:
    """The walk of values under s. `skip`: unknown fields are kept (x-kubernetes-preserve-
    unknown-fields here, or the items of a list that preserves them: upstream's skipPrune);
    `embedded`: apiVersion, kind and metadata are neither pruned nor dropped as unknown."""
    if s is None:
        return _unspecified
    props = s.properties
    ap_schema = s.additional_properties_schema
    has_ap = s.additional_properties is not None
    # per known property: (its walk, whether its null is dropped, its path part); prune recurses
    # into a property's value in prune mode (skip again only if it preserves unknown fields)
    children = {k: (_compile(p, p.x_preserve_unknown_fields, p.x_embedded_resource, defaults),
                    not p.nullable and not p.has_default, "." + k) for k, p in props.items()}
    ap_child = (_compile(ap_schema, ap_schema.x_preserve_unknown_fields, ap_schema.x_embedded_resource, defaults)
                if ap_schema is not None else _unspecified) if has_ap else None
    ap_drop_null = ap_schema is not None and not ap_schema.nullable and not ap_schema.has_default
    ap_default = ap_schema is not None and defaults and not ap_schema.nullable and ap_schema.has_default
    ap_null_matters = ap_schema is not None and not ap_schema.nullable and (ap_drop_null or ap_default)
    with_default = [(k, p.default, p.nullable) for k, p in props.items() if p.has_default] if defaults else []
    # apiVersion, kind, metadata of an embedded resource: not pruned, and walked only where the
    # schema says something of them (defaulted, their nulls dropped, as anywhere else)
    meta = META_FIELDS if embedded else frozenset()
    meta_subs = {k: sub for k in meta if (sub := props.get(k) or ap_schema) is not None}
    items = s.items
    if items is None:
        item_walk: Walk | None = None if skip else _unspecified
    else:
        item_walk = _compile(items, skip or items.x_preserve_unknown_fields, items.x_embedded_resource, defaults)
    item_default = items is not None and defaults and not items.nullable
    item_value = items.default if items is not None else None

    def walk_meta(x: dict[str, Any], k: str, sub: Structural) -> None:
        v = x[k]
        if v is None and k not in props and ap_default:
            v = x[k] = _deep_copy(sub.default)
        if v is None:
            if not sub.nullable and not sub.has_default:
                del x[k]
        elif isinstance(v, (dict, list)):
            if defaults:
                _default_ref(v, sub)
            _nulls_ref(v, sub)

    def walk(x: Any, path: Any, dropped: list[str]) -> None:
        if isinstance(x, dict):
            for k, d, nullable in with_default:
                if k not in x or (x[k] is None and not nullable):
                    x[k] = _deep_copy(d)
            for k in list(x):
                if k in meta:
                    sub = meta_subs.get(k)
                    if sub is not None:
                        walk_meta(x, k, sub)
                    continue
                c = children.get(k)
                if c is not None:
                    v = x[k]
                    if v is None:
                        if c[1]:
                            del x[k]
                    elif isinstance(v, (dict, list)):
                        c[0](v, (path, c[2]), dropped)
                    continue
                if ap_child is not None:
                    v = x[k]
                    if v is None:
                        if ap_null_matters:
                            if ap_default:
                                v = x[k] = _deep_copy(ap_schema.default)       # type: ignore[union-attr]
                            else:
                                del x[k]
                                continue
                        else:
                            continue
                    if isinstance(v, (dict, list)):
                        ap_child(v, (path, "." + k), dropped)
                elif not skip:
                    dropped.append(_key(path, k))
                    del x[k]
                # else: an unknown field kept (x-kubernetes-preserve-unknown-fields), not walked
        elif isinstance(x, list):
            if item_walk is None:
                return
            for i in range(len(x)):
                v = x[i]
                if v is None and item_default:
                    v = x[i] = _deep_copy(item_value)
                if isinstance(v, (dict, list)):
                    item_walk(v, (path, i), dropped)
    return walk
