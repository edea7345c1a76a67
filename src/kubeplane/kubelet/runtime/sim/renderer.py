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

import functools
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
    """Renders templates against an object with a fixed table of helper functions.

    A template is compiled once (text split into literals and holes, each hole's pipeline
    parsed into calls); rendering then only evaluates. Whatever does not parse raises its
    error when evaluation reaches it, in the order a parse-as-you-go renderer would.
    """

    def __init__(self, helpers: Mapping[str, Helper] | None = None) -> None:
        self.helpers = {**DEFAULT_HELPERS, **(helpers or {})}

    def render(self, template: str, obj: Any, extra: Mapping[str, Helper] | None = None) -> str:
        parts = _compile(template)
        if len(parts) == 1 and isinstance(parts[0], str):
            return parts[0]
        own = self.helpers
        if extra:
            def lookup(name: str) -> Helper | None:
                fn = extra.get(name)
                return fn if fn is not None or name in extra else own.get(name)
        else:
            lookup = own.get
        return "".join(p if isinstance(p, str) else to_text(p(obj, lookup)) for p in parts)


# A compiled hole: (obj, helper lookup) -> value.
_Eval = Callable[[Any, Callable[[str], "Helper | None"]], Any]


@functools.lru_cache(maxsize=256)
def _compile(template: str) -> tuple[str | _Eval, ...]:
    """The template as literal text and evaluators, in order."""
    parts: list[str | _Eval] = []
    pos = 0
    for m in _HOLE.finditer(template):
        if m.start() > pos:
            parts.append(template[pos:m.start()])
        parts.append(_compile_pipeline(m.group(1)))
        pos = m.end()
    if pos < len(template) or not parts:
        parts.append(template[pos:])
    return tuple(parts)


def _compile_pipeline(expr: str) -> _Eval:
    parts = [p.strip() for p in _split_pipes(expr)]
    first = _compile_term(parts[0])
    rest = [_compile_call(part) for part in parts[1:]]
    if not rest:
        return first

    def pipeline(obj: Any, lookup: Any) -> Any:
        value = first(obj, lookup)
        for call in rest:
            value = call(obj, lookup, value)
        return value
    return pipeline


def _compile_term(term: str) -> _Eval:
    if term.startswith((".", '"')) or term[:1].isdigit() or term[:1] == "-":
        arg = _compile_arg(term)
        return lambda obj, lookup: arg(obj)
    call = _compile_call(term)
    return lambda obj, lookup: call(obj, lookup)


def _raiser(e: Exception) -> Callable[..., Any]:
    def fail(*_: Any) -> Any:
        raise e.with_traceback(None)
    return fail


def _compile_call(text: str) -> Callable[..., Any]:
    """A helper call; a piped value comes as the last argument.

    Errors, in evaluation order: a malformed call, an unknown function, a malformed
    argument list, then each argument in turn.
    """
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:\((.*)\)|(.*))", text, re.DOTALL)
    if m is None:
        return _raiser(ExpressionError(f"bad template call {text!r}"))
    name, paren, bare = m.group(1), m.group(2), m.group(3)
    raw = paren if paren is not None else bare
    try:
        args = [_compile_arg(a) for a in _split_args(raw or "", paren is not None)]
    except ExpressionError as e:
        args = [_raiser(e)]

    def call(obj: Any, lookup: Callable[[str], Helper | None], *piped_value: Any) -> Any:
        fn = lookup(name)
        if fn is None:
            raise ExpressionError(f"unknown template function {name!r}")
        return fn(*[a(obj) for a in args], *piped_value)
    return call


def _compile_arg(arg: str) -> Callable[[Any], Any]:
    try:
        if arg.startswith("."):
            return Query.parse(arg).first
        value = json.loads(arg)
    except ValueError as e:                 # ExpressionError, or a bad JSON literal
        return _raiser(e)
    return lambda obj: value


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
