"""Compile once, evaluate many: Kubernetes' CEL environment over cel-expr-python.

Upstream: k8s.io/apiserver/pkg/admission/plugin/cel (compile.go CompileCELExpression,
activation.go Evaluate) and pkg/cel/environment (the base environment: the strings, optional
and bindings extensions plus Kubernetes' libraries). One environment per set of declared
variables (`Env` below, built once and cached); `Env.compile(expression, return_types)` gives a
`CompilationResult` (the program, or upstream's compile error text), cached per environment and
expression, so a policy change or a second binding re-uses the work. `evaluate` runs a program
against plain JSON-like values and gives an `EvaluationResult` (the value, or upstream's error).

Bounds: the expression's size (upstream's 100,000 code points), its nesting (the C++ parser
refuses more than 32 levels), and the runtime's iteration budget stand for upstream's
per-call cost limit (celconfig.PerCallLimit, 1,000,000): an expression that exceeds it fails
with upstream's `operation cancelled: actual cost limit exceeded`. CRD x-kubernetes-validations
(issue 13) declare `self`/`oldSelf` through the same Env.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from cel_expr_python import cel  # type: ignore[import-untyped]
from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings  # type: ignore[import-untyped]

from . import library

# Upstream: celconfig (staging/src/k8s.io/apiserver/pkg/apis/cel/config.go)
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
MAX_EXPRESSION_SIZE = 100_000           # cel-go's default parser expression size limit in Kubernetes
MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES = 5 * 1024
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

BOOL = "bool"
STRING = "string"
ANY = "any"

_TYPE_NAMES = {"BOOL": "bool", "STRING": "string", "INT": "int", "UINT": "uint", "DOUBLE": "double",
               "BYTES": "bytes", "NULL": "null_type", "DYN": "dyn", "LIST": "list", "MAP": "map",
               "TIMESTAMP": "google.protobuf.Timestamp", "DURATION": "google.protobuf.Duration",
               "TYPE": "type"}


class Env:
    """A CEL environment with Kubernetes' libraries and the given variables (all `dyn`)."""

    def __init__(self, variables: Iterable[str]) -> None:
        self.variables = tuple(sorted(variables))
        self._env = cel.NewEnv(
            variables={v: cel.Type.DYN for v in self.variables},
            extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_bindings.ExtBindings(),
                        ext_math.ExtMath(), library.extension()])
        self._cache: dict[tuple[str, tuple[str, ...]], CompilationResult] = {}

    def compile(self, expression: str, return_types: tuple[str, ...] = (BOOL,)) -> CompilationResult:
        """Upstream: CompileCELExpression — compile errors as upstream words them."""
        key = (expression, return_types)
        res = self._cache.get(key)
        if res is None:
            res = self._compile(expression, return_types)
            if len(self._cache) > 4096:        # policies come and go: bounded, not an LRU
                self._cache.clear()
            self._cache[key] = res
        return res

    def _compile(self, expression: str, return_types: tuple[str, ...]) -> CompilationResult:
        size = len(expression)
        if size > MAX_EXPRESSION_SIZE:
            return CompilationResult(expression, None, f"compilation failed: ERROR: <input>:-1:0: expression code point "
                                                      f"size exceeds limit: size: {size}, limit {MAX_EXPRESSION_SIZE}")
        try:
            program = self._env.compile(expression)
        except RuntimeError as e:
            message = str(e)
            if "no matching overload for '_?_:_'" not in message:
                return CompilationResult(expression, None, "compilation failed: " + _issues(message))
            # cel-go unifies `c ? 'x' : null` (upstream's documented auditAnnotation idiom) to a
            # string; the C++ checker refuses it: check such an expression at runtime instead.
            program = self._env.compile(expression, disable_check=True)
        got = type_name(program.return_type())
        if ANY not in return_types and got not in return_types and got != "dyn":
            want = return_types[0] if len(return_types) == 1 else "[" + " ".join(return_types) + "]"
            verb = "must evaluate to" if len(return_types) == 1 else "must evaluate to one of"
            return CompilationResult(expression, None, f"{verb} {want} but got {got}")
        return CompilationResult(expression, program, "", got)

    def activation(self, data: Mapping[str, Any]) -> Any:
        """The variables of one evaluation, converted once for every expression of a request."""
        return self._env.Activation(dict(data))


@functools.lru_cache(maxsize=None)
def env(*variables: str) -> Env:
    """The shared environment for these variables (built once: ~1 ms)."""
    return Env(variables)


def type_name(t: Any) -> str:
    name = t.name()
    return _TYPE_NAMES.get(name.upper(), name.lower()) if "<" not in name else name.lower()


def _issues(message: str) -> str:
    """`INVALID_ARGUMENT: ERROR: <input>:1:4: ... [INVALID_ARGUMENT]` -> cel-go's issues text."""
    for prefix in ("INVALID_ARGUMENT: ", "CANCELLED: ", "INTERNAL: ", "UNKNOWN: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    for suffix in (" [INVALID_ARGUMENT]", " [CANCELLED]", " [INTERNAL]", " [UNKNOWN]"):
        if message.endswith(suffix):
            message = message[: -len(suffix)]
    if message.startswith("Expression recursion limit exceeded") or message.startswith("Exceeded max recursion"):
        return "ERROR: <input>:-1:0: max recursion depth exceeded"
    return _UNDECLARED.sub(_undeclared_root, message)


# `a.b.c` with no `a` declared: the C++ checker names the whole path at the last dot; cel-go
# names the root identifier where it starts (checker.go checkSelect -> checkIdent).
_UNDECLARED = re.compile(r"ERROR: <input>:(\d+):(\d+): undeclared reference to '([^'.]+)\.([^']+)' "
                         r"\(in container '([^']*)'\)\n \| ([^\n]*)\n \| \.*\^")


def _undeclared_root(m: re.Match[str]) -> str:
    line, col, root, rest, container, text = m.groups()
    # the caret is at the last dot: the path up to it is root + every segment but the last
    start = max(int(col) - len(root) - (len(rest) - len(rest.rsplit(".", 1)[-1])), 1)
    return (f"ERROR: <input>:{line}:{start}: undeclared reference to '{root}' (in container '{container}')\n"
            f" | {text}\n | {'.' * (start - 1)}^")


@dataclass(slots=True)
class CompilationResult:
    expression: str
    program: Any
    error: str = ""              # upstream's text; the program is None then
    output_type: str = ""


@dataclass(slots=True)
class EvaluationResult:
    value: Any = None
    error: str = ""              # `expression '...' resulted in error: ...` or a compile error
    cost_exceeded: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


_STATUS_PREFIXES = ("INVALID_ARGUMENT: ", "UNKNOWN: ", "NOT_FOUND: ", "OUT_OF_RANGE: ", "INTERNAL: ",
                    "FAILED_PRECONDITION: ", "UNIMPLEMENTED: ", "CANCELLED: ")


def _runtime_message(message: str) -> str:
    """The C++ runtime's error text in cel-go's words, where they differ."""
    for prefix in _STATUS_PREFIXES:
        if message.startswith(prefix):
            message = message[len(prefix):]
            break
    if message.endswith("]") and " [" in message:
        message = message[: message.rindex(" [")]
    if message.startswith("Key not found in map : "):
        return "no such key: " + message[len("Key not found in map : "):].strip('"')
    if message.startswith("No matching overloads found"):
        return "no such overload"
    if message.startswith("Iteration budget exceeded"):
        return COST_LIMIT_EXCEEDED
    if message.startswith("Applying SELECT to non-message type"):
        return "no such overload"
    return message


def evaluate(result: CompilationResult, activation: Any) -> EvaluationResult:
    """Upstream: evaluationActivation.Evaluate — a compile error, a runtime error, or the value."""
    if result.program is None:
        return EvaluationResult(error=f"compilation error: {result.error}")
    try:
        value = result.program.eval(activation)
    except RuntimeError as e:                    # the iteration budget, and other aborts
        msg = _runtime_message(str(e))
        return EvaluationResult(error=f"expression '{result.expression}' resulted in error: {msg}",
                                cost_exceeded=msg == COST_LIMIT_EXCEEDED)
    if value.type() == cel.Type.ERROR:
        msg = _runtime_message(str(value.value()))
        return EvaluationResult(error=f"expression '{result.expression}' resulted in error: {msg}",
                                cost_exceeded=msg == COST_LIMIT_EXCEEDED)
    return EvaluationResult(value=_plain(value))


def _plain(value: Any) -> Any:
    v = value.plain_value() if value.type() != cel.Type.NULL else None
    return v


@contextmanager
def authorizer(authz: Any, user: Any) -> Iterator[None]:
    """Make `authorizer.check()` ask authz for user while the block runs."""
    token = library.CURRENT_AUTHORIZER.set((authz, user) if authz is not None else None)
    try:
        yield
    finally:
        library.CURRENT_AUTHORIZER.reset(token)
