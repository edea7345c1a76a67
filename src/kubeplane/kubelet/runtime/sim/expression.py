"""Selectors over object paths: kwok's matchExpressions on jq-like paths.

    q = Query.parse('.status.conditions[] | select(.type == "Ready") | .status')
    q.execute(pod)                                    # -> ["True"]
    Requirement(".status.phase", "In", ("Running",)).matches(pod)

A stage's selector names fields with a small subset of jq (kwok evaluates full jq with
gojq; we accept the part its shipped stages use):

* `.a.b`, `.a["dotted.key"]`, `."quoted"`  — object fields (null when absent),
* `.a[]` / `.a.[]`                          — every element of a list (or value of a map),
* `.a[0]`                                   — one list element,
* `f | g`                                   — feed every result of f into g,
* `select(<path> == <literal>)`, `!=`       — keep the input when the comparison holds.

A query yields a stream of values as jq does. Iterating null yields nothing (jq would
error; for a selector "no values" is the useful answer).

Operators, as kwok's (pkg/utils/expression, Requirement.Matches):
* In: some yielded value, as a string, is in values;
* NotIn: no yielded value is in values (so an absent field is NotIn anything);
* Exists: some yielded value is not null;  DoesNotExist: none is.
Values compare as strings the way jq prints scalars: true/false, 1, 1.5, text as is.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<ident>[A-Za-z_$][\w$-]*)
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<number>-?\d+(?:\.\d+)?)
    | (?P<op>==|!=|\[\]|[.\[\]|()])
    )""", re.VERBOSE)


class ExpressionError(ValueError):
    """A path expression that cannot be parsed."""


def _tokenize(src: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(f"unexpected {src[pos:]!r} in {src!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


# A compiled query is a list of pipeline stages; each stage is a list of steps.
# Steps: ("field", name) | ("index", n) | ("iter",) | ("select", path, op, literal)


@dataclass(frozen=True)
class Query:
    source: str
    stages: tuple[tuple[tuple[Any, ...], ...], ...]
    # The field names when the query is a plain path of fields (".status.state"), which
    # yields exactly one value; such queries (every shipped selector's) skip the step engine.
    fields: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.stages) == 1 and all(step[0] == "field" for step in self.stages[0]):
            object.__setattr__(self, "fields", tuple(step[1] for step in self.stages[0]))

    @classmethod
    def parse(cls, source: str) -> Query:
        return _parse_cached(source)

    def execute(self, obj: Any) -> list[Any]:
        """Every value the query yields for obj (jq's output stream)."""
        if self.fields is not None:
            return [self.first(obj)]
        values = [obj]
        for stage in self.stages:
            values = [v for inp in values for v in _run_steps(stage, inp)]
        return values

    def first(self, obj: Any) -> Any:
        """The first value yielded (None when there is none)."""
        if self.fields is None:
            values = self.execute(obj)
            return values[0] if values else None
        for name in self.fields:
            obj = obj.get(name) if isinstance(obj, dict) else None
        return obj


@functools.lru_cache(maxsize=1024)
def _parse_cached(source: str) -> Query:
    """Queries are immutable: each distinct source is parsed once (templates name paths per render)."""
    return Query(source, _Parser(_tokenize(source), source).pipeline())


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], source: str) -> None:
        self.t, self.i, self.source = tokens, 0, source

    def _peek(self) -> tuple[str, str] | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def _next(self) -> tuple[str, str]:
        tok = self._peek()
        if tok is None:
            raise ExpressionError(f"unexpected end of {self.source!r}")
        self.i += 1
        return tok

    def _expect(self, value: str) -> None:
        if self._next()[1] != value:
            raise ExpressionError(f"expected {value!r} in {self.source!r}")

    def pipeline(self) -> tuple[tuple[tuple[Any, ...], ...], ...]:
        stages = [self.stage()]
        while self._peek() == ("op", "|"):
            self._next()
            stages.append(self.stage())
        if self._peek() is not None:
            raise ExpressionError(f"trailing {self._peek()[1]!r} in {self.source!r}")
        return tuple(stages)

    def stage(self) -> tuple[tuple[Any, ...], ...]:
        if self._peek() == ("ident", "select"):
            self._next()
            self._expect("(")
            path = self.path()
            op = self._next()[1]
            if op not in ("==", "!="):
                raise ExpressionError(f"select supports == and != only: {self.source!r}")
            literal = self.literal()
            self._expect(")")
            return (("select", path, op, literal),)
        return self.path()

    def path(self) -> tuple[tuple[Any, ...], ...]:
        steps: list[tuple[Any, ...]] = []
        if self._peek() != ("op", "."):
            raise ExpressionError(f"a path starts with '.': {self.source!r}")
        while (tok := self._peek()) is not None and tok[1] in (".", "[", "[]"):
            self._next()
            if tok[1] == "[]":
                steps.append(("iter",))
            elif tok[1] == "[":
                steps.append(self._bracket())
            else:
                nxt = self._peek()
                if nxt is not None and nxt[0] in ("ident", "string"):
                    self._next()
                    steps.append(("field", nxt[1] if nxt[0] == "ident" else json.loads(nxt[1])))
        return tuple(steps)

    def _bracket(self) -> tuple[Any, ...]:
        kind, value = self._next()
        self._expect("]")
        if kind == "string":
            return ("field", json.loads(value))
        if kind == "number":
            return ("index", int(value))
        raise ExpressionError(f"bad subscript {value!r} in {self.source!r}")

    def literal(self) -> Any:
        kind, value = self._next()
        if kind in ("string", "number"):
            return json.loads(value)
        if kind == "ident" and value in ("true", "false", "null"):
            return json.loads(value)
        raise ExpressionError(f"bad literal {value!r} in {self.source!r}")


def _run_steps(steps: tuple[tuple[Any, ...], ...], value: Any) -> Iterator[Any]:
    values = [value]
    for step in steps:
        values = [out for v in values for out in _step(step, v)]
    return iter(values)


def _step(step: tuple[Any, ...], v: Any) -> Iterator[Any]:
    kind = step[0]
    if kind == "field":
        yield v.get(step[1]) if isinstance(v, dict) else None
    elif kind == "index":
        yield v[step[1]] if isinstance(v, list) and -len(v) <= step[1] < len(v) else None
    elif kind == "iter":
        if isinstance(v, list):
            yield from v
        elif isinstance(v, dict):
            yield from v.values()
    else:                                   # select
        _, path, op, literal = step
        hits = list(_run_steps(path, v))
        equal = any(h == literal for h in hits)
        if equal == (op == "=="):
            yield v


def jq_string(v: Any) -> str:
    """A scalar as jq prints it raw: strings as is, true/false, integers without '.0'."""
    if isinstance(v, str):
        return v
    if v is True:                   # json.dumps' spelling, without its encoder (a stage's
        return "true"               # `.status.phase`-style requirement meets these per pod)
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list)) else str(v)


@dataclass(frozen=True)
class Requirement:
    """One matchExpressions entry: key (a path), operator, values.

    Upstream: kwok pkg/apis/internalversion SelectorRequirement + pkg/utils/expression
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()
    query: Query = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise ExpressionError(f"unsupported operator {self.operator!r}; want one of {OPERATORS}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise ExpressionError(f"{self.operator} needs values: {self.key!r}")
        object.__setattr__(self, "query", Query.parse(self.key))

    def matches(self, obj: Any) -> bool:
        if self.query.fields is not None:             # one value: no list to build
            v = self.query.first(obj)
            if self.operator == "Exists":
                return v is not None
            if self.operator == "DoesNotExist":
                return v is None
            hit = v is not None and jq_string(v) in self.values
            return hit if self.operator == "In" else not hit
        found = [v for v in self.query.execute(obj) if v is not None]
        if self.operator == "Exists":
            return bool(found)
        if self.operator == "DoesNotExist":
            return not found
        hit = any(jq_string(v) in self.values for v in found)
        return hit if self.operator == "In" else not hit


@dataclass(frozen=True)
class Selector:
    """kwok's StageSelector: every label, annotation and expression must match (AND)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_annotations: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Selector:
        d = d or {}
        exprs = tuple(Requirement(e["key"], e["operator"], tuple(str(v) for v in e.get("values") or ()))
                      for e in d.get("matchExpressions") or ())
        return cls(tuple(sorted((d.get("matchLabels") or {}).items())),
                   tuple(sorted((d.get("matchAnnotations") or {}).items())), exprs)

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.match_labels or self.match_annotations:
            meta = obj.get("metadata") or {}
            labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
            if not (all(labels.get(k) == v for k, v in self.match_labels)
                    and all(annotations.get(k) == v for k, v in self.match_annotations)):
                return False
        for r in self.match_expressions:
            if not r.matches(obj):
                return False
        return True
