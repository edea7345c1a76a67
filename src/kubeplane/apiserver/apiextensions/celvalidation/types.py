"""The runtime type of `self` at a schema node, and the environments rules run in.

Rules run with scalars, lists and maps of them declared, and objects, int-or-string, formatted
strings (timestamps, durations, bytes) and schema-less values as `dyn`: the values are plain
Python (values.py) and the programs fast. The declared types upstream checks rules against
(SchemaDeclType) are in decltype.py, and the check in typedenv.py.
"""
from __future__ import annotations

import functools
from typing import Any

from ..schema.structural import Structural

_SCALARS = {"integer": "int", "number": "double", "boolean": "bool", "string": "string"}


def type_key(s: Structural | None, depth: int = 0) -> str:
    """`int`, `double`, `bool`, `string`, `list(<key>)`, `map(<key>)` or `dyn`."""
    if s is None or s.x_int_or_string or depth > 2:
        return "dyn"
    if s.type in _SCALARS:
        if s.type == "string" and s.value_validation is not None and s.value_validation.format:
            return "dyn"
        return _SCALARS[s.type]
    if s.type == "array" and s.items is not None:
        return f"list({_elem(s.items, depth)})"
    if s.type == "object" and not s.properties and not s.x_preserve_unknown_fields:
        ap = s.additional_properties_schema
        if ap is not None:
            return f"map({_elem(ap, depth)})"
    return "dyn"


def _elem(s: Structural, depth: int) -> str:
    return "dyn" if s.nullable else type_key(s, depth + 1)


def cel_type(key: str) -> Any:
    from cel_expr_python import cel  # type: ignore[import-untyped]
    if key.startswith("list("):
        return cel.Type.List(cel_type(key[5:-1]))
    if key.startswith("map("):
        return cel.Type.Map(cel.Type.STRING, cel_type(key[4:-1]))
    return {"int": cel.Type.INT, "double": cel.Type.DOUBLE, "bool": cel.Type.BOOL,
            "string": cel.Type.STRING}.get(key, cel.Type.DYN)


@functools.lru_cache(maxsize=64)
def env(key: str, *variables: str) -> Any:
    """The environment whose `self` (and oldSelf, or the optionalOldSelf wrapping's old value)
    has the type `key`; built once per type (~1 ms)."""
    from kubeplane.apiserver.cel import compiler
    from .compilation import HAS_OLD, OLD_SELF, OLD_VALUE, SELF
    from cel_expr_python import cel
    t = cel_type(key)
    types = {SELF: t, OLD_SELF: t, OLD_VALUE: t, HAS_OLD: cel.Type.BOOL}
    return compiler.Env(variables, {v: types[v] for v in variables if v in types}, homogeneous_literals=True)
