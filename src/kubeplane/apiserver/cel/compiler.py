"""Compile once, evaluate many: Kubernetes' CEL environment over cel-expr-python.

Upstream: k8s.io/apiserver/pkg/admission/plugin/cel (compile.go CompileCELExpression,
activation.go Evaluate) and pkg/cel/environment (the base environment: the strings, optional
and bindings extensions plus Kubernetes' libraries). One environment per set of declared
variables (`Env` below, built once and cached); `Env.compile(expression, return_types)` gives a
`CompilationResult` (the program, or upstream's compile error text), cached per environment and
expression, so a policy change or a second binding re-uses the work. `evaluate` runs a program
against plain JSON-like values and gives an `EvaluationResult` (the value, or upstream's error).

Bounds: the expression's size (upstream's 100,000 code points), its nesting (the C++ parser
refuses more than 32 levels), and upstream's per-call cost limit (celconfig.PerCallLimit,
1,000,000), which the C++ runtime cannot track. Each evaluation's cost (EvaluationResult.cost,
charged to a policy's RUNTIME_CEL_COST_BUDGET by its callers) is cel-go's estimate with unknown
sizes when that is bounded (an expression that traverses no input: computed once), else
cost.runtime_estimate over the actual values; over the limit, the expression is refused before
it runs, with upstream's `operation cancelled: actual cost limit exceeded`, as it is when it may
build more than the ~10 MB the limit would pay for, or when the runtime's own iteration budget
(10,000 comprehension iterations per evaluation, not settable from Python) runs out first.
CRD x-kubernetes-validations (issue 13) declare `self`/`oldSelf` through the same Env, and
CompilationResult.estimated_cost gives cel-go's estimate for their compile-time budget.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson
from cel_expr_python import cel  # type: ignore[import-untyped]
from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings  # type: ignore[import-untyped]

from . import cost, library

# Upstream: celconfig (staging/src/k8s.io/apiserver/pkg/apis/cel/config.go)
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
MAX_EXPRESSION_SIZE = 100_000           # cel-go's default parser expression size limit in Kubernetes
MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES = 5 * 1024
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
# An optional value as an expression's result (or inside it): cel-expr-python cannot convert it.
UNSUPPORTED_RESULT = "an optional value cannot be the result of the expression here (use .orValue())"
# Building a string costs 0.1 per byte in cel-go (StringTraversalCostFactor): the per-call limit
# is spent on ~10 MB; an expression that may build more is refused before it runs.
MAX_BUILT_SIZE = int(PER_CALL_LIMIT / cost.STRING_TRAVERSAL_COST_FACTOR)

BOOL = "bool"
STRING = "string"
ANY = "any"

_TYPE_NAMES = {"BOOL": "bool", "STRING": "string", "INT": "int", "UINT": "uint", "DOUBLE": "double",
               "BYTES": "bytes", "NULL": "null_type", "DYN": "dyn", "LIST": "list", "MAP": "map",
               "TIMESTAMP": "google.protobuf.Timestamp", "DURATION": "google.protobuf.Duration",
               "TYPE": "type"}


class Env:
    """A CEL environment with Kubernetes' libraries and the given variables (all `dyn`)."""

    def __init__(self, variables: Iterable[str], types: Mapping[str, Any] | None = None,
                 descriptor_pool: Any = None, extensions: Iterable[Any] = (), homogeneous_literals: bool = False) -> None:
        self.variables = tuple(sorted(variables))
        declared = types or {}               # a variable's cel.Type (CRD rules' `self`), else dyn
        # descriptor_pool: the protobuf messages a CRD rule's object types are declared as
        # (celvalidation/typedenv.py); the engine aborts the process on one without protobuf
        self._env = cel.NewEnv(
            descriptor_pool=descriptor_pool,
            variables={v: declared.get(v, cel.Type.DYN) for v in self.variables},
            extensions=[*_base_extensions(), *extensions])
        self._cache: dict[tuple[str, tuple[str, ...]], CompilationResult] = {}
        # cel-go's ValidateHomogeneousAggregateLiterals: on for CRD rules; off for admission
        # policies, whose JSONPatch{...}/Object{...} literals are rewritten into maps of mixed
        # values here (mutation.py)
        self.homogeneous_literals = homogeneous_literals

    def compile(self, expression: str, return_types: tuple[str, ...] = (BOOL,),
                checked: bool = True) -> CompilationResult:
        """Upstream: CompileCELExpression — compile errors as upstream words them. checked=False:
        an expression another environment has type-checked (a CRD rule against its schema's
        types), planned without the checker here (its operands are dyn here)."""
        key = (expression, return_types) if checked else (expression, ("unchecked", *return_types))
        res = self._cache.get(key)
        if res is None:
            res = self._compile(expression, return_types, checked)
            if len(self._cache) > 4096:        # policies come and go: bounded, not an LRU
                self._cache.clear()
            self._cache[key] = res
        return res

    def _compile(self, expression: str, return_types: tuple[str, ...], check: bool = True) -> CompilationResult:
        size = len(expression)
        if size > MAX_EXPRESSION_SIZE:
            return CompilationResult(expression, None, f"compilation failed: ERROR: <input>:-1:0: expression code point "
                                                      f"size exceeds limit: size: {size}, limit {MAX_EXPRESSION_SIZE}")
        checked = check
        try:
            program = self._env.compile(expression, disable_check=not check)
        except RuntimeError as e:
            message = str(e)
            if "no matching overload for '_?_:_'" not in message:
                return CompilationResult(expression, None, "compilation failed: " + _issues(message))
            # cel-go unifies `c ? 'x' : null` (upstream's documented auditAnnotation idiom) to a
            # string; the C++ checker refuses it: check such an expression at runtime instead.
            program = self._env.compile(expression, disable_check=True)
            checked = False
        serialized = program.serialize()
        ast = cost.checked_ast(serialized)
        if checked:
            bad = literal_issues(expression, ast, serialized, self.homogeneous_literals)
            if bad:
                return CompilationResult(expression, None, "compilation failed: " + bad)
        got = type_name(program.return_type())
        if ANY not in return_types and got not in return_types and got != "dyn":
            want = return_types[0] if len(return_types) == 1 else "[" + " ".join(return_types) + "]"
            verb = "must evaluate to" if len(return_types) == 1 else "must evaluate to one of"
            return CompilationResult(expression, None, f"{verb} {want} but got {got}")
        unsafe = cost.passes_optional(ast, library.PYTHON_FUNCTIONS,
                                      cost.optional_typed(serialized) if checked else None)
        if unsafe is not None:
            return CompilationResult(expression, None, "compilation failed: " + _located(
                expression, cost.positions(serialized).get(unsafe.id, 0),
                f"an optional value cannot be passed to '{unsafe.name}' here (use .orValue() or .value())"))
        return CompilationResult(expression, program, "", got, ast, cost.grows(ast), cost.estimate(ast, {}).cost)

    def checked(self, expression: str) -> bytes | None:
        """The serialized checked expression (its AST and source positions: typechecking.py),
        None if it does not compile."""
        try:
            return bytes(self._env.compile(expression).serialize())
        except RuntimeError:
            return None

    def activation(self, data: Mapping[str, Any]) -> Activation:
        """The variables of one evaluation, converted once for every expression of a request."""
        return Activation(self._env.Activation(dict(data)), data)


class Activation:
    """A converted activation and its data's size (measured only if an expression that can
    build values asks: the bound of what it may build, see cost.py)."""
    __slots__ = ("native", "data", "_size")

    def __init__(self, native: Any, data: Mapping[str, Any]) -> None:
        self.native = native
        self.data = data
        self._size = -1

    @property
    def size(self) -> int:
        if self._size < 0:
            # default=str: CRD rules' values hold bytes and durations (issue 13)
            self._size = sum(len(orjson.dumps(v, default=str)) for v in self.data.values()
                             if isinstance(v, (dict, list, str)))
        return self._size


@functools.lru_cache(maxsize=1)
def _base_extensions() -> tuple[Any, ...]:
    """The base environment's extensions, built once (~1 ms) and shared by every environment
    (an extension is a declaration the engine copies into each environment it builds)."""
    return (ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_bindings.ExtBindings(), ext_math.ExtMath(),
            library.extension())


@functools.lru_cache(maxsize=None)
def env(*variables: str) -> Env:
    """The shared environment for these variables (built once: ~1 ms)."""
    return Env(variables)


# Upstream: the base environment's cel.ASTValidators (pkg/cel/environment/base.go:
# ValidateDurationLiterals, ValidateTimestampLiterals, ValidateRegexLiterals): a call with a
# literal argument that cannot be valid is a compile error. Each literal is checked by running
# the call itself.
_LITERAL_CHECKS = {"duration": "duration(x)", "timestamp": "timestamp(x)", "matches": "''.matches(x)"}


@functools.lru_cache(maxsize=1)
def _literal_programs() -> dict[str, Any]:
    e = cel.NewEnv(variables={"x": cel.Type.STRING, "i": cel.Type.INT}, extensions=[])
    programs = {name: e.compile(text) for name, text in _LITERAL_CHECKS.items()}
    programs["timestamp_int"] = e.compile("timestamp(i)")
    return programs


@functools.lru_cache(maxsize=1024)
def _literal_ok(function: str, literal: str) -> bool:
    programs = _literal_programs()
    try:
        data = {"i": int(literal)} if function == "timestamp_int" else {"x": literal}
        value = programs[function].eval(data=data)
        return bool(value.type() != cel.Type.ERROR)
    except RuntimeError:
        return False


def literal_issues(expression: str, ast: cost.Node, serialized: bytes, homogeneous: bool = True) -> str:
    """cel-go's issues of the base environment's AST validators: `invalid <function>
    argument`, and (ValidateHomogeneousAggregateLiterals) `expected type 'int' but found
    'string'` for a list or map literal mixing types, except as an argument of format()."""
    found: list[tuple[int, str]] = []      # (expression id, message)
    types: dict[int, str] | None = None
    stack: list[tuple[cost.Node, bool]] = [(ast, False)]
    while stack:
        node, exempt = stack.pop()
        member_format = node.kind == "call" and node.name == "format"
        stack.extend((a, member_format) for a in node.args)
        stack.extend((c, False) for c in node.comp.values())
        if homogeneous and node.kind in ("list", "struct") and node.args and not exempt:
            if types is None:
                types = cost.type_map(serialized)
            mixed = _mixed(node, types)
            if mixed is not None:
                found.append(mixed)
        if node.kind != "call" or node.name not in _LITERAL_CHECKS:
            continue
        args = node.args[1:] if node.member else node.args   # cel-go: the first argument after the target
        if not args or args[0].kind != "const" or args[0].value[0] not in ("string", "int"):
            continue
        kind, raw = args[0].value
        if kind == "int":
            if node.name != "timestamp" or _literal_ok("timestamp_int", str(cost.int64(raw))):
                continue
        elif _literal_ok(node.name, raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)):
            continue
        found.append((args[0].id, f"invalid {node.name} argument"))
    if not found:
        return ""
    where = cost.positions(serialized)
    return "\n".join(_located(expression, at, msg) for at, msg in sorted((where.get(i, 0), m) for i, m in found))


def _mixed(node: cost.Node, types: dict[int, str]) -> tuple[int, str] | None:
    """The first element (list) or key or value (map) whose type differs from the first's."""
    groups = [node.args] if node.kind == "list" else [node.args[0::2], node.args[1::2]]
    for group in groups:
        first = None
        for e in group:
            t = types.get(e.id)
            if t is None:
                continue
            if first is None:
                first = t
            elif t != first and "dyn" not in t and "dyn" not in first:
                # (a dyn element passes: here it may stand for a type protobuf could not declare,
                # a list nested in a CRD schema's list)
                return e.id, f"expected type '{first}' but found '{t}'"
    return None


def type_name(t: Any) -> str:
    name = t.name()
    return _TYPE_NAMES.get(name.upper(), name.lower()) if "<" not in name else name.lower()


def _located(expression: str, offset: int, message: str) -> str:
    """cel-go's issue text for a message at an offset: `ERROR: <input>:line:col: ...` and a caret."""
    line_start = expression.rfind("\n", 0, offset) + 1
    line_end = expression.find("\n", offset)
    text = expression[line_start:line_end if line_end >= 0 else len(expression)]
    col = offset - line_start
    return (f"ERROR: <input>:{expression.count(chr(10), 0, offset) + 1}:{col + 1}: {message}\n"
            f" | {text}\n | {'.' * col}^")


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
    ast: cost.Node | None = None
    grows: bool = False          # it can build strings or lists larger than its inputs
    static_cost: int = 0         # cel-go's estimate with every input's size unknown
    _bounds: dict[int, tuple[int, int]] = field(default_factory=dict)

    def estimated_cost(self, sizes: Mapping[str, int], decls: Mapping[str, Any] | None = None) -> int:
        """cel-go's estimated cost with each variable's size bound, or its declared type (issue
        13: a CRD rule's `estimated rule cost exceeds budget`); cost.UNBOUNDED when a size is
        unknown."""
        return cost.estimate(self.ast, dict(sizes), None, dict(decls or {})).cost if self.ast is not None else 0

    def runtime_cost(self, activation: Activation) -> Cost:
        """What evaluating against activation costs, cheapest first: the static estimate when
        bounded (no input traversed); else the estimate with every input as large as the whole
        activation (cached per power of two of its size), when that is within the limits; else
        the walk over the actual values (cost.runtime_estimate)."""
        if self.static_cost <= PER_CALL_LIMIT or self.ast is None:
            return Cost(self.static_cost)
        spent, built = self._bound(activation.size)
        if spent <= PER_CALL_LIMIT and not (self.grows and built > MAX_BUILT_SIZE):
            return Cost(spent, refine=lambda: self._walk(activation)[0])
        spent, built = self._walk(activation)
        return Cost(spent, self.grows and built > MAX_BUILT_SIZE)

    def _bound(self, size: int) -> tuple[int, int]:
        bucket = max(size, 1).bit_length()
        got = self._bounds.get(bucket)
        if got is None and self.ast is not None:
            if len(self._bounds) > 64:
                self._bounds.clear()
            got = self._bounds[bucket] = cost.bounded(self.ast, 1 << bucket)
        return got or (0, 0)

    def _walk(self, activation: Activation) -> tuple[int, int]:
        assert self.ast is not None
        return cost.runtime_estimate(self.ast, dict(activation.data), activation.size)


@dataclass(slots=True)
class Cost:
    """An evaluation's cost: `spent` (exact, or an upper bound that `refine` makes exact when a
    budget needs it) and whether it may build more than MAX_BUILT_SIZE."""
    spent: int
    too_big: bool = False
    refine: Callable[[], int] | None = None


@dataclass(slots=True)
class EvaluationResult:
    value: Any = None
    error: str = ""              # `expression '...' resulted in error: ...` or a compile error
    cost_exceeded: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    cost: int = 0                # what it charged to the runtime budget (see runtime_cost)
    refine: Callable[[], int] | None = None   # the exact cost, when `cost` is a bound


# Upstream: the Detail of cel.ErrOutOfBudget's error (admission/plugin/cel/activation.go).
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


class Budget:
    """A runtime cost budget spent by successive evaluations (upstream's remainingBudget,
    celconfig.RuntimeCELCostBudget for a policy's validations). Evaluations may charge a
    bound of their cost (cheap to know); once the bounds would overspend the budget, they are
    made exact (their `refine`) before deciding."""
    __slots__ = ("remaining", "_bounds")

    def __init__(self, total: int = RUNTIME_CEL_COST_BUDGET) -> None:
        self.remaining = total
        self._bounds: list[tuple[int, Callable[[], int]]] = []

    def charge(self, spent: int, refine: Callable[[], int] | None = None) -> bool:
        """Spend; False once the budget is overspent (upstream's ErrOutOfBudget)."""
        self.remaining -= spent
        if refine is not None:
            self._bounds.append((spent, refine))
        if self.remaining < 0 and self._bounds:
            for bound, exact in self._bounds:
                self.remaining += bound - exact()
            self._bounds.clear()
        return self.remaining >= 0


_STATUS_PREFIXES = ("INVALID_ARGUMENT: ", "UNKNOWN: ", "NOT_FOUND: ", "OUT_OF_RANGE: ", "INTERNAL: ",
                    "FAILED_PRECONDITION: ", "UNIMPLEMENTED: ", "CANCELLED: ")


_INDEX_ERROR = re.compile(r"Index error: index=(-?\d+) size=\d+")


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
    m = _INDEX_ERROR.match(message)
    if m is not None:
        return f"index out of bounds: {m.group(1)}"
    if message.startswith("Iteration budget exceeded"):
        return COST_LIMIT_EXCEEDED
    if message.startswith("Applying SELECT to non-message type"):
        return "no such overload"
    return message


def evaluate(result: CompilationResult, activation: Activation) -> EvaluationResult:
    """Upstream: evaluationActivation.Evaluate — a compile error, a runtime error, or the value."""
    if result.program is None:
        return EvaluationResult(error=f"compilation error: {result.error}")
    c = result.runtime_cost(activation)
    spent = c.spent
    if c.too_big or spent > PER_CALL_LIMIT:
        return EvaluationResult(error=f"expression '{result.expression}' resulted in error: {COST_LIMIT_EXCEEDED}",
                                cost_exceeded=True, cost=spent)
    try:
        value = result.program.eval(activation.native)
    except RuntimeError as e:                    # the iteration budget, and other aborts
        msg = _runtime_message(str(e))
        return EvaluationResult(error=f"expression '{result.expression}' resulted in error: {msg}",
                                cost_exceeded=msg == COST_LIMIT_EXCEEDED, cost=spent)
    try:
        if value.type() == cel.Type.ERROR:
            msg = _runtime_message(str(value.value()))
            return EvaluationResult(error=f"expression '{result.expression}' resulted in error: {msg}",
                                    cost_exceeded=msg == COST_LIMIT_EXCEEDED, cost=spent)
        return EvaluationResult(value=_plain(value), cost=spent, refine=c.refine)
    except TypeError:
        # a value the binding cannot hand to Python (an optional, at any depth: it types them
        # as errors and cannot convert them)
        return EvaluationResult(error=f"expression '{result.expression}' resulted in error: {UNSUPPORTED_RESULT}",
                                cost=spent)


def _plain(value: Any) -> Any:
    """The value as plain Python. Lists and maps are walked here, not by the binding's
    plain_value(), which crashes the process on an optional inside them; an optional (which the
    binding types as an error) raises TypeError."""
    t = value.type()
    if t == cel.Type.NULL:
        return None
    if t == cel.Type.ERROR:
        raise TypeError("an optional value")
    name = t.name()
    if name.startswith("LIST"):
        return [_plain(x) for x in value.value()]
    if name.startswith("MAP"):
        return {k: _plain(x) for k, x in value.value().items()}
    return value.plain_value()


@contextmanager
def authorizer(authz: Any, user: Any) -> Iterator[None]:
    """Make `authorizer.check()` ask authz for user while the block runs."""
    token = library.CURRENT_AUTHORIZER.set((authz, user) if authz is not None else None)
    try:
        yield
    finally:
        library.CURRENT_AUTHORIZER.reset(token)
