"""Dropping the fields a structural schema does not specify.

Upstream: Prune, prune, skipPrune (apiextensions-apiserver pkg/apiserver/schema/pruning/
algorithm.go): apiVersion, kind and metadata stay at the root and in embedded resources;
x-kubernetes-preserve-unknown-fields keeps unknown fields but still prunes inside the
specified ones.
"""
from __future__ import annotations

from typing import Any

from .structural import Structural

META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_ROOT = Structural()
_ROOT.x_embedded_resource = True


def prune(obj: Any, s: Structural | None, is_resource_root: bool = True) -> list[str]:
    """Upstream: PruneWithOptions — prunes obj in place; returns the paths of the fields
    dropped, sorted (for warnings about unknown fields)."""
    if is_resource_root and (s is None or not s.x_embedded_resource):
        s = _as_embedded(s)
    dropped: list[str] = []
    _prune(obj, s, "", dropped)
    dropped.sort()
    return dropped


# The root schema as an embedded resource, made once per schema (every custom object's write
# prunes twice with its version's root): by id, each entry keeping its schema alive and used
# only while it is the same object, so a reused id never hits an old entry.
_EMBEDDED: dict[int, tuple[Structural, Structural]] = {}


def _as_embedded(s: Structural | None) -> Structural:
    if s is None:
        return _ROOT
    hit = _EMBEDDED.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    clone = Structural()
    for name in Structural.__slots__:
        if name not in ("_compiled", "_list_memo"):
            setattr(clone, name, getattr(s, name))
    clone.x_embedded_resource = True
    if len(_EMBEDDED) >= 256:
        _EMBEDDED.clear()
    _EMBEDDED[id(s)] = (s, clone)
    return clone


def _key(parent: str, k: str) -> str:
    return f"{parent}.{k}" if parent else k


def _prune_unspecified(x: Any, parent: str, dropped: list[str]) -> None:
    """prune(x, nil): every object inside x is emptied. Iterative: an unspecified value can be
    nested as deep as the decoder allows."""
    stack = [(x, parent)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, dict):
            dropped.extend(_key(p, k) for k in v)
            v.clear()
        elif isinstance(v, list):
            stack.extend((item, f"{p}[{i}]") for i, item in enumerate(v))


def _prune(x: Any, s: Structural | None, parent: str, dropped: list[str]) -> None:
    if s is None:
        _prune_unspecified(x, parent, dropped)
        return
    if s.x_preserve_unknown_fields:
        _skip_prune(x, s, parent, dropped)
        return
    if isinstance(x, dict):
        ap = s.additional_properties
        for k in list(x):
            if s.x_embedded_resource and k in META_FIELDS:
                continue
            prop = s.properties.get(k)
            if prop is not None:
                _prune(x[k], prop, _key(parent, k), dropped)
            elif ap is not None:
                _prune(x[k], s.additional_properties_schema, _key(parent, k), dropped)
            else:
                if k not in META_FIELDS or parent:
                    dropped.append(_key(parent, k))
                del x[k]
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _prune(v, s.items, f"{parent}[{i}]", dropped)


def _skip_prune(x: Any, s: Structural, parent: str, dropped: list[str]) -> None:
    if isinstance(x, dict):
        ap = s.additional_properties
        for k, v in x.items():
            if s.x_embedded_resource and k in META_FIELDS:
                continue
            prop = s.properties.get(k)
            if prop is not None:
                _prune(v, prop, _key(parent, k), dropped)
            elif ap is not None:
                _prune(v, s.additional_properties_schema, _key(parent, k), dropped)
    elif isinstance(x, list):
        if s.items is not None:
            for i, v in enumerate(x):
                _skip_prune(v, s.items, f"{parent}[{i}]", dropped)
