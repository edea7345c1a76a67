"""The JSON paths of x-kubernetes-validations' `fieldPath`: `.spec.ports['http'].name`.

Upstream: ValidFieldPath and unescapeSingleQuote (apiextensions-apiserver pkg/apiserver/schema/
cel/validation.go): each step names a property (`.name` or `['name']`) or, where the schema has
additionalProperties, a map key; the result is the field.Path errors are reported at.
"""
from __future__ import annotations

import re

from .structural import Structural

_ESCAPE = re.compile(r"\\.", re.DOTALL)
_UNESCAPED = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _tokens(path: str) -> list[str]:
    """The scanner's split: '.', '[' and ']' alone, quoted strings whole, other text between."""
    out: list[str] = []
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c == "'":
            j = i + 1
            while j < n and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            out.append(path[i:j + 1])
            i = j + 1
        elif c in ".[]":
            out.append(c)
            i += 1
        else:
            j = i
            while j < n and path[j] not in ".[]":
                j += 1
            out.append(path[i:j])
            i = j
    return out


def unescape_single_quote(s: str) -> str:
    def repl(m: re.Match[str]) -> str:
        c = m.group(0)[1]
        if c not in _UNESCAPED:
            raise ValueError(f"invalid escape char {m.group(0)}")
        return _UNESCAPED[c]
    return _ESCAPE.sub(repl, s)


def valid_field_path(json_path: str, s: Structural | None, *,
                     allow_array_notation: bool = True) -> tuple[str, Structural | None]:
    """Upstream: ValidFieldPath — (the field path, the schema there); ValueError with
    upstream's message when the path is not one. allow_array_notation=False: upstream's
    WithFieldPathAllowArrayNotation(false) (selectableFields)."""
    path = ""
    toks = _tokens(json_path)
    i = 0

    def step(name: str) -> None:
        nonlocal path, s
        if s is None:
            raise ValueError("does not refer to a valid field")
        if s.properties:
            path = f"{path}.{name}" if path else name
            if name not in s.properties:
                raise ValueError("does not refer to a valid field")
            s = s.properties[name]
        elif s.additional_properties is not None:
            path = f"{path}[{name}]"
            s = s.additional_properties_schema
        else:
            raise ValueError("does not refer to a valid field")

    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok == "[":
            if not allow_array_notation:
                raise ValueError("array notation is not allowed")
            if i >= len(toks):
                raise ValueError("unexpected end of JSON path")
            tok = toks[i]
            i += 1
            if len(tok) < 2 or tok[0] != "'" or tok[-1] != "'":
                raise ValueError(f"expected single quoted string but got {tok}")
            try:
                name = unescape_single_quote(tok[1:-1])
            except ValueError as e:
                raise ValueError(f"invalid string literal: {e}") from None
            step(name)
            if i >= len(toks):
                raise ValueError("unexpected end of JSON path")
            if toks[i] != "]":
                raise ValueError(f"expected ] but got {toks[i]}")
            i += 1
        elif tok == ".":
            if i >= len(toks):
                raise ValueError("unexpected end of JSON path")
            step(toks[i])
            i += 1
        else:
            raise ValueError(f"expected [ or . but got: {tok}")
    return path, s
