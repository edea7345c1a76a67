"""A custom object's values as a CEL rule sees them (`self`, `oldSelf`).

Upstream: UnstructuredToVal (k8s.io/apiserver pkg/cel/common/values.go) over the node's
structural schema, Escape (pkg/cel/escaping.go) and WithTypeAndObjectMeta
(apiextensions-apiserver pkg/apiserver/schema/cel/model/schemas.go):
- an object with properties exposes its declared properties only, under their escaped CEL
  names (`foo-bar` is `self.foo__dash__bar`, `namespace` is `self.__namespace__`); a property
  that cannot be escaped is not visible; x-kubernetes-preserve-unknown-fields keeps the others;
- a map (additionalProperties) keeps its keys; lists their items;
- strings of format byte become bytes (date-time/date/duration stay strings, unlike upstream's
  timestamps and durations: see _formatted);
- a number is a double even when written as an integer; int-or-string and schema-less
  (preserve-unknown-fields) values are dyn, as they are;
- at the resource root and in embedded resources, metadata is only name and generateName.
A string that does not parse in its format stays a string (upstream: an error value).
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from ..schema.structural import Structural

_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
             "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_EXPAND = re.compile(r"__|[-./]")
_EXPANSIONS = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_VALID = re.compile(r"[A-Za-z0-9_./-]*\Z")


def escape(ident: str) -> str | None:
    """Upstream: Escape — the CEL field name of a property, None when it has none."""
    if not ident or ident[0].isdigit():
        return None
    if ident in _RESERVED:
        return f"__{ident}__"
    if _PLAIN.match(ident) and "__" not in ident:
        return ident
    if not _VALID.match(ident) or not ident.isascii():
        return None
    return _EXPAND.sub(lambda m: _EXPANSIONS[m.group(0)], ident)


def to_cel(v: Any, s: Structural | None, resource_root: bool = False) -> Any:
    """v (JSON-like) as the activation value of a rule at schema s."""
    if v is None or s is None or s.x_int_or_string:
        return v
    t = s.type
    if t == "object" and isinstance(v, dict):
        if s.properties or resource_root:
            return _object(v, s, resource_root)
        ap = s.additional_properties_schema
        if ap is not None:
            return {k: to_cel(x, ap, ap.x_embedded_resource) for k, x in v.items()}
        return v
    if t == "array" and isinstance(v, list):
        items = s.items
        return v if items is None else [to_cel(x, items, items.x_embedded_resource) for x in v]
    if t == "number" and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if t == "string" and isinstance(v, str) and s.value_validation is not None and s.value_validation.format:
        return _formatted(v, s.value_validation.format)
    return v


def _object(v: dict[str, Any], s: Structural, resource_root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, x in v.items():
        prop = s.properties.get(k)
        if resource_root and k in ("apiVersion", "kind", "metadata"):
            if k == "metadata":
                x = {m: x[m] for m in ("name", "generateName") if m in x} if isinstance(x, dict) else x
            out[k] = x
            continue
        if prop is None:
            if s.x_preserve_unknown_fields:
                out[k] = x
            continue
        name = escape(k)
        if name is not None:
            out[name] = to_cel(x, prop, prop.x_embedded_resource)
    return out


def _formatted(v: str, fmt: str) -> Any:
    """Bytes for format byte. Timestamps (date-time, date) and durations stay strings: the
    engine takes neither datetime nor timedelta values in an activation (only protobuf
    messages, and protobuf is not a dependency)."""
    try:
        if fmt == "byte":
            return base64.b64decode(v, validate=True)
    except (ValueError, binascii.Error, OverflowError):
        return v
    return v
