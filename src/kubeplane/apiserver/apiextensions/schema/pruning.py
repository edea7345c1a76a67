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
    _prune(obj, s, _Path(), dropped)
    dropped.sort()
    return dropped


def _as_embedded(s: Structural | None) -> Structural:
    """s as a resource root, made once per schema (kept on it): prune runs on every write."""
    if s is None:
        return _ROOT
    if s._embedded is not None:
        return s._embedded
    clone = Structural()
    for name in Structural.__slots__:
        if name not in ("_compiled", "_list_memo", "_embedded", "_coercer", "_cel_rules"):
            setattr(clone, name, getattr(s, name))
    clone.x_embedded_resource = True
    s._embedded = clone
    return clone


class _Path:
    """Where the walk is, as parts joined only when a field is dropped (most walks drop nothing).
    A part is a key (".k") or an index ("[i]")."""
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.parts)

    def key(self, k: str) -> str:
        return "".join(self.parts).removeprefix(".") + ("." + k if self.parts else k)

    def __str__(self) -> str:
        return "".join(self.parts).removeprefix(".")


def _key(parent: Any, k: str) -> str:
    if isinstance(parent, _Path):
        return parent.key(k)
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


def _prune(x: Any, s: Structural | None, path: _Path, dropped: list[str]) -> None:
    if s is None:
        _prune_unspecified(x, str(path), dropped)
        return
    if s.x_preserve_unknown_fields:
        _skip_prune(x, s, path, dropped)
        return
    if isinstance(x, dict):
        ap = s.additional_properties
        for k in list(x):
            if s.x_embedded_resource and k in META_FIELDS:
                continue
            prop = s.properties.get(k)
            if prop is None and ap is not None:
                prop = s.additional_properties_schema
            elif prop is None:
                if k not in META_FIELDS or path:
                    dropped.append(path.key(k))
                del x[k]
                continue
            v = x[k]
            if isinstance(v, (dict, list)) or prop is None:
                path.parts.append("." + k)
                _prune(v, prop, path, dropped)
                path.parts.pop()
    elif isinstance(x, list):
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)) or s.items is None:
                path.parts.append(f"[{i}]")
                _prune(v, s.items, path, dropped)
                path.parts.pop()


def _skip_prune(x: Any, s: Structural, path: _Path, dropped: list[str]) -> None:
    if isinstance(x, dict):
        ap = s.additional_properties
        for k, v in x.items():
            if s.x_embedded_resource and k in META_FIELDS:
                continue
            prop = s.properties.get(k)
            if prop is None and ap is not None:
                prop = s.additional_properties_schema
            elif prop is None:
                continue
            if isinstance(v, (dict, list)) or prop is None:
                path.parts.append("." + k)
                _prune(v, prop, path, dropped)
                path.parts.pop()
    elif isinstance(x, list):
        if s.items is not None:
            for i, v in enumerate(x):
                if isinstance(v, (dict, list)):
                    path.parts.append(f"[{i}]")
                    _skip_prune(v, s.items, path, dropped)
                    path.parts.pop()
