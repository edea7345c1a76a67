"""A small sandboxed template renderer for a stage's `next.statusTemplate`.

    r = Renderer({"Now": lambda: "2024-05-01T10:00:00Z"})
    r.render("startedAt: {{ Now | Quote }}\nimage: {{ .spec.image }}", obj)

kwok renders Go templates; we do not try to execute those. A template here is text with
`{{ expression }}` holes, and an expression is a pipeline:

    term ( "|" Func )*          term := .path | "string" | number | Func arg* | Func(arg, ...)

* `.path` is a jq-like path (expression.Query) into the object; its first value is used.
* `Func` names a helper from the table given to the renderer (kwok's names: Now, NodeIP,
  PodIP, NodeName, Quote, ...). There is nothing else: no attribute access, no Python,
  no loops, so a stage file cannot run code. As in Go templates, a piped value becomes
  the last argument: `{{ .x | Quote }}` is `Quote .x`.

Values print the way YAML reads them back: strings as is, None as `null`, booleans
lower-case, lists and maps as JSON (valid YAML flow style). The caller parses the result
as YAML; write `{{ X | Quote }}` where a value could be mistaken for another type.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from .expression import ExpressionError, Query

_HOLE = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
_ARG = re.compile(r'\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|\.[^\s,()|]*|[A-Za-z_]\w*)\s*')

Helper = Callable[..., Any]


def quote(v: Any) -> str:
    """kwok's Quote: a double-quoted (JSON) string of v."""
    return json.dumps(v if isinstance(v, str) else to_text(v))


def to_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v is None or isinstance(v, (bool, dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


DEFAULT_HELPERS: dict[str, Helper] = {"Quote": quote}


class Renderer:
    """Renders templates against an object with a fixed table of helper functions."""

    def __init__(self, helpers: Mapping[str, Helper] | None = None) -> None:
        self.helpers = {**DEFAULT_HELPERS, **(helpers or {})}

    def render(self, template: str, obj: Any, extra: Mapping[str, Helper] | None = None) -> str:
        helpers = {**self.helpers, **(extra or {})}
        return _HOLE.sub(lambda m: to_text(self._pipeline(m.group(1), obj, helpers)), template)

    def _pipeline(self, expr: str, obj: Any, helpers: Mapping[str, Helper]) -> Any:
        parts = [p.strip() for p in _split_pipes(expr)]
        value = self._term(parts[0], obj, helpers)
        for part in parts[1:]:
            value = self._call(part, obj, helpers, piped=(value,))
        return value

    def _term(self, term: str, obj: Any, helpers: Mapping[str, Helper]) -> Any:
        if term.startswith((".", '"')) or term[:1].isdigit() or term[:1] == "-":
            return self._arg(term, obj)
        return self._call(term, obj, helpers)

    def _call(self, text: str, obj: Any, helpers: Mapping[str, Helper], piped: tuple[Any, ...] = ()) -> Any:
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:\((.*)\)|(.*))", text, re.DOTALL)
        if m is None:
            raise ExpressionError(f"bad template call {text!r}")
        name, paren, bare = m.group(1), m.group(2), m.group(3)
        fn = helpers.get(name)
        if fn is None:
            raise ExpressionError(f"unknown template function {name!r}")
        raw = paren if paren is not None else bare
        args = [self._arg(a, obj) for a in _split_args(raw or "", paren is not None)]
        return fn(*args, *piped)

    def _arg(self, arg: str, obj: Any) -> Any:
        if arg.startswith("."):
            values = Query.parse(arg).execute(obj)
            return values[0] if values else None
        return json.loads(arg)


def _split_pipes(expr: str) -> list[str]:
    """Split on | outside string literals."""
    out, buf, in_str, esc = [], [], False, False
    for ch in expr:
        if in_str:
            esc = ch == "\\" and not esc
            in_str = not (ch == '"' and not esc)
        elif ch == '"':
            in_str = True
        elif ch == "|":
            out.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    out.append("".join(buf))
    return out


def _split_args(raw: str, comma: bool) -> list[str]:
    raw = raw.strip()
    if not raw:
        return []
    args, pos = [], 0
    while pos < len(raw):
        m = _ARG.match(raw, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(f"bad template argument list {raw!r}")
        args.append(m.group(1))
        pos = m.end()
        if comma and pos < len(raw):
            if raw[pos] != ",":
                raise ExpressionError(f"expected ',' in {raw!r}")
            pos += 1
    return args
