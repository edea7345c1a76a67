"""The object literals of MutatingAdmissionPolicy expressions: `Object{spec: Object.spec{...}}`
and `JSONPatch{op: "add", path: "/x", value: 1}`.

Upstream: pkg/cel/mutation (the dynamic type resolver: any `Object`, `Object.<field path>` or
`JSONPatch` name is a type whose values are objects with the named fields) and
mutation/dynamic/objects.go (ObjectVal, CheckTypeNamesMatchFieldPathNames). cel-expr-python
cannot declare such types from Python (only proto messages), so an expression's object
literals are rewritten into map literals before it is compiled: `Object.spec{replicas: 1}`
becomes `{"replicas": 1}`, the field names quoted. The type names are checked here, on the
text, as upstream checks them on the values: a literal written as the value of field `f` of an
`Object.x` literal (directly, or in a list or map there) must be named `Object.x.f`; a mismatch
is kept as the expression's `type mismatch: ...` error, raised when the mutation runs, as
upstream's is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

ROOT_TYPES = ("Object", "JSONPatch")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Rewritten:
    expression: str                                # the expression with map literals
    errors: list[str] = field(default_factory=list)   # upstream's type-name mismatches


@dataclass
class _Frame:
    kind: str                 # "struct", "{", "(" or "["
    expected: str             # the type name a struct literal here must have ("" = any, its own root)
    type_name: str = ""       # a struct's own type name
    at_field: bool = False    # a struct: the next token may be a field name
    field: str = ""           # a struct: the field whose value is being written


def rewrite(expression: str) -> Rewritten:
    """The expression with its Object/JSONPatch literals as map literals (see the module doc)."""
    out: list[str] = []
    errors: list[str] = []
    stack: list[_Frame] = []
    i, n = 0, len(expression)
    prev_significant = ""
    while i < n:
        c = expression[i]
        if c in "'\"" or (c in "rRbB" and i + 1 < n and expression[i + 1] in "'\"") or (
                c in "rRbB" and i + 2 < n and expression[i + 1] in "rRbB" and expression[i + 2] in "'\""):
            end = _string_end(expression, i)
            out.append(expression[i:end])
            i, prev_significant = end, "string"
            _leave_field_position(stack)
            continue
        if expression.startswith("//", i):
            end = expression.find("\n", i)
            end = n if end < 0 else end
            out.append(expression[i:end])
            i = end
            continue
        if c.isspace():
            out.append(c)
            i += 1
            continue
        m = _IDENT.match(expression, i)
        if m:
            chain_end, name = _chain(expression, i)
            brace = _skip_space(expression, chain_end)
            if (name.split(".", 1)[0] in ROOT_TYPES and prev_significant != "." and brace < n
                    and expression[brace] == "{"):
                expected = _expected(stack)
                if expected and name != expected:
                    errors.append(f"type mismatch: unexpected type name {_quote(name)}, expected {_quote(expected)}, "
                                  f"which matches field name path from root Object type")
                out.append("{")
                stack.append(_Frame("struct", "", type_name=name, at_field=True))
                i, prev_significant = brace + 1, "{"
                continue
            word = m.group(0)
            top = stack[-1] if stack else None
            if top is not None and top.kind == "struct" and top.at_field:
                j = _skip_space(expression, m.end())
                if j < n and expression[j] == ":":
                    out.append(f'"{word}"' + expression[m.end():j + 1])
                    top.at_field, top.field = False, word
                    i, prev_significant = j + 1, ":"
                    continue
            out.append(word)
            i, prev_significant = m.end(), "ident"
            _leave_field_position(stack)
            continue
        if c in "{([":
            stack.append(_Frame(c, _expected(stack)))
        elif c in "})]" and stack:
            stack.pop()
        elif c == "," and stack and stack[-1].kind == "struct":
            stack[-1].at_field, stack[-1].field = True, ""
        out.append(c)
        i += 1
        prev_significant = c
    return Rewritten("".join(out), errors)


def _leave_field_position(stack: list[_Frame]) -> None:
    if stack and stack[-1].kind == "struct":
        stack[-1].at_field = False


def _expected(stack: list[_Frame]) -> str:
    """The type name a struct literal must have here: the enclosing struct's name and field
    (through lists, maps and parentheses), or "" outside any struct or in a JSONPatch."""
    for frame in reversed(stack):
        if frame.kind == "struct":
            if not frame.field or frame.type_name == "JSONPatch":
                return ""
            return f"{frame.type_name}.{frame.field}"
    return ""


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _chain(text: str, i: int) -> tuple[int, str]:
    """The dotted identifier chain starting at i: (its end, the name without spaces)."""
    parts = []
    while True:
        m = _IDENT.match(text, i)
        if not m:
            break
        parts.append(m.group(0))
        i = m.end()
        k = _skip_space(text, i)
        if k < len(text) and text[k] == "." and _IDENT.match(text, _skip_space(text, k + 1)):
            i = _skip_space(text, k + 1)
            continue
        break
    return i, ".".join(parts)


def _string_end(text: str, i: int) -> int:
    """The end of the CEL string literal at i (prefixes r/b, single, double, triple quotes)."""
    j = i
    raw = False
    while text[j] in "rRbB":
        raw = raw or text[j] in "rR"
        j += 1
    quote = text[j:j + 3] if text[j:j + 3] in ("'''", '"""') else text[j]
    j += len(quote)
    while j < len(text):
        if not raw and text[j] == "\\":
            j += 2
            continue
        if text.startswith(quote, j):
            return j + len(quote)
        j += 1
    return len(text)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def escape_key(k: str) -> str:
    """Upstream: jsonpatch.escapeKey (a JSON Pointer token: ~ -> ~0, / -> ~1)."""
    return k.replace("~", "~0").replace("/", "~1")
